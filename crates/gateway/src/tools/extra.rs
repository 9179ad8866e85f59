//! `workspace_tools` / `workspace_tool`: extra tools the owner declares in `config.toml`:
//!
//! ```toml
//! [[gateway.tool]]
//! name = "test"
//! description = "Run the unit tests"
//! input_schema = { type = "object", properties = { filter = { type = "string" } }, additionalProperties = false }
//! argv = ["cargo", "test", "--quiet"]
//! effect = "command"   # read | edit | command (default): the gate policy it inherits
//! ```
//!
//! The command runs in the project root with the arguments as JSON on stdin and answers on
//! stdout (JSON, or text). Its output is bounded and it is killed at the timeout.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::env::ExecEnv;
use crate::codec::{Code, Refusal};
use crate::validate::Class;
use switchboard_backend::contain::Root;

/// Most stdout kept from an extra tool.
pub const TOOL_OUTPUT: usize = 1024 * 1024;
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct ExtraTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub argv: Vec<String>,
    pub class: Class,
}

/// Read `[[gateway.tool]]` entries from a config text. A malformed entry is an error: the
/// owner should know their tool is not offered.
pub fn parse(text: &str) -> Result<Vec<ExtraTool>, String> {
    let doc: toml::Value = toml::from_str(text).map_err(|e| e.to_string())?;
    let Some(list) = doc.get("gateway").and_then(|g| g.get("tool")) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or("gateway.tool must be an array of tables")?;
    let mut out = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let s = |k: &str| t.get(k).and_then(toml::Value::as_str).map(str::to_string);
        let name = s("name").ok_or(format!("gateway.tool[{i}]: name missing"))?;
        let argv: Vec<String> = t
            .get("argv")
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if argv.is_empty() {
            return Err(format!("gateway.tool {name}: argv missing or empty"));
        }
        let schema = match t.get("input_schema") {
            Some(v) => serde_json::to_value(v).map_err(|e| e.to_string())?,
            None => json!({"type": "object"}),
        };
        jsonschema::draft202012::new(&schema)
            .map_err(|e| format!("gateway.tool {name}: input_schema: {e}"))?;
        let class = match s("effect").as_deref() {
            Some("read") => Class::Read,
            Some("edit") => Class::Edit,
            None | Some("command") => Class::Command,
            Some(o) => {
                return Err(format!(
                    "gateway.tool {name}: effect {o:?} is not read, edit or command"
                ));
            }
        };
        out.push(ExtraTool {
            name,
            description: s("description").unwrap_or_default(),
            input_schema: schema,
            argv,
            class,
        });
    }
    Ok(out)
}

/// The tools of the config file at `config` (none when it is absent).
pub fn load(config: &std::path::Path) -> Result<Vec<ExtraTool>, String> {
    match std::fs::read_to_string(config) {
        Ok(t) => parse(&t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// The `workspace_tools` result: MCP `tools/list` shape.
pub fn listing(tools: &[ExtraTool]) -> Value {
    json!({"tools": tools.iter().map(|t| json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": t.input_schema,
    })).collect::<Vec<_>>()})
}

pub fn check_arguments(tool: &ExtraTool, arguments: &Value) -> Result<(), Refusal> {
    let v = jsonschema::draft202012::new(&tool.input_schema)
        .map_err(|e| Refusal::new(Code::Failed, e.to_string()))?;
    let errs: Vec<String> = v
        .iter_errors(arguments)
        .take(3)
        .map(|e| e.to_string())
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Refusal::new(
            Code::SchemaViolation,
            format!("arguments: {}", errs.join("; ")),
        ))
    }
}

/// Run the tool with the allowlist alone for an environment (`ExecEnv::baseline`).
pub fn run(root: &Root, tool: &ExtraTool, arguments: &Value) -> Result<Value, Refusal> {
    run_with(root, tool, arguments, &ExecEnv::baseline())
}

/// Run the tool in the root with `arguments` on stdin and exactly `env` for an environment
/// (the channel's, as for exec: `Commands::env`).
pub fn run_with(
    root: &Root,
    tool: &ExtraTool,
    arguments: &Value,
    env: &ExecEnv,
) -> Result<Value, Refusal> {
    let dir = root
        .dir()
        .try_clone()
        .map_err(|e| Refusal::new(Code::Failed, e.to_string()))?;
    let fd = dir.as_fd().as_raw_fd();
    let mut c = Command::new(&tool.argv[0]);
    env.apply(&mut c);
    c.args(&tool.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            if libc::fchdir(fd) != 0 || libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn().map_err(|e| {
        Refusal::new(
            Code::Failed,
            format!("tool {} did not start: {e}", tool.name),
        )
    })?;
    let pid = child.id() as i32;
    if let Some(mut stdin) = child.stdin.take() {
        let body = arguments.to_string();
        std::thread::spawn(move || {
            let _ = stdin.write_all(body.as_bytes());
        });
    }
    let grab = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(TOOL_OUTPUT as u64 + 1).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = grab(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = grab(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + TOOL_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                // SAFETY: the group the child leads.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    // SAFETY: the group the child leads; anything it left running goes with it.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    let Some(status) = status else {
        return Err(Refusal::new(
            Code::Failed,
            format!("tool {} timed out", tool.name),
        ));
    };
    if out.len() > TOOL_OUTPUT {
        return Err(Refusal::new(
            Code::TooLarge,
            format!("tool {} wrote more than {TOOL_OUTPUT} bytes", tool.name),
        ));
    }
    if !status.success() {
        let tail = String::from_utf8_lossy(&err[err.len().saturating_sub(2000)..]).into_owned();
        return Err(Refusal::new(
            Code::Failed,
            format!("tool {} failed ({status}): {tail}", tool.name),
        ));
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let output = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    Ok(json!({"tool": tool.name, "output": output}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_tools_parse_validate_and_run_with_json_on_stdin() {
        let tools = parse(
            r#"
[[gateway.tool]]
name = "echo"
description = "echo the arguments"
input_schema = { type = "object", properties = { n = { type = "integer" } }, additionalProperties = false }
argv = ["cat"]
effect = "read"
"#,
        )
        .unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].class, Class::Read);
        assert_eq!(listing(&tools)["tools"][0]["name"], "echo");
        assert!(check_arguments(&tools[0], &json!({"n": "x"})).is_err());
        check_arguments(&tools[0], &json!({"n": 2})).unwrap();
        let base = std::env::temp_dir().join(format!("sb-gw-extra-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let root = Root::open(&base).unwrap();
        let r = run(&root, &tools[0], &json!({"n": 2})).unwrap();
        assert_eq!(r["output"], json!({"n": 2}));
        assert!(parse("[[gateway.tool]]\nname = \"x\"\n").is_err());
    }

    /// An extra tool starts with the channel's environment, exactly as exec does.
    #[test]
    fn a_tool_gets_exactly_the_channel_environment() {
        let tools = parse("[[gateway.tool]]\nname = \"env\"\nargv = [\"/usr/bin/env\"]\n").unwrap();
        let env = ExecEnv::build(
            [("SB_GW_TOKEN".into(), "tok-secret".into())],
            &["TOOL_ONLY=1".into()],
            &["SB_GW_TOKEN".into()],
        )
        .unwrap();
        let base = std::env::temp_dir().join(format!("sb-gw-extra-env-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let r = run_with(&Root::open(&base).unwrap(), &tools[0], &json!({}), &env).unwrap();
        assert_eq!(r["output"], "TOOL_ONLY=1\n");
    }
}
