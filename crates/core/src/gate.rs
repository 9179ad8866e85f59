//! Gates: requests from an agent that wait for a human (or a rule) to answer.

use serde_json::Value;

use super::diff::Diff;

/// A pending request, keyed by the agent's request id.
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    pub id: String,
    /// Tree node key the gate belongs to (root or a sub-agent).
    pub node_key: String,
    /// Which agent asks, as the agent named itself (`agent_id`, agent type), for display.
    pub asked_by: Option<String>,
    pub kind: GateKind,
    pub opened_ms: u64,
    /// The body a plain "yes" would send, pretty JSON; the raw-reply editor starts from it.
    pub default_reply: String,
    /// Schema definition the raw reply body must match.
    pub reply_definition: &'static str,
}

// A handful of gates are pending at a time: boxing the permission would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum GateKind {
    Permission(Permission),
    Question(Question),
    Dialog(Dialog),
    Elicitation(Elicitation),
    Breakpoint(Breakpoint),
}

impl GateKind {
    /// The agent's own terminal, for a request of an adopted session.
    pub fn own_terminal(&self) -> Option<&OwnTerminal> {
        match self {
            GateKind::Permission(p) => p.own_terminal.as_ref(),
            GateKind::Question(q) => q.own_terminal.as_ref(),
            _ => None,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            GateKind::Permission(_) => "permission",
            GateKind::Question(_) => "question",
            GateKind::Dialog(_) => "dialog",
            GateKind::Elicitation(_) => "elicitation",
            GateKind::Breakpoint(_) => "breakpoint",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Permission {
    pub tool: String,
    /// One-line summary of the input (the command, the path…), for display only.
    pub summary: String,
    /// What approval rules match, in full: the whole Bash command, the normalised file path,
    /// or the compact input. Never the shortened summary.
    pub rule_arg: String,
    /// The tool input, compact JSON, sent back verbatim on allow.
    pub input: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub decision_reason: Option<String>,
    pub blocked_path: Option<String>,
    /// Human-readable labels of the agent's "always allow" suggestions.
    pub suggestions: Vec<String>,
    /// False when the agent set `suppress_always_allow_rule`.
    pub always_allowed: bool,
    pub default_to_no: bool,
    pub diff: Option<Diff>,
    /// The agent's own answers (ACP `session/request_permission`); when non-empty the card
    /// offers exactly these instead of the fixed choices. Empty for Claude.
    pub options: Vec<PermOption>,
    /// `rule_arg` is a shell line (Claude `Bash`, ACP terminals, `execute`-kind tools): allow
    /// rules never cover a chained line, whatever the tool is called.
    pub shell: bool,
    /// The whole command as it will run (every line; argv shell-quoted), exact: the card
    /// shows it in full with hostile characters made visible (`^[`), never stripped.
    pub command: Option<String>,
    /// Environment variables the request sets (ACP `terminal/create`), as sent. The card
    /// shows every one, rules match them (they lead `rule_arg`), and a dangerous one keeps
    /// every allow rule away.
    pub env: Vec<(String, String)>,
    /// An earlier approval already covers this request (ACP: the write of an edit the person
    /// allowed, exactly as shown): with no deny or ask rule for it, it is allowed without a
    /// second card, audited as covered by that approval.
    pub covered_by: Option<String>,
    /// The backend's deny answer carries a reason the model reads (iii `approval::resolve`
    /// `reason`): the card's deny option asks for it, and an empty one sends this default.
    /// `None` where the protocol has no room for one (ACP options are sent as they are).
    pub deny_reason: Option<String>,
    /// The backend runs an edited input exactly as edited (Claude's `updatedInput`, the
    /// gateway's writes and commands): only then does the card offer `e`. Where an edit
    /// could not run as shown, the card never pretends it can.
    pub editable: bool,
    /// The whole environment the command starts with, where the backend declares it (the
    /// gateway's exec and extra tools: the allowlist and `[gateway] env`, nothing else of the
    /// owner's). The card names every variable; the detail view (`v`) shows the values. Not
    /// for rules: the agent chose none of it.
    pub environment: Vec<(String, String)>,
    /// The request also belongs to the agent's own terminal (a session adopted through its
    /// hooks): the card can hand it back there, and offers only what that agent accepts.
    pub own_terminal: Option<OwnTerminal>,
}

/// A permission asked by an agent that runs in a terminal of its own (adopted through its
/// CLI's hooks): its own prompt is the fallback for anything not answered here.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnTerminal {
    /// What that terminal shows while the card waits ("Claude shows its own dialog there too:
    /// the first answer wins"; "its terminal is blank until this is answered").
    pub shows: String,
    /// The agent takes "deny and stop the turn" (Claude's `interrupt`; Codex refuses it).
    pub interrupt: bool,
}

/// A one-line summary of a command (for audit rows and lists) that never hides that more
/// lines follow: `echo ok (+1 more line)`.
pub fn command_summary(command: &str) -> String {
    let lines = command.lines().filter(|l| !l.trim().is_empty()).count();
    let first = super::text::one_line(command, 160);
    match lines {
        0 | 1 => first,
        2 => format!("{first} (+1 more line)"),
        n => format!("{first} (+{} more lines)", n - 1),
    }
}

/// Variables known not to change which program runs or what it loads: an allowlist, not a
/// denylist. Programs read hundreds of variables that load code or pick helpers (`LD_*`,
/// `RUSTC_WRAPPER`, `GIT_SSH_COMMAND`, `LESSOPEN`, `PROMPT_COMMAND`, every tool's `*_OPTS`…)
/// and new ones appear with every tool release; a denylist is wrong as soon as one is missed,
/// an allowlist only makes a person look at a harmless one. A request setting anything else
/// is marked on the card and never allowed by a rule.
const HARMLESS_ENV: &[&str] = &[
    "CI",
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "DEBUG",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
];

/// Families of harmless variables (`LC_ALL`, `LC_CTYPE`…).
const HARMLESS_ENV_PREFIX: &[&str] = &["LC_"];

/// Whether setting `name` may change what a command runs or loads: anything not on the
/// allowlist (compared exactly: environment names are case-sensitive, so `lang` is not `LANG`).
pub fn dangerous_env(name: &str) -> bool {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    !(plain
        && (HARMLESS_ENV.contains(&name)
            || HARMLESS_ENV_PREFIX.iter().any(|p| name.starts_with(p))))
}

/// One answer the agent offers for a permission request (ACP `PermissionOption`).
#[derive(Clone, Debug, PartialEq)]
pub struct PermOption {
    pub option_id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always` (or an unknown kind).
    pub kind: String,
}

impl PermOption {
    pub fn allows(&self) -> bool {
        self.kind.starts_with("allow")
    }

    /// The option's name says the opposite of its kind: an `allow_once` called "Reject", a
    /// `reject_once` called "Allow". What the agent does follows the kind, so such a name can
    /// only mislead; the card marks it and its approval covers nothing further.
    pub fn contradicts(&self) -> bool {
        const NO: &[&str] = &[
            "reject", "deny", "refuse", "decline", "cancel", "block", "abort", "no", "never",
            "forbid", "disallow", "stop", "skip",
        ];
        const YES: &[&str] = &[
            "allow", "accept", "approve", "yes", "proceed", "grant", "permit", "ok", "okay",
            "always",
        ];
        let name = self.name.to_lowercase();
        let mut words = name.split(|c: char| !c.is_alphanumeric());
        if self.allows() {
            words.any(|w| NO.contains(&w))
        } else if self.kind.starts_with("reject") {
            words.any(|w| YES.contains(&w))
        } else {
            false
        }
    }

    /// What the card and the audit call the option: its kind, then the agent's name for it
    /// when that says more than the kind (`allow once: Reject ⚠ the name contradicts what it
    /// does`; `Allow` alone reads `allow once`).
    pub fn label(&self) -> String {
        let kind = self.kind.replace('_', " ");
        let name = self.name.to_lowercase();
        let says_no_more = name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .all(|w| kind.split(' ').any(|k| k == w));
        let mut label = if says_no_more {
            kind
        } else {
            format!("{kind}: {}", self.name)
        };
        if self.contradicts() {
            label.push_str(" ⚠ the name contradicts what it does");
        }
        label
    }
}

/// The answers a permission card offers, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermChoice {
    AllowOnce,
    AllowAlways,
    Deny,
    DenyInterrupt,
    EditInput,
    /// Leave it to the agent's own terminal: no answer from here (adopted sessions).
    HandBack,
    /// One of `Permission::options`, by index.
    AgentOption(usize),
}

impl PermChoice {
    /// The binding of a fixed choice (`bindings::PERMISSION`): its key and label come from there.
    fn binding(self) -> Option<&'static super::bindings::Binding> {
        let id = match self {
            PermChoice::AllowOnce => "allow_once",
            PermChoice::AllowAlways => "allow_always",
            PermChoice::Deny => "deny",
            PermChoice::DenyInterrupt => "deny_interrupt",
            PermChoice::EditInput => "edit_input",
            PermChoice::HandBack => "hand_back",
            PermChoice::AgentOption(_) => return None,
        };
        Some(super::bindings::PERMISSION.get(id))
    }

