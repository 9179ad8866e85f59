//! The binding tables, one per context: the only place a key's hint label and its help text
//! are written. `Act` names a `keymap::DEFAULTS` action (shown as the keys the user has);
//! `Lit` is a fixed key, shown as written.

use super::Key::{Act, Lit};
use super::{Binding, Context};

const fn b(
    id: &'static str,
    keys: &'static [super::Key],
    label: &'static str,
    desc: &'static str,
) -> Binding {
    Binding {
        id,
        keys,
        label,
        desc,
    }
}

pub static EVERYWHERE: Context = Context {
    name: "Everywhere",
    remapped: true,
    bindings: &[
        b(
            "focus",
            &[Lit("Tab")],
            "focus",
            "cycle focus: tree, transcript, gate, prompt (Shift-Tab back)",
        ),
        b(
            "interrupt",
            &[Lit("Ctrl-C")],
            "interrupt",
            "interrupt the running turn",
        ),
        b(
            "quit_chord",
            &[Lit("Ctrl-D")],
            "quit",
            "quit, also while typing (asks first when gates are pending)",
        ),
        b(
            "quit",
            &[Act("quit")],
            "quit",
            "quit (asks first when gates are pending)",
        ),
        b(
            "detach",
            &[Lit("Ctrl-\\")],
            "detach",
            "detach from the host: agents and gates keep running (`switchboard attach NAME` returns)",
        ),
        b("help", &[Act("help")], "help", "this help"),
        b(
            "oldest_gate",
            &[Act("oldest_gate")],
            "gate",
            "jump to the oldest pending gate",
        ),
        b("log", &[Act("log")], "log", "agent stderr and protocol log"),
        b(
            "status",
            &[Act("status")],
            "status",
            "session status: options, models, commands",
        ),
        b(
            "mode",
            &[Act("mode")],
            "mode",
            "switch mode (only the agent's own modes)",
        ),
        b(
            "options",
            &[Act("options")],
            "options",
            "the agent's options (mode, model…): set one",
        ),
        b(
            "rules",
            &[Act("rules")],
            "rules",
            "approval rules: origin, hits; d deletes",
        ),
        b(
            "focus_prompt",
            &[Act("focus_prompt")],
            "prompt",
            "focus the prompt",
        ),
        b(
            "search",
            &[Act("search")],
            "search",
            "search this node (n/N move, Esc ends)",
        ),
        b(
            "search_all",
            &[Lit("Ctrl-F")],
            "search all",
            "search all nodes",
        ),
        b(
            "copy",
            &[Act("copy")],
            "copy",
            "copy the selection (OSC 52)",
        ),
        b(
            "open_pager",
            &[Act("open_pager")],
            "pager",
            "open it in $PAGER",
        ),
        b("detail", &[Act("detail")], "detail", "show it full screen"),
        b(
            "focus_subtree",
            &[Act("focus_subtree")],
            "subtree",
            "focus the tree on this subtree",
        ),
        b(
            "unfocus",
            &[Act("unfocus")],
            "all",
            "show the whole tree again",
        ),
        b(
            "toggle_diff",
            &[Act("toggle_diff")],
            "diffs",
            "side-by-side diffs (wide terminals)",
        ),
        b(
            "mouse",
            &[Lit("mouse")],
            "mouse",
            "wheel scrolls the pane under it; click selects",
        ),
    ],
};

pub static WORKSPACE: Context = Context {
    name: "Workspace (several sessions)",
    remapped: true,
    bindings: &[
        b(
            "inbox",
            &[Act("inbox")],
            "inbox",
            "gate inbox: every pending gate, oldest first",
        ),
        b(
            "oldest_gate",
            &[Act("oldest_gate")],
            "oldest gate",
            "the oldest gate anywhere",
        ),
        b(
            "next_gate",
            &[Act("next_gate")],
            "next gate",
            "next pending gate, across sessions",
        ),
        b(
            "prev_gate",
            &[Act("prev_gate")],
            "previous gate",
            "previous pending gate, across sessions",
        ),
        b(
            "new_session",
            &[Act("new_session")],
            "new",
            "new session from a profile or an ACP command line",
        ),
        b(
            "close_session",
            &[Act("close_session")],
            "close",
            "close the session (answers its gates)",
        ),
        b(
            "restart_session",
            &[Act("restart_session")],
            "restart",
            "restart a closed session",
        ),
        b(
            "fold_session",
            &[Act("fold_session")],
            "fold",
            "fold / unfold the session in the tree",
        ),
    ],
};

