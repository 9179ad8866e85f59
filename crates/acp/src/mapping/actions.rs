//! Work handed to the session (`Action`, `TerminalSpec`) and the settings of a session.

use std::path::PathBuf;

use serde_json::Value;

/// A client terminal to start (`terminal/create`, after the human allowed it).
#[derive(Clone, Debug, PartialEq)]
pub struct TerminalSpec {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

impl TerminalSpec {
    /// The command exactly as it is run, shell-quoted: `cargo test`, or `sh -c 'ls; rm -rf ~'`
    /// for a whole shell line in `command` with no `args`.
    pub fn command_line(&self) -> String {
        if self.args.is_empty() {
            shell_join(["sh", "-c", self.command.as_str()])
        } else {
            shell_join(
                std::iter::once(self.command.as_str()).chain(self.args.iter().map(String::as_str)),
            )
        }
    }
}

/// Words joined into one shell line that reads back as the same words (`shlex` quoting).
pub fn shell_join<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words
        .into_iter()
        .map(|w| match shlex::try_quote(w) {
            Ok(q) => q.into_owned(),
            // A NUL byte cannot be quoted (nor run): show it escaped.
            Err(_) => format!("{w:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Work that needs IO. Every action carries the agent's request id and must be answered once.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    ReadFile {
        id: Value,
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    },
    /// Read the file on disk, then call `Mapper::write_gate` (the gate shows the diff).
    PrepareWrite {
        id: Value,
        path: PathBuf,
        content: String,
    },
    /// Write the file, if it is still what the card showed: `base` is the SHA-256 of the file
    /// then (`None`: it did not exist). Anything else is refused, not overwritten.
    WriteFile {
        id: Value,
        path: PathBuf,
        content: String,
        base: Option<switchboard_backend::contain::Digest>,
    },
    CreateTerminal {
        id: Value,
        spec: TerminalSpec,
    },
    /// An allowed permission that approves edits: read each file as it is now (beneath the
    /// session directory), hand them to `Mapper::approved_files`, then send `line` (the
    /// answer), so the agent's write cannot arrive before the file was read.
    AnswerAfterSnapshot {
        line: String,
        gate: String,
        paths: Vec<PathBuf>,
    },
    /// A remark for the recording (`note` lines): why something happened without a gate.
    Note(String),
    TerminalOutput {
        id: Value,
        terminal_id: String,
    },
    WaitForExit {
        id: Value,
        terminal_id: String,
    },
    KillTerminal {
        id: Value,
        terminal_id: String,
    },
    ReleaseTerminal {
        id: Value,
        terminal_id: String,
    },
}

/// Settings of one ACP session.
#[derive(Clone, Debug, Default)]
pub struct AcpOptions {
    /// Absolute working directory of the session; fs requests are confined to it.
    pub cwd: PathBuf,
    /// `checkfu.builtin_tools` for `session/new`.
    pub builtin_tools: Option<Vec<String>>,
    /// `checkfu.output_schema` for `session/new`.
    pub output_schema: Option<Value>,
    /// Do not offer the client `fs` capability (a profile's `fs = false`, `--no-fs`): some
    /// agents (gemini-cli) cannot create files through it. Calls to it are refused.
    pub withhold_fs: bool,
    /// Do not offer the client `terminal` capability (`terminal = false`, `--no-terminal`).
    pub withhold_terminal: bool,
}
