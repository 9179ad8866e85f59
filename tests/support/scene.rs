//! Scenes for UI tests: a `State` fed by real Claude stream-json lines through the pure
//! `Mapper`, its events and our keys through the reducer, with a fake clock (every event is
//! 250 ms after the previous one), plus the wire lines of one demo conversation.
//!
//! Include with `#[path = "support/scene.rs"] mod scene;` (or `mod support;` +
//! `support::scene`). Snapshot assertions stay in the test files: insta names a snapshot
//! after the module and file that call it.

#![allow(dead_code)]

use std::ops::Range;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use serde_json::{Value, json};
use switchboard::core::input::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use switchboard::backend::claude::mapping::Mapper;
use switchboard::backend::claude::session::reply_check;
use switchboard::core::msg::{BackendEvent, Effect};
use switchboard::core::state::Focus;
use switchboard::core::transcript::ItemKind;
use switchboard::core::{Msg, State, update};
use switchboard::ui::theme::Theme;

// ---------------------------------------------------------------------------------------------
// Scene: a state fed by real Claude lines.

/// A state under construction plus the mapper that feeds it, with a fake clock.
pub struct Scene {
    pub s: State,
    pub m: Mapper,
    pub t: u64,
    /// Every effect the reducer returned, in order (Send ones are also fed to the mapper).
    pub fx: Vec<Effect>,
    /// Every stdin line the mapper produced for our answers.
    pub sent: Vec<String>,
}

pub const T0: u64 = 1_000_000;

impl Scene {
    pub fn new() -> Scene {
        Scene::with_breaks(&[])
    }

    pub fn with_breaks(breaks: &[&str]) -> Scene {
        let breaks: Vec<String> = breaks.iter().map(|b| b.to_string()).collect();
        let mut s = State::new(switchboard::core::BackendKind::Claude, "main", T0);
        s.reply_check = reply_check;
        s.settings.bell = false;
        let mut m = Mapper::new(&breaks);
        // Registers our initialize request, so its reply (`init_reply`) is recognised.
        let _ = m.initialize_line();
        let mut sc = Scene {
            s,
            m,
            t: T0,
            fx: Vec::new(),
            sent: Vec::new(),
        };
        sc.event(BackendEvent::Started {
            program: "claude -p --verbose --output-format stream-json".into(),
            pid: Some(4242),
        });
        sc
    }

    pub fn event(&mut self, e: BackendEvent) {
        self.t += 250;
        let fx = update(
            &mut self.s,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: self.t,
                event: e,
            },
        );
        self.effects(fx);
    }

    /// Feed one stdout line of the agent through the mapper into the reducer.
    pub fn line(&mut self, v: Value) -> &mut Scene {
        self.raw(&v.to_string())
    }

    pub fn raw(&mut self, line: &str) -> &mut Scene {
        let out = self.m.on_line(line);
        self.sent.extend(out.replies);
        for e in out.events {
            self.event(e);
        }
        self
    }

    /// Perform effects like the app would, minus the process: commands go to the mapper.
    pub fn effects(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Send(_, cmd) = &e {
                let out = self.m.command(cmd);
                self.sent.extend(out.replies);
                for ev in out.events {
                    self.event(ev);
                }
            }
            self.fx.push(e);
        }
    }

    /// Apply a message; return only the effects it produced.
    pub fn msg(&mut self, msg: Msg) -> Vec<Effect> {
        let fx = update(&mut self.s, msg);
        let mine = fx.clone();
        self.effects(fx);
        mine
    }

    pub fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) -> &mut Scene {
        self.msg(Msg::Key(KeyEvent::new(code, mods)));
        self
    }

    pub fn key(&mut self, code: KeyCode) -> &mut Scene {
        self.key_mod(code, KeyModifiers::NONE)
    }

    /// One key; the effects it produced.
    pub fn press(&mut self, code: KeyCode) -> Vec<Effect> {
        self.msg(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    pub fn keys(&mut self, text: &str) -> &mut Scene {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self
    }

    pub fn click(&mut self, column: u16, row: u16) {
        self.msg(Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }));
    }

    /// Draw at `w`×`h` with `theme`. Elapsed times read `now_ms`: it is pinned a little after
    /// the last event.
    pub fn draw_with(&mut self, w: u16, h: u16, theme: &Theme) -> Buffer {
        self.s.now_ms = self.t + 1_500;
        self.s.size = (w, h);
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        switchboard::ui::draw(&mut term, &mut self.s, theme).unwrap();
        term.backend().buffer().clone()
    }

    /// The screen at `w`×`h` in the dark theme, as text.
    pub fn screen(&mut self, w: u16, h: u16) -> String {
        switchboard::ui::buffer_text(&self.draw_with(w, h, &Theme::dark()))
    }

    /// The audit rows of every node.
    pub fn audits(&self) -> Vec<String> {
        self.s
            .tree
            .nodes
            .iter()
            .flat_map(|n| n.transcript.items.iter())
            .filter_map(|i| match &i.kind {
                ItemKind::Audit { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// The reply body we wrote for `request_id`.
    pub fn reply(&self, request_id: &str) -> Option<Value> {
        self.sent
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "control_response" && v["response"]["request_id"] == request_id)
            .map(|v| v["response"]["response"].clone())
    }

    pub fn node(&self, name: &str) -> usize {
        self.s
            .tree
            .nodes
            .iter()
            .position(|n| n.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no node {name:?} in {:?}",
                    self.s
                        .tree
                        .nodes
                        .iter()
                        .map(|n| &n.name)
                        .collect::<Vec<_>>()
                )
            })
    }

    /// Select `node` with tree keys (Esc / h to get there first).
    pub fn select_node(&mut self, node: usize) {
        if self.s.focus == Focus::Prompt {
            self.key(KeyCode::Esc);
        }
        self.s.focus = Focus::Tree;
        self.key(KeyCode::Home);
        for _ in 0..self.s.tree.nodes.len() {
            if self.s.selected_node == node {
                return;
            }
            self.key(KeyCode::Down);
        }
        assert_eq!(self.s.selected_node, node, "node {node} is not reachable");
    }

    /// Select item `i` of the selected node with transcript keys.
    pub fn select_item(&mut self, i: usize) {
        self.s.focus = Focus::Transcript;
        let len = self.s.tree.nodes[self.s.selected_node].transcript.len();
        for _ in 0..=len {
            if self.s.selected_item == Some(i) {
                return;
            }
            self.key(KeyCode::Up);
        }
        assert_eq!(self.s.selected_item, Some(i));
    }
}

