//! A realistic, seeded stream generator for the benchmarks (and their smoke tests).
//!
//! The shapes are those of the real CLI's stdout in `fixtures/recordings/claude` (CLI 2.x with
//! `--include-partial-messages`): every line carries `session_id` and `uuid`; a turn is
//! `system/status`, then messages of `message_start`, thinking blocks (thinking deltas and a
//! signature delta), text blocks (text deltas), tool_use blocks (`input_json_delta`), each
//! block closed by `content_block_stop` and settled by its own `assistant` line, then
//! `message_delta` and `message_stop`; tool results come back as `user` lines; every few turns
//! an `Agent` tool runs a sub-agent (`system/task_*` frames and lines with
//! `parent_tool_use_id`); each turn ends with a `result` carrying usage. About 70% of the
//! lines are `content_block_delta`, as in long real sessions.
//!
//! The ACP session (`AcpGen`) follows claude-code-acp's traffic (`../shared/recordings/acp/`)
//! and `fixtures/recordings/acp`: `session/prompt` out, then `session/update` notifications
//! (thought and message chunks, tool calls and their updates, plans), permission gates, fs and
//! terminal requests with our replies, and the prompt's `stopReason` response.
//!
//! Deterministic: the same seed gives the same bytes.

#![allow(dead_code)]

use std::collections::VecDeque;

/// splitmix64: small, fast, and good enough to vary shapes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn uuid(&mut self) -> String {
        let a = self.next();
        let b = self.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) & 0x3fff | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }
}

const WORDS: &[&str] = &[
    "the",
    "session",
    "store",
    "keeps",
    "tokens",
    "in",
    "memory",
    "and",
    "expires",
    "them",
    "after",
    "an",
    "hour;",
    "I'll",
    "read",
    "src/auth.rs",
    "first,",
    "then",
    "check",
    "the",
    "tests.",
    "The",
    "failing",
    "case",
    "is",
    "`refresh_token`",
    "when",
    "clock",
    "skew",
    "exceeds",
    "30s.",
    "Let",
    "me",
    "look",
    "at",
    "how",
    "rotation",
    "works",
    "—",
    "it",
    "uses",
    "a",
    "\"sliding\"",
    "window",
    "ünïcode",
    "naïve",
    "config.toml",
    "→",
    "fix",
];

/// JSON string literal (quotes and escapes included).
fn js(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// `n` words of prose starting with a space or not.
fn words(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 || rng.chance(80) {
            s.push(' ');
        }
        s.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
        if rng.chance(3) {
            s.push('\n');
        }
    }
    s
}

/// The Claude CLI's stdout, one line per `next()`, for ever.
pub struct ClaudeGen {
    rng: Rng,
    session: String,
    turn: u64,
    msg: u64,
    tool: u64,
    queue: VecDeque<String>,
}

impl ClaudeGen {
    pub fn new(seed: u64) -> ClaudeGen {
        let mut rng = Rng::new(seed);
        let session = rng.uuid();
        let mut g = ClaudeGen {
            rng,
            session,
            turn: 0,
            msg: 0,
            tool: 0,
            queue: VecDeque::new(),
        };
        g.init();
        g
    }

    /// `n` lines collected (for the sizes that fit in memory).
    pub fn lines(seed: u64, n: usize) -> Vec<String> {
        ClaudeGen::new(seed).take(n).collect()
    }

    fn tail(&mut self, parent: Option<&str>) -> String {
        let uuid = self.rng.uuid();
        format!(
            r#","parent_tool_use_id":{},"session_id":"{}","uuid":"{uuid}""#,
            parent.map_or("null".to_string(), js),
            self.session
        )
    }

    fn ev(&mut self, parent: Option<&str>, msg: &str, event: String) {
        let tail = self.tail(parent);
        self.queue.push_back(format!(
            r#"{{"type":"stream_event","event":{event}{tail},"api_message_id":"{msg}"}}"#
        ));
    }

    fn init(&mut self) {
        let uuid = self.rng.uuid();
        self.queue.push_back(format!(
            r#"{{"type":"system","subtype":"init","cwd":"/work/project","session_id":"{}","tools":["Task","Bash","Edit","Read","Grep","Glob","Write","WebFetch"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"default","slash_commands":["compact","review"],"apiKeySource":"none","claude_code_version":"2.1.332","output_style":"default","agents":["general-purpose","Explore"],"skills":[],"plugins":[],"uuid":"{uuid}"}}"#,
            self.session
        ));
    }