/// The inbox reads its keys untranslated: a `[keys]` override never applies here.
pub static INBOX: Context = Context {
    name: "Inbox",
    remapped: false,
    bindings: &[
        b("move", &[Lit("↑↓"), Lit("j k")], "move", "move"),
        b("open", &[Lit("Enter")], "open", "open the gate's card"),
        b("mark", &[Lit("Space")], "mark", "mark"),
        b(
            "mark_identical",
            &[Lit("=")],
            "mark identical",
            "mark all identical (same tool and input)",
        ),
        b("clear", &[Lit("u")], "clear", "clear the marks"),
        b(
            "allow",
            &[Lit("y")],
            "allow once marked",
            "allow each marked gate once",
        ),
        b(
            "deny",
            &[Lit("n")],
            "deny marked",
            "deny each marked gate with one message",
        ),
        b("close", &[Lit("Esc")], "close", "close the inbox"),
    ],
};

pub static TREE: Context = Context {
    name: "Tree and transcript",
    remapped: true,
    bindings: &[
        b(
            "move",
            &[Lit("↑↓"), Lit("j k")],
            "move",
            "select node / item",
        ),
        b(
            "open",
            &[Lit("Enter"), Lit("Space"), Lit("l")],
            "open",
            "open node / expand item",
        ),
        b(
            "scroll",
            &[Lit("PgUp PgDn Home End")],
            "scroll",
            "scroll; End follows the tail",
        ),
        b("back", &[Lit("←"), Lit("h")], "back", "back to the tree"),
    ],
};

/// Typed text: overrides never apply in the prompt.
pub static PROMPT: Context = Context {
    name: "Prompt",
    remapped: false,
    bindings: &[
        b("send", &[Lit("Enter")], "send", "send"),
        b("newline", &[Lit("Alt-Enter")], "new line", "new line"),
        b("clear", &[Lit("Ctrl-U")], "clear", "clear the line"),
        b("leave", &[Lit("Esc")], "leave", "leave the prompt"),
    ],
};

/// The labels of the fixed choices are the card's own (`[y] Allow once`).
pub static PERMISSION: Context = Context {
    name: "Permission",
    remapped: true,
    bindings: &[
        b(
            "allow_once",
            &[Act("allow_once")],
            "Allow once",
            "allow once",
        ),
        b(
            "allow_always",
            &[Act("allow_always")],
            "Allow always",
            "allow always (the agent's suggestions, this session)",
        ),
        b(
            "deny",
            &[Act("deny")],
            "Deny…",
            "deny, with an optional message",
        ),
        b(
            "deny_interrupt",
            &[Act("deny_interrupt")],
            "Deny & stop",
            "deny and interrupt the turn",
        ),
        b(
            "edit_input",
            &[Act("edit_input")],
            "Edit input…",
            "edit the tool input as JSON, then allow",
        ),
        b(
            "hand_back",
            &[Act("hand_back")],
            "Own terminal",
            "an agent in its own terminal: leave the request to its own prompt (nothing is answered here)",
        ),
        b(
            "save_rule",
            &[Act("save_rule")],
            "rule",
            "save a rule (suggested glob, shown before saving)",
        ),
        b(
            "reject_always",
            &[Act("reject_always")],
            "Reject always",
            "ACP: the agent's reject-always option (y a n R by kind)",
        ),
        b(
            "option",
            &[Lit("1-9")],
            "option",
            "ACP: any other of the agent's options, by number",
        ),
        b(
            "scroll",
            &[Lit("PgUp PgDn")],
            "scroll",
            "scroll a long card (v shows it all)",
        ),
        b(
            "pick",
            &[Lit("←→ j k"), Lit("Enter")],
            "pick",
            "pick a choice",
        ),
    ],
};

pub static QUESTION: Context = Context {
    name: "Question",
    remapped: true,
    bindings: &[
        b("move", &[Lit("↑↓")], "move", "move (also j k)"),
        b(
            "toggle",
            &[Lit("Space"), Lit("1-9")],
            "toggle",
            "toggle (multi) or select (single)",
        ),
        b(
            "confirm",
            &[Lit("Enter")],
            "confirm",
            "confirm the page; the last page sends",
        ),
        b(
            "page",
            &[Lit("←→")],
            "page",
            "previous / next question (also h l)",
        ),
        b(
            "other",
            &[Lit("Other…")],
            "other",
            "type a free-text answer",
        ),
        b("decline", &[Lit("Esc")], "decline", "decline to answer"),
        b(
            "deny",
            &[Act("deny")],
            "deny with a message",
            "a question that cannot be answered: deny it",
        ),
        b(
            "hand_back",
            &[Act("hand_back")],
            "own terminal",
            "an agent in its own terminal: answer it there instead",
        ),
    ],
};

pub static DIALOG: Context = Context {
    name: "Dialog",
    remapped: true,
    bindings: &[
        b("move", &[Lit("↑↓")], "choose", "choose (also j k)"),
        b("complete", &[Lit("Enter")], "complete", "complete"),
        b("cancel", &[Lit("Esc")], "cancel", "cancel"),
    ],
};