// ---------------------------------------------------------------------------------------------
// Styled dumps, for views whose point is colour.

fn color(c: Color) -> String {
    match c {
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => format!("#{i}"),
        other => format!("{other:?}"),
    }
}

fn style_label(fg: Color, bg: Color, m: Modifier) -> String {
    let mut parts = Vec::new();
    if fg != Color::Reset {
        parts.push(format!("fg={}", color(fg)));
    }
    if bg != Color::Reset {
        parts.push(format!("bg={}", color(bg)));
    }
    for (flag, name) in [
        (Modifier::BOLD, "bold"),
        (Modifier::DIM, "dim"),
        (Modifier::ITALIC, "italic"),
        (Modifier::UNDERLINED, "underlined"),
        (Modifier::REVERSED, "reversed"),
        (Modifier::CROSSED_OUT, "crossed"),
    ] {
        if m.contains(flag) {
            parts.push(name.to_string());
        }
    }
    parts.join(" ")
}

/// Each row's text, then its non-default style runs: `[5..12 fg=Black bg=Yellow]`.
pub fn styled(buf: &Buffer, rows: Range<u16>) -> String {
    let mut out = String::new();
    for y in rows {
        let mut text = String::new();
        let mut runs: Vec<(u16, u16, String)> = Vec::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            text.push_str(c.symbol());
            let label = style_label(c.fg, c.bg, c.modifier);
            match runs.last_mut() {
                Some((_, end, l)) if *l == label && *end == x => *end = x + 1,
                _ => runs.push((x, x + 1, label)),
            }
        }
        out.push_str(&format!("{y:>2} {}\n", text.trim_end()));
        let runs: Vec<String> = runs
            .into_iter()
            .filter(|(_, _, l)| !l.is_empty())
            .map(|(a, b, l)| format!("[{a}..{b} {l}]"))
            .collect();
        if !runs.is_empty() {
            out.push_str(&format!("   {}\n", runs.join(" ")));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Wire lines.

/// The agent's `system/init` line.
pub fn init(opening: Opening) -> Value {
    let tools = match opening {
        Opening::Full => json!([
            "Agent",
            "AskUserQuestion",
            "Bash",
            "Edit",
            "Grep",
            "Read",
            "mcp__tickets__create_ticket"
        ]),
        Opening::Plain => json!(["Agent", "AskUserQuestion", "Bash", "Edit", "Grep", "Read"]),
    };
    json!({"type":"system","subtype":"init","session_id":"5f0c1d2e-7a8b-4c9d-8e1f-203a4b5c6d7e",
        "model":"claude-sonnet-4-5","permissionMode":"default","cwd":"/home/dev/shop",
        "claude_code_version":"2.1.332","tools":tools})
}

/// The reply to our initialize request.
pub fn init_reply(opening: Opening) -> Value {
    let (commands, agents, models) = match opening {
        Opening::Full => (
            json!([{"name":"compact","description":"Clear history but keep a summary"},
                   {"name":"review","description":"Review a pull request"}]),
            json!([{"name":"Explore","description":"Fast read-only search of a codebase"},
                   {"name":"code-reviewer","description":"Reviews changes for bugs"}]),
            json!([{"value":"default","displayName":"Default (recommended)"},
                   {"value":"opus","displayName":"Opus"}]),
        ),
        Opening::Plain => (json!([]), json!([]), json!([])),
    };
    json!({"type":"control_response","response":{"subtype":"success","request_id":"sb-1","response":{
        "commands":commands,"agents":agents,"models":models,"output_style":"default","pid":4242}}})
}

pub fn stream(parent: Option<&str>, event: Value) -> Value {
    json!({"type":"stream_event","event":event,"parent_tool_use_id":parent})
}

pub fn assistant(id: &str, parent: Option<&str>, blocks: Value) -> Value {
    json!({"type":"assistant","message":{"id":id,"role":"assistant","model":"claude-sonnet-4-5",
        "content":blocks},"parent_tool_use_id":parent})
}

pub fn text(t: &str) -> Value {
    json!({"type":"text","text":t})
}

pub fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type":"tool_use","id":id,"name":name,"input":input})
}

/// A successful tool result for `id`.
pub fn tool_result(parent: Option<&str>, id: &str, content: &str) -> Value {
    json!({"type":"user","message":{"role":"user","content":[
        {"type":"tool_result","tool_use_id":id,"content":content,"is_error":false}]},
        "parent_tool_use_id":parent})
}

pub fn task_started(
    task: &str,
    tool_use_id: &str,
    parent_task: Option<&str>,
    desc: &str,
    kind: &str,
) -> Value {
    json!({"type":"system","subtype":"task_started","task_id":task,"tool_use_id":tool_use_id,
        "parent_task_id":parent_task,"description":desc,"subagent_type":kind})
}

pub fn task_progress(task: &str, tokens: u64, tools: u64, last: &str) -> Value {
    json!({"type":"system","subtype":"task_progress","task_id":task,
        "usage":{"total_tokens":tokens,"tool_uses":tools},"last_tool_name":last})
}

pub fn control(id: &str, request: Value) -> Value {
    json!({"type":"control_request","request_id":id,"request":request})
}

pub fn result_ok(text: &str) -> Value {
    json!({"type":"result","subtype":"success","is_error":false,"result":text,"duration_ms":48_210,
        "total_cost_usd":0.1834,"usage":{"input_tokens":18_204,"output_tokens":2_311,
        "cache_read_input_tokens":40_000,"cache_creation_input_tokens":0}})
}

// ---------------------------------------------------------------------------------------------
// The demo conversation.

pub const THINKING: &str = "The user wants audit logging on login. I should find where authentication happens before touching anything.";

/// How the demo conversation opens. tests/ui_snapshots.rs and tests/operator.rs each pin one
/// in their snapshots.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// Built-in tools plus a tickets MCP tool; commands, agents and models in the initialize
    /// reply; the first turn streams (`stream_event` deltas) before the whole message.
    Full,
    /// Built-in tools only; an initialize reply without commands, agents or models; the first
    /// turn arrives as whole messages only.
    Plain,
}