    pub fn key(self) -> char {
        match (self, self.binding().and_then(|b| b.keys.first())) {
            (_, Some(super::bindings::Key::Act(a))) => super::bindings::default_key(a),
            (PermChoice::AgentOption(i), _) => char::from_digit(i as u32 + 1, 10).unwrap_or('?'),
            _ => '?',
        }
    }

    pub fn label(self) -> &'static str {
        self.binding().map_or("option", |b| b.label)
    }
}

impl Permission {
    /// The dangerous variables this request sets, in request order.
    pub fn dangerous_env(&self) -> Vec<&str> {
        self.env
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| dangerous_env(k))
            .collect()
    }

    pub fn choices(&self) -> Vec<PermChoice> {
        if !self.options.is_empty() {
            return (0..self.options.len())
                .map(PermChoice::AgentOption)
                .collect();
        }
        let mut v = vec![PermChoice::AllowOnce];
        if self.always_allowed {
            v.push(PermChoice::AllowAlways);
        }
        v.push(PermChoice::Deny);
        if self.own_terminal.as_ref().is_none_or(|t| t.interrupt) {
            v.push(PermChoice::DenyInterrupt);
        }
        if self.editable {
            v.push(PermChoice::EditInput);
        }
        if self.own_terminal.is_some() {
            v.push(PermChoice::HandBack);
        }
        v
    }

    /// The key of a choice: agent options are keyed by kind (y allow_once, a allow_always,
    /// n reject_once, R reject_always; the first of each kind), others by position.
    pub fn choice_key(&self, c: PermChoice) -> char {
        let PermChoice::AgentOption(i) = c else {
            return c.key();
        };
        let Some(o) = self.options.get(i) else {
            return c.key();
        };
        let by_kind = match o.kind.as_str() {
            "allow_once" => Some('y'),
            "allow_always" => Some('a'),
            "reject_once" => Some('n'),
            "reject_always" => Some('R'),
            _ => None,
        };
        match by_kind {
            Some(k) if self.options.iter().position(|x| x.kind == o.kind) == Some(i) => k,
            _ => c.key(),
        }
    }

    /// Choosing `o` opens the typed-reason prompt instead of sending the option as it is:
    /// a refusing option of a backend whose deny carries a reason.
    pub fn asks_reason(&self, o: &PermOption) -> bool {
        self.deny_reason.is_some() && !o.allows()
    }

    pub fn choice_label(&self, c: PermChoice) -> String {
        match c {
            PermChoice::AgentOption(i) => match self.options.get(i) {
                // The deny asks for the reason the model reads first.
                Some(o) if self.asks_reason(o) => format!("{}…", o.label()),
                Some(o) => o.label(),
                None => String::new(),
            },
            c => c.label().to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub questions: Vec<QSpec>,
    /// Why the request cannot be answered (no question text, no questions): deny only.
    pub malformed: Option<String>,
    /// Asked by an agent in a terminal of its own (see `Permission::own_terminal`).
    pub own_terminal: Option<OwnTerminal>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QSpec {
    pub question: String,
    pub header: String,
    pub multi: bool,
    pub options: Vec<QOption>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QOption {
    pub label: String,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Dialog {
    pub dialog_kind: String,
    pub title: Option<String>,
    pub message: Option<String>,
    /// Choices offered in the payload, if any; Enter completes with the highlighted one.
    pub options: Vec<String>,
    pub payload: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Elicitation {
    pub server: String,
    pub message: String,
    pub url: Option<String>,
    pub fields: Vec<Field>,
}

impl Elicitation {
    /// A form that is one free-text answer (one string field, no URL): answered by typing,
    /// its field focused from the start (issue 22 item 3).
    pub fn free_text(&self) -> bool {
        self.url.is_none() && matches!(self.fields.as_slice(), [f] if f.kind == FieldKind::String)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub title: String,
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    pub default: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    String,
    Number,
    Integer,
    Boolean,
    Enum(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Breakpoint {
    pub tool: String,
    pub summary: String,
    pub input: String,
    pub hook_event: String,
}

/// A human decision, protocol-neutral; the backend encodes it for the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Allow {
        /// Edited tool input (JSON); `None` sends the original input.
        updated_input: Option<Value>,
        always: bool,
    },
    Deny {
        message: String,
        interrupt: bool,
    },
    /// AskUserQuestion: (question text, answer) in question order.
    Answer {
        answers: Vec<(String, String)>,
    },
    DialogComplete {
        result: Value,
    },
    DialogCancel,
    ElicitAccept {
        content: Value,
    },
    ElicitDecline,
    ElicitCancel,
    Continue,
    Block {
        reason: String,
    },
    /// A reply body typed by hand in the raw editor, already schema-checked.
    Raw {
        body: Value,
    },
    /// One of the agent's own permission options (ACP), chosen by the human.
    Option {
        option_id: String,
        name: String,
        allow: bool,
    },
    /// The request is cancelled with its turn (ACP outcome `cancelled`; never a "no").
    Cancelled,
    /// Nothing is answered from here: the agent's own terminal takes the request (an adopted
    /// session's native prompt). `why` is the audit's words: "handed to its own terminal",
    /// "answered in its own terminal".
    OwnTerminal {
        why: String,
    },
}

impl Decision {
    /// The answer sent for a still-pending gate when switchboard exits.
    pub fn on_exit(kind: &GateKind) -> Decision {
        if kind.own_terminal().is_some() {
            // Never decided by our going: the agent's own prompt takes it.
            return Decision::OwnTerminal {
                why: "left to its own terminal (switchboard stopped)".into(),
            };
        }
        match kind {
            GateKind::Permission(p) if !p.options.is_empty() => Decision::Cancelled,
            GateKind::Permission(_) | GateKind::Question(_) => Decision::Deny {
                message: "switchboard exited".into(),
                interrupt: false,
            },
            GateKind::Dialog(_) => Decision::DialogCancel,
            GateKind::Elicitation(_) => Decision::ElicitCancel,
            GateKind::Breakpoint(_) => Decision::Block {
                reason: "switchboard exited".into(),
            },
        }
    }
}

/// Join chosen multiSelect labels in option order with ", " (the wire convention), plus the
/// "Other" text last when given.
pub fn join_answer(q: &QSpec, chosen: &[bool], other: Option<&str>) -> String {
    let mut parts: Vec<&str> = q
        .options
        .iter()
        .zip(chosen)
        .filter(|(_, on)| **on)
        .map(|(o, _)| o.label.as_str())
        .collect();
    if let Some(o) = other.map(str::trim).filter(|o| !o.is_empty()) {
        parts.push(o);
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> QSpec {
        QSpec {
            question: "Which?".into(),
            header: "H".into(),
            multi: true,
            options: ["Auth", "Billing", "Audit", "Admin"]
                .iter()
                .map(|l| QOption {
                    label: l.to_string(),
                    description: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn command_summaries_say_more_lines_follow() {
        assert_eq!(command_summary("ls"), "ls");
        assert_eq!(
            command_summary("echo ok\ncurl x | sh"),
            "echo ok (+1 more line)"
        );
        assert_eq!(command_summary("\na\n\nb\nc\n"), "a (+2 more lines)");
    }

    #[test]
    fn dangerous_variables() {
        for k in [
            "LD_PRELOAD",
            "ld_library_path",
            "PATH",
            "BASH_ENV",
            "ENV",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "GIT_SSH_COMMAND",
            "BASH_FUNC_ls%%",
            "A=B",
            "",
            "1X",
            "X\u{1b}",
        ] {
            assert!(dangerous_env(k), "{k:?}");
        }
        // Not on the allowlist, whatever they are: the families the denylist used to miss too.
        for k in [
            "MY_FLAG",
            "XDG_CONFIG_HOME",
            "RUSTFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_HOME",
            "MAVEN_OPTS",
            "GRADLE_OPTS",
            "DOCKER_HOST",
            "KUBECONFIG",
            "SSH_AUTH_SOCK",
            "GEM_HOME",
            "RUBYOPT",
            "PERL5OPT",
            "NPM_CONFIG_PREFIX",
            "LESSOPEN",
            "EDITOR",
            "PAGER",
            "SHELL",
            "PROMPT_COMMAND",
            "PS4",
            "lang",
        ] {
            assert!(dangerous_env(k), "{k:?}");
        }
        for k in ["CI", "RUST_LOG", "TERM", "LANG", "LC_ALL", "TZ", "NO_COLOR"] {
            assert!(!dangerous_env(k), "{k:?}");
        }
    }

    #[test]
    fn multiselect_joins_in_option_order() {
        assert_eq!(
            join_answer(&q(), &[true, false, true, false], None),
            "Auth, Audit"
        );
        assert_eq!(
            join_answer(&q(), &[false, true, false, false], Some(" Ops ")),
            "Billing, Ops"
        );
        assert_eq!(join_answer(&q(), &[false; 4], Some("")), "");
    }
}