pub static ELICITATION: Context = Context {
    name: "Elicitation",
    remapped: true,
    bindings: &[
        b(
            "field",
            &[Lit("↑↓")],
            "field",
            "move between fields (also j k)",
        ),
        b(
            "edit",
            &[Lit("Space"), Act("edit_input")],
            "edit",
            "edit or toggle a form field (←→ cycle a choice)",
        ),
        b("accept", &[Lit("Enter")], "accept", "accept"),
        b("decline", &[Act("decline")], "decline", "decline"),
        b("cancel", &[Lit("Esc")], "cancel", "cancel"),
    ],
};

/// A breakpoint's continue is the allow-once key.
pub static BREAKPOINT: Context = Context {
    name: "Breakpoint",
    remapped: true,
    bindings: &[
        b("continue", &[Act("allow_once")], "Continue", "continue"),
        b("block", &[Act("block")], "Block…", "block with a reason"),
    ],
};

pub static ANY_GATE: Context = Context {
    name: "Any gate",
    remapped: true,
    bindings: &[
        b(
            "raw_reply",
            &[Act("raw_reply")],
            "raw",
            "reply with raw JSON (schema-checked, Ctrl-S sends)",
        ),
        b(
            "next_gate",
            &[Act("next_gate")],
            "next",
            "next pending gate",
        ),
        b(
            "prev_gate",
            &[Act("prev_gate")],
            "previous",
            "previous pending gate",
        ),
    ],
};

/// The in-card editors (deny message, rule, answer, reason, field, JSON): typed text.
pub static EDITORS: Context = Context {
    name: "Card editors",
    remapped: false,
    bindings: &[
        b(
            "keep",
            &[Lit("Enter")],
            "keep",
            "one-line editors: keep the text / send it",
        ),
        b(
            "send_json",
            &[Lit("Ctrl-S")],
            "send",
            "JSON editors (tool input, raw reply): check and send",
        ),
        b("back", &[Lit("Esc")], "back", "back to the card"),
    ],
};

pub static VIEWS: Context = Context {
    name: "Views (help, log, status, detail)",
    remapped: true,
    bindings: &[
        b("scroll", &[Lit("↑↓ j k PgUp PgDn")], "scroll", "scroll"),
        b(
            "close",
            &[Lit("Esc"), Lit("Enter"), Act("quit")],
            "close",
            "close the view",
        ),
    ],
};

pub static QUEUE: Context = Context {
    name: "iii harness",
    remapped: true,
    bindings: &[
        b(
            "queue",
            &[Act("queue")],
            "queued messages",
            "queued messages: e edits one in the prompt, d twice removes",
        ),
        b(
            "save_edit",
            &[Lit("Enter")],
            "saves the queued message in place",
            "editing a queued message: save it in place",
        ),
        b(
            "cancel_edit",
            &[Lit("Esc")],
            "cancels the edit",
            "editing a queued message: cancel",
        ),
        b(
            "new_session",
            &[Act("new_session")],
            "new",
            "new harness session on a live engine (model, provider, title, allow-list)",
        ),
    ],
};

/// `switchboard replay` reads its own keys first, untranslated.
pub static REPLAY: Context = Context {
    name: "Replay",
    remapped: false,
    bindings: &[
        b(
            "play",
            &[Lit("Space")],
            "play/pause",
            "play / pause (from the start again at the end)",
        ),
        b(
            "step",
            &[Lit(". ,")],
            "step",
            "step one frame forward / back",
        ),
        b(
            "gate",
            &[Lit("][")],
            "gate",
            "jump to the next / previous gate",
        ),
        b(
            "speed",
            &[Lit("+-")],
            "speed",
            "speed: 0.5x, 1x, 2x, 10x, 100x recorded time, or max",
        ),
        b(
            "seek",
            &[Lit("Home End")],
            "seek",
            "seek to the start / the end (Esc cancels a long seek)",
        ),
        b(
            "inspect",
            &[Lit("i")],
            "inspect",
            "frame inspector: raw JSON, direction, source line, schema verdict",
        ),
        b("keys", &[Lit("?")], "keys", "these keys"),
        b("quit", &[Lit("q"), Lit("Ctrl-D")], "quit", "quit"),
    ],
};

/// Every context, in the order of the `?` help and the README.
pub static CONTEXTS: &[&Context] = &[
    &EVERYWHERE,
    &WORKSPACE,
    &INBOX,
    &TREE,
    &PROMPT,
    &PERMISSION,
    &QUESTION,
    &DIALOG,
    &ELICITATION,
    &BREAKPOINT,
    &ANY_GATE,
    &EDITORS,
    &VIEWS,
    &QUEUE,
    &REPLAY,
];