/// A session after the first steps: init, a prompt, thinking and text, an `ls`.
pub fn base(opening: Opening) -> Scene {
    let mut sc = Scene::new();
    base_on(&mut sc, opening);
    sc
}

pub fn base_on(sc: &mut Scene, opening: Opening) {
    sc.line(init_reply(opening)).line(init(opening));
    sc.keys("Add audit logging to the login flow")
        .key(KeyCode::Enter);
    if opening == Opening::Full {
        sc.line(stream(None, json!({"type":"message_start","message":{"id":"msg_1"}})))
            .line(stream(None, json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})));
        for chunk in THINKING.split_inclusive(' ').collect::<Vec<_>>().chunks(6) {
            sc.line(stream(
                None,
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":chunk.concat()}}),
            ));
        }
        sc.line(stream(None, json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})))
            .line(stream(None, json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I'll look around "}})))
            .line(stream(None, json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"the repository first."}})));
    }
    sc.line(assistant(
        "msg_1",
        None,
        json!([
            {"type":"thinking","thinking":THINKING,"signature":"sig"},
            text("I'll look around the repository first."),
            tool_use("toolu_ls", "Bash", json!({"command":"ls src","description":"List source files"})),
        ]),
    ));
    if opening == Opening::Full {
        sc.line(stream(None, json!({"type":"message_stop"})));
    }
    sc.line(tool_result(
        None,
        "toolu_ls",
        "admin.rs\nauth.rs\nmain.rs\nsession.rs",
    ));
}