    fn assistant(&mut self, parent: Option<&str>, msg: &str, block: String) {
        let tail = self.tail(parent);
        self.queue.push_back(format!(
            r#"{{"type":"assistant","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{block}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":4096}},"context_management":null}}{tail}}}"#
        ));
    }

    /// One streamed message: thinking, text and maybe a tool use. Returns the tool id and
    /// name when it used one.
    fn message(
        &mut self,
        parent: Option<&str>,
        tool: Option<&str>,
        thinking: bool,
    ) -> Option<(String, String)> {
        self.msg += 1;
        let msg = format!("msg_01{:020x}", self.msg);
        self.ev(
            parent,
            &msg.clone(),
            format!(
                r#"{{"type":"message_start","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":4096}}}}}}"#
            ),
        );
        let mut index = 0;
        if thinking {
            self.ev(
                parent,
                &msg,
                format!(r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"thinking","thinking":"","signature":""}}}}"#),
            );
            let mut all = String::new();
            for _ in 0..self.rng.range(4, 16) {
                let n = self.rng.range(2, 10);
                let d = words(&mut self.rng, n);
                all.push_str(&d);
                self.ev(
                    parent,
                    &msg,
                    format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"thinking_delta","thinking":{}}}}}"#, js(&d)),
                );
            }
            let sig: String = (0..4)
                .map(|_| format!("{:016x}", self.rng.next()))
                .collect();
            self.ev(
                parent,
                &msg,
                format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"signature_delta","signature":"{sig}"}}}}"#),
            );
            self.assistant(
                parent,
                &msg,
                format!(
                    r#"{{"type":"thinking","thinking":{},"signature":"{sig}"}}"#,
                    js(&all)
                ),
            );
            self.ev(
                parent,
                &msg,
                format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
            );
            index += 1;
        }
        self.ev(
            parent,
            &msg,
            format!(r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#),
        );
        let mut all = String::new();
        for _ in 0..self.rng.range(5, 30) {
            let n = self.rng.range(1, 8);
            let d = words(&mut self.rng, n);
            all.push_str(&d);
            self.ev(
                parent,
                &msg,
                format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":{}}}}}"#, js(&d)),
            );
        }
        self.assistant(
            parent,
            &msg,
            format!(r#"{{"type":"text","text":{}}}"#, js(&all)),
        );
        self.ev(
            parent,
            &msg,
            format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
        );
        index += 1;
        let used = tool.map(|name| {
            self.tool += 1;
            let id = format!("toolu_01{:018x}", self.tool);
            self.ev(
                parent,
                &msg,
                format!(r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}}}"#),
            );
            let input = match name {
                "Agent" => format!(
                    r#"{{"description":"Review module {}","prompt":{},"subagent_type":"general-purpose"}}"#,
                    self.tool,
                    js(&words(&mut self.rng, 30))
                ),
                "Edit" => format!(
                    r#"{{"file_path":"/work/project/src/auth.rs","old_string":{},"new_string":{}}}"#,
                    js(&words(&mut self.rng, 12)),
                    js(&words(&mut self.rng, 14))
                ),
                "Read" => r#"{"file_path":"/work/project/src/auth.rs"}"#.to_string(),
                _ => format!(r#"{{"command":"cargo test -p auth {}","description":"Run the auth tests"}}"#, self.tool),
            };
            // The input arrives in pieces of partial JSON.
            let chars: Vec<char> = input.chars().collect();
            let mut at = 0;
            while at < chars.len() {
                let n = self.rng.range(8, 40).min(chars.len() - at);
                let piece: String = chars[at..at + n].iter().collect();
                at += n;
                self.ev(
                    parent,
                    &msg,
                    format!(r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#, js(&piece)),
                );
            }
            self.assistant(
                parent,
                &msg,
                format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}"#),
            );
            self.ev(parent, &msg, format!(r#"{{"type":"content_block_stop","index":{index}}}"#));
            (id, name.to_string())
        });
        let stop = if used.is_some() {
            "tool_use"
        } else {
            "end_turn"
        };
        let out_tokens = self.rng.range(20, 900);
        self.ev(
            parent,
            &msg,
            format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop}","stop_sequence":null}},"usage":{{"output_tokens":{out_tokens}}}}}"#),
        );
        self.ev(parent, &msg, r#"{"type":"message_stop"}"#.to_string());
        used
    }

    fn tool_result(&mut self, parent: Option<&str>, id: &str, extra: &str) {
        let n = self.rng.range(10, 200);
        let body = words(&mut self.rng, n);
        let err = self.rng.chance(5);
        let tail = self.tail(parent);
        self.queue.push_back(format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":{},"is_error":{err}}}]}}{tail}{extra},"timestamp":"2026-12-01T05:50:56.774Z"}}"#,
            js(&body)
        ));
    }

    fn system(&mut self, body: String) {
        let uuid = self.rng.uuid();
        self.queue.push_back(format!(
            r#"{{"type":"system",{body},"uuid":"{uuid}","session_id":"{}"}}"#,
            self.session
        ));
    }

    fn turn(&mut self) {
        self.turn += 1;
        self.system(r#""subtype":"status","status":"requesting""#.to_string());
        let steps = self.rng.range(1, 4);
        for step in 0..steps {
            let tool = if self.turn.is_multiple_of(5) && step == 0 {
                "Agent"
            } else {
                ["Bash", "Read", "Edit", "Bash"][self.rng.range(0, 3)]
            };
            let thinking = self.rng.chance(70);
            let Some((id, name)) = self.message(None, Some(tool), thinking) else {
                continue;
            };
            if name == "Agent" {
                let task = format!("a{:016x}", self.rng.next());
                self.system(format!(
                    r#""subtype":"task_started","task_id":"{task}","tool_use_id":"{id}","description":"Review module","subagent_type":"general-purpose","task_type":"local_agent""#
                ));
                for _ in 0..self.rng.range(1, 3) {
                    if let Some((sub_id, _)) = self.message(Some(&id), Some("Read"), false) {
                        self.tool_result(Some(&id), &sub_id, "");
                    }
                    let tokens = self.rng.range(100, 9000);
                    self.system(format!(
                        r#""subtype":"task_progress","task_id":"{task}","tool_use_id":"{id}","description":"Reading","usage":{{"total_tokens":{tokens},"tool_uses":1,"duration_ms":420}},"last_tool_name":"Read""#
                    ));
                }
                self.message(Some(&id), None, false);
                self.system(format!(
                    r#""subtype":"task_notification","task_id":"{task}","tool_use_id":"{id}","status":"completed","output_file":"/tmp/claude/tasks/{task}.output","summary":"Reviewed the module.","usage":{{"total_tokens":4000,"tool_uses":2,"duration_ms":3100}}"#
                ));
                self.tool_result(
                    None,
                    &id,
                    &format!(r#","tool_use_result":{{"status":"completed","agentId":"{task}"}}"#),
                );
            } else {
                self.tool_result(None, &id, "");
            }
        }
        self.message(None, None, false);
        let (i, o) = (self.rng.range(1000, 90_000), self.rng.range(100, 9000));
        let uuid = self.rng.uuid();
        // The CLI writes `result` with `type` after other keys: the general decode path.
        self.queue.push_back(format!(
            r#"{{"duration_api_ms":{},"stop_reason":"end_turn","type":"result","subtype":"success","is_error":false,"duration_ms":{},"num_turns":{steps},"result":{},"session_id":"{}","total_cost_usd":0.0{:04},"usage":{{"input_tokens":{i},"cache_creation_input_tokens":0,"cache_read_input_tokens":{},"output_tokens":{o},"service_tier":"standard"}},"permission_denials":[],"uuid":"{uuid}"}}"#,
            self.rng.range(900, 60_000),
            self.rng.range(1000, 90_000),
            js(&words(&mut self.rng, 8)),
            self.session,
            self.rng.range(1, 9999),
            self.rng.range(0, 200_000),
        ));
    }
}

impl ClaudeGen {
    /// The session stopping on `n` permission requests, as the CLI does when a message's tool
    /// calls need approval (the requests wait until answered): the lines that finish the turn
    /// in progress and stream `n` tool uses (`lead`), then one `can_use_tool` control request
    /// per tool use (`requests`), apart so a caller can interleave sessions' requests in time.
    /// Shaped like `fixtures/recordings/claude/bash_write.jsonl`.
    pub fn pending_gates(&mut self, n: usize) -> (Vec<String>, Vec<String>) {
        let mut lead: Vec<String> = self.queue.drain(..).collect();
        self.turn += 1;
        self.system(r#""subtype":"status","status":"requesting""#.to_string());
        let mut requests = Vec::with_capacity(n);
        for k in 0..n {
            let thinking = k == 0;
            let Some((id, _)) = self.message(None, Some("Bash"), thinking) else {
                continue;
            };
            let cmd = format!(
                "cargo test -p auth {} -- --test-threads {}",
                self.tool,
                self.rng.range(1, 8)
            );
            let uuid = self.rng.uuid();
            requests.push(format!(
                r#"{{"type":"control_request","request_id":"{uuid}","request":{{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{{"command":{},"description":"Run the auth tests"}},"description":"Run the auth tests","permission_suggestions":[{{"type":"addRules","rules":[{{"toolName":"Bash","ruleContent":{}}}],"behavior":"allow","destination":"localSettings"}},{{"type":"setMode","mode":"acceptEdits","destination":"session"}}],"tool_use_id":"{id}"}}}}"#,
                js(&cmd),
                js(&cmd)
            ));
        }
        lead.extend(self.queue.drain(..));
        (lead, requests)
    }
}

impl Iterator for ClaudeGen {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        if self.queue.is_empty() {
            self.turn();
        }
        self.queue.pop_front()
    }
}

/// One line of an ACP session as a recording holds it: `out` is ours, `in` the agent's.
pub struct AcpLine {
    pub out: bool,
    pub line: String,
}

/// `n` lines of Rust-like source (what an agent reads and edits).
fn code(rng: &mut Rng, n: usize) -> String {
    const LINES: &[&str] = &[
        "use std::time::Duration;",
        "pub fn refresh_token(store: &mut Store, now: u64) -> Result<Token, AuthError> {",
        "    let skew = now.saturating_sub(store.issued_at);",
        "    if skew > MAX_SKEW_SECS {",
        "        return Err(AuthError::ClockSkew { skew });",
        "    }",
        "    // Rotation uses a \"sliding\" window of one hour.",
        "    let ttl = Duration::from_secs(3600);",
        "    store.tokens.retain(|t| t.expires_at > now);",
        "    Ok(Token::new(store.next_id(), now + ttl.as_secs()))",
        "}",
        "",
        "#[test]",
        "fn expired_tokens_are_dropped() {",
        "    assert_eq!(store.len(), 0, \"ünïcode → fine\");",
        "\tlet config = Config::load(\"config.toml\")?;",
    ];
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(LINES[rng.range(0, LINES.len() - 1)]);
        s.push('\n');
    }
    s
}

/// An ACP agent session, one line per `next()`, shaped like the real traffic of
/// claude-code-acp (`../shared/recordings/acp/toad_*`) with switchboard's replies as its
/// session writes them (`fixtures/recordings/acp/good.jsonl`, `wire.jsonl`): `initialize` and
/// `session/new`, then turns of `session/prompt` out, thought chunks, sometimes a plan, tool
/// calls, message chunks and the prompt's `stopReason`. Each `tool_call` carries the
/// `_meta.claudeCode.toolName` the current adapter (claude-agent-acp) sends. A tool call is
/// one of:
/// - a read through the client: `tool_call` (kind `read`), the agent's `fs/read_text_file`
///   and our reply with the file's text, then the `tool_call_update` that completes it with
///   the same text;
/// - a command: `tool_call` (kind `execute`), `session/request_permission` (allow always /
///   allow / reject) and our recorded answer; allowed, `terminal/create`, the update that shows
///   the terminal, `terminal/wait_for_exit`, `terminal/output` and `terminal/release`, each
///   answered by us; rejected, the update that fails the call;
/// - an edit: `tool_call` (kind `edit`, its diff), a permission gate and our answer; allowed,
///   the agent reads the file and writes it (`fs/write_text_file`, a gate answered `{}`);
/// - a read the agent does itself (its output in the update, as ACP agents without fs do).
///
/// The agent numbers its requests from 0 on its own, so its ids collide with ours, as on the
/// real wire.
pub struct AcpGen {
    rng: Rng,
    id: u64,
    /// The agent's next request id.
    theirs: u64,
    call: u64,
    term: u64,
    turn: u64,
    session: String,
    queue: VecDeque<AcpLine>,
}

impl AcpGen {
    pub fn new(seed: u64) -> AcpGen {
        let mut rng = Rng::new(seed);
        let session = rng.uuid();
        let mut g = AcpGen {
            rng,
            id: 2,
            theirs: 0,
            call: 0,
            term: 0,
            turn: 0,
            session,
            queue: VecDeque::new(),
        };
        g.push(true, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"switchboard","title":"switchboard","version":"0.1.0"}}}"#.into());
        g.push(false, r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true}},"authMethods":[{"description":"Run `claude /login` in the terminal","name":"Log in with Claude Code","id":"claude-login"}]}}"#.into());
        g.push(true, r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#.into());
        let sid = g.session.clone();
        g.push(false, format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"sessionId":"{sid}","modes":{{"currentModeId":"default","availableModes":[{{"id":"default","name":"Always Ask","description":"Prompts for permission on first use of each tool"}},{{"id":"acceptEdits","name":"Accept Edits","description":"Automatically accepts file edit permissions for the session"}},{{"id":"plan","name":"Plan Mode","description":"Claude can analyze but not modify files or execute commands"}}]}}}}}}"#));
        g.update(r#"{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compact","description":"Clear conversation history but keep a summary in context. Optional: /compact [instructions for summarization]","input":{"hint":"<optional custom summarization instructions>"}},{"name":"init","description":"Initialize a new CLAUDE.md file with codebase documentation","input":null},{"name":"review","description":"Review a pull request","input":null}]}"#.into());
        g
    }

    fn push(&mut self, out: bool, line: String) {
        self.queue.push_back(AcpLine { out, line });
    }

    fn update(&mut self, u: String) {
        let sid = &self.session;
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{u}}}}}"#
        );
        self.push(false, line);
    }

    /// A request of the agent's; returns its id.
    fn ask(&mut self, method: &str, params: String) -> u64 {
        let id = self.theirs;
        self.theirs += 1;
        let sid = &self.session;
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"sessionId":"{sid}",{params}}}}}"#
        );
        self.push(false, line);
        id
    }

    /// Our reply to the agent's request `id`, as `codec::result` writes it.
    fn reply(&mut self, id: u64, result: String) {
        self.push(
            true,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        );
    }

    fn tool_id(&mut self) -> String {
        self.call += 1;
        format!("toolu_01{:06}{:016x}", self.call, self.rng.next())
    }

    /// A permission gate on tool call `tc` and our answer: whether it was allowed.
    fn permission(&mut self, tc: &str, raw_input: &str) -> bool {
        let id = self.ask(
            "session/request_permission",
            format!(r#""options":[{{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"}},{{"kind":"allow_once","name":"Allow","optionId":"allow"}},{{"kind":"reject_once","name":"Reject","optionId":"reject"}}],"toolCall":{{"toolCallId":"{tc}","rawInput":{raw_input}}}"#),
        );
        let pick = self.rng.range(0, 9);
        let option = match pick {
            0 => "allow_always",
            1 => "reject",
            _ => "allow",
        };
        self.reply(
            id,
            format!(r#"{{"outcome":{{"outcome":"selected","optionId":"{option}"}}}}"#),
        );
        option != "reject"
    }

    fn rejected(&mut self, tc: &str) {
        self.update(format!(r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call_update","status":"failed","content":[{{"type":"content","content":{{"type":"text","text":"The user doesn't want to proceed with this tool use. The tool use was rejected."}}}}]}}"#));
    }

    fn path(&mut self) -> String {
        const FILES: &[&str] = &[
            "src/auth.rs",
            "src/lib.rs",
            "src/store/session.rs",
            "tests/rotation.rs",
            "config.toml",
        ];
        format!("/w/{}", FILES[self.rng.range(0, FILES.len() - 1)])
    }

    /// A read through the client's `fs/read_text_file`.
    fn fs_read(&mut self) {
        let tc = self.tool_id();
        let path = self.path();
        self.update(format!(r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call","_meta":{{"claudeCode":{{"toolName":"Read"}}}},"rawInput":{{"file_path":"{path}"}},"status":"pending","title":"Read {path}","kind":"read","locations":[{{"path":"{path}","line":0}}],"content":[]}}"#));
        let id = self.ask(
            "fs/read_text_file",
            format!(r#""path":"{path}","line":1,"limit":2000"#),
        );
        let n = self.rng.range(8, 60);
        let text = code(&mut self.rng, n);
        self.reply(id, format!(r#"{{"content":{}}}"#, js(&text)));
        let shown = js(&format!("```\n{text}```"));
        self.update(format!(r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call_update","status":"completed","content":[{{"type":"content","content":{{"type":"text","text":{shown}}}}}]}}"#));
    }

    /// A command run in a client terminal, after its permission gate.
    fn command(&mut self) {
        let tc = self.tool_id();
        let cmd = [
            "cargo test -p auth",
            "cargo build --release",
            "git status --short",
            "rg -n refresh_token src",
        ][self.rng.range(0, 3)];
        let raw = format!(r#"{{"command":"{cmd}","description":"Run {cmd}"}}"#);
        self.update(format!(r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call","_meta":{{"claudeCode":{{"toolName":"Bash"}}}},"rawInput":{raw},"status":"pending","title":"`{cmd}`","kind":"execute","content":[{{"type":"content","content":{{"type":"text","text":"Run {cmd}"}}}}]}}"#));
        if !self.permission(&tc, &raw) {
            return self.rejected(&tc);
        }
        let id = self.ask(
            "terminal/create",
            format!(r#""command":"{cmd}","outputByteLimit":32000"#),
        );
        self.term += 1;
        let term = format!("terminal-{}", self.term);
        self.reply(id, format!(r#"{{"terminalId":"{term}"}}"#));
        self.update(format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{tc}","status":"in_progress","title":"Run {cmd}","content":[{{"type":"terminal","terminalId":"{term}"}}]}}"#));
        let code = if self.rng.chance(15) { 1 } else { 0 };
        let id = self.ask(
            "terminal/wait_for_exit",
            format!(r#""terminalId":"{term}""#),
        );
        self.reply(id, format!(r#"{{"exitCode":{code},"signal":null}}"#));
        let id = self.ask("terminal/output", format!(r#""terminalId":"{term}""#));
        // One command in twenty prints colour: 20-40 KB of 24-bit SGR sequences and braille,
        // as the real traffic's (`toad_claude-code-acp_permission_ansi`: a 33 KB update with
        // 1,863 `\u001b` escapes), where every escape is unescaped and every row cleaned.
        let coloured = self.rng.chance(5);
        let output = if coloured {
            let mut o = String::new();
            let target = self.rng.range(20_000, 40_000);
            let (mut r, mut g, mut b) = (0usize, 0usize, 8usize);
            while o.len() < target {
                for _ in 0..80 {
                    r = (r + self.rng.range(0, 3)) % 256;
                    g = (g + self.rng.range(0, 2)) % 256;
                    b = (b + self.rng.range(0, 4)) % 256;
                    let dots =
                        char::from_u32(0x2800 + self.rng.range(0, 256) as u32).unwrap_or('⠀');
                    o.push_str(&format!("\x1b[38;2;{r};{g};{b}m{dots}"));
                }
                o.push_str("\x1b[0m\n");
            }
            o
        } else {
            let mut o = String::new();
            for k in 0..self.rng.range(3, 30) {
                o.push_str(&format!("test store::rotation_{k} ... ok\n"));
            }
            o.push_str(&format!(
                "\ntest result: ok. {} passed; 0 failed\n",
                self.rng.range(3, 30)
            ));
            o
        };
        self.reply(
            id,
            format!(
                r#"{{"output":{},"truncated":false,"exitStatus":{{"exitCode":{code},"signal":null}}}}"#,
                js(&output)
            ),
        );
        let id = self.ask("terminal/release", format!(r#""terminalId":"{term}""#));
        self.reply(id, "{}".into());
        if coloured {
            // claude-code-acp sends the output again as the call's content.
            self.update(format!(
                r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call_update","status":"completed","content":[{{"type":"content","content":{{"type":"text","text":{}}}}}]}}"#,
                js(&output)
            ));
            return;
        }
        self.update(format!(
            r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call_update","status":"completed"}}"#
        ));
    }

    /// An edit: its diff, the permission gate, then the agent's read and write of the file.
    fn edit(&mut self) {
        let tc = self.tool_id();
        let path = self.path();
        let n = self.rng.range(2, 8);
        let old = code(&mut self.rng, n);
        let new = old.replace("3600", "1800").replace("skew", "drift");
        let (o, nw) = (js(&old), js(&new));
        let raw = format!(r#"{{"file_path":"{path}","old_string":{o},"new_string":{nw}}}"#);
        self.update(format!(r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call","_meta":{{"claudeCode":{{"toolName":"Edit"}}}},"rawInput":{raw},"status":"pending","title":"Edit `{path}`","kind":"edit","content":[{{"type":"diff","path":"{path}","oldText":{o},"newText":{nw}}}],"locations":[{{"path":"{path}"}}]}}"#));
        if !self.permission(&tc, &raw) {
            return self.rejected(&tc);
        }
        let id = self.ask("fs/read_text_file", format!(r#""path":"{path}""#));
        let n = self.rng.range(10, 50);
        let mut file = code(&mut self.rng, n);
        file.push_str(&old);
        self.reply(id, format!(r#"{{"content":{}}}"#, js(&file)));
        let written = file.replace(&old, &new);
        let id = self.ask(
            "fs/write_text_file",
            format!(r#""path":"{path}","content":{}"#, js(&written)),
        );
        self.reply(id, "{}".into());
        self.update(format!(
            r#"{{"toolCallId":"{tc}","sessionUpdate":"tool_call_update","status":"completed"}}"#
        ));
    }

    /// A read the agent does on its own: its output in the update.
    fn own_read(&mut self) {
        let tc = self.tool_id();
        let path = self.path();
        self.update(format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"{tc}","title":"Read {path}","kind":"read","status":"pending","locations":[{{"path":"{path}"}}],"rawInput":{{"path":"{path}"}}}}"#));
        self.update(format!(
            r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{tc}","status":"in_progress"}}"#
        ));
        let body = js(&words(&mut self.rng, 40));
        self.update(format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{tc}","status":"completed","content":[{{"type":"content","content":{{"type":"text","text":{body}}}}}]}}"#));
    }

    fn turn(&mut self) {
        self.turn += 1;
        self.id += 1;
        let prompt_id = self.id;
        let text = js(&words(&mut self.rng, 12));
        let sid = self.session.clone();
        self.push(
            true,
            format!(r#"{{"jsonrpc":"2.0","id":{prompt_id},"method":"session/prompt","params":{{"sessionId":"{sid}","prompt":[{{"type":"text","text":{text}}}]}}}}"#),
        );
        for _ in 0..self.rng.range(5, 20) {
            let n = self.rng.range(2, 8);
            let t = js(&words(&mut self.rng, n));
            self.update(format!(r#"{{"sessionUpdate":"agent_thought_chunk","content":{{"type":"text","text":{t}}}}}"#));
        }
        if self.turn.is_multiple_of(4) {
            self.update(r#"{"sessionUpdate":"plan","entries":[{"content":"Read the module","priority":"high","status":"completed"},{"content":"Fix the bug","priority":"medium","status":"in_progress"}]}"#.into());
        }
        for _ in 0..self.rng.range(1, 3) {
            match self.rng.range(0, 9) {
                0..=2 => self.fs_read(),
                3..=5 => self.command(),
                6..=7 => self.edit(),
                _ => self.own_read(),
            }
        }
        for _ in 0..self.rng.range(10, 60) {
            let n = self.rng.range(1, 6);
            let t = js(&words(&mut self.rng, n));
            self.update(format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{t}}}}}"#));
        }
        self.push(
            false,
            format!(r#"{{"jsonrpc":"2.0","id":{prompt_id},"result":{{"stopReason":"end_turn"}}}}"#),
        );
    }
}

impl Iterator for AcpGen {
    type Item = AcpLine;
    fn next(&mut self) -> Option<AcpLine> {
        if self.queue.is_empty() {
            self.turn();
        }
        self.queue.pop_front()
    }
}