pub const EDIT_OLD: &str = "    let session = Session::start(&user);\n    Ok(session)";
pub const EDIT_NEW: &str = "    let session = Session::start(&user);\n    audit::record(\"login\", &user.name);\n    Ok(session)";

pub fn edit_input() -> Value {
    json!({"file_path":"/home/dev/shop/src/auth.rs","old_string":EDIT_OLD,"new_string":EDIT_NEW})
}

/// What the nested helper has done when `fan_out` returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    /// Ran its Grep and is still working.
    Busy,
    /// Ran its Grep and reported back to the explorer.
    Reported,
}

/// A fan-out: an explorer that dispatches a nested helper, and a reviewer about to edit
/// src/auth.rs.
pub fn fan_out(sc: &mut Scene, helper: Helper) {
    sc.line(assistant(
        "msg_3",
        None,
        json!([
            text("Now I'll split the work: an explorer maps the auth code while a reviewer drafts the change."),
            tool_use("toolu_ex", "Agent", json!({"description":"Map the auth code","subagent_type":"Explore","prompt":"Find where authentication happens."})),
            tool_use("toolu_rv", "Agent", json!({"description":"Draft the audit-log change","subagent_type":"code-reviewer","prompt":"Propose the audit call."})),
        ]),
    ))
    .line(task_started("task_ex", "toolu_ex", None, "Map the auth code", "Explore"))
    .line(task_started("task_rv", "toolu_rv", None, "Draft the audit-log change", "code-reviewer"))
    .line(assistant(
        "msg_ex1",
        Some("toolu_ex"),
        json!([
            text("A helper can run the search while I read the module layout."),
            tool_use("toolu_gr", "Agent", json!({"description":"Grep for authenticate","subagent_type":"general-purpose","prompt":"Search src/."})),
        ]),
    ))
    .line(task_started("task_gr", "toolu_gr", Some("task_ex"), "Grep for authenticate", "general-purpose"))
    .line(assistant(
        "msg_gr1",
        Some("toolu_gr"),
        json!([tool_use("toolu_grep", "Grep", json!({"pattern":"fn authenticate","path":"src"}))]),
    ))
    .line(tool_result(Some("toolu_gr"), "toolu_grep", "src/auth.rs:7:pub fn authenticate(store: &UserStore, name: &str, password: &str)"));
    if helper == Helper::Reported {
        sc.line(assistant(
            "msg_gr2",
            Some("toolu_gr"),
            json!([text("Found `fn authenticate` at src/auth.rs:7.")]),
        ));
    }
    sc.line(task_progress("task_gr", 3_400, 1, "Grep"));
    if helper == Helper::Reported {
        sc.line(tool_result(
            Some("toolu_ex"),
            "toolu_gr",
            "Found `fn authenticate` at src/auth.rs:7.",
        ));
    }
    sc.line(task_progress("task_ex", 12_800, 2, "Agent"))
        .line(assistant(
            "msg_rv1",
            Some("toolu_rv"),
            json!([
                text("I'll add the audit call right after the session starts."),
                tool_use("toolu_edit", "Edit", edit_input()),
            ]),
        ))
        .line(task_progress("task_rv", 8_100, 2, "Edit"));
}

/// The reviewer's Edit of src/auth.rs asks for permission.
pub fn edit_request() -> Value {
    control(
        "req-edit",
        json!({"subtype":"can_use_tool","tool_name":"Edit","tool_use_id":"toolu_edit","agent_id":"task_rv",
            "input":edit_input(),
            "title":"Claude wants to edit src/auth.rs",
            "description":"Add an audit log call after a successful login",
            "blocked_path":"/home/dev/shop/src/auth.rs",
            "permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}),
    )
}
