//! `switchboard demo-gateway`: the fake host B as a command, playing a short scripted remote
//! agent so the gateway can be seen without a remote host. It makes a small project in a
//! temporary directory, prints the `switchboard gateway` line to run against it, and then
//! plays: info, list, read, a write (a gate with its diff), a command (a gate), its output,
//! and a question. After a reconnect it re-sends the unanswered calls with the same ids.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use super::fake_host::{self, FakeHost};
use switchboard_gateway::validate::sha256_hex;

const WS: &str = "demo";
const INTENT: &str = "tidy the README";
const SESSION: &str = "conversation-1";
/// A demo's token: printed on purpose, it guards nothing but this loopback demo.
const ENV: &str = "SWITCHBOARD_DEMO_GATEWAY_TOKEN";

fn steps(readme_sha: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("c1", "workspace_info", json!({})),
        ("c2", "workspace_list", json!({})),
        ("c3", "workspace_read", json!({"path": "README.md"})),
        (
            "c4",
            "workspace_write",
            json!({"path": "README.md", "content": "# Demo project\n\nA tidy README, written by a remote agent.\n", "expectedSha256": readme_sha}),
        ),
        (
            "c5",
            "workspace_exec",
            json!({"command": "ls -la && wc -l README.md", "timeoutMs": 10000}),
        ),
        (
            "c6",
            "workspace_ask",
            json!({"question": "Shall I also add a CHANGELOG.md?"}),
        ),
    ]
}

pub fn main(port: u16) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: {e}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(play(port))
}

async fn play(port: u16) -> ExitCode {
    let dir = std::env::temp_dir().join(format!("switchboard-demo-gateway-{}", std::process::id()));
    let readme = "# demo\nsome  text   to tidy\n";
    if let Err(e) = std::fs::create_dir_all(dir.join("src"))
        .and_then(|_| std::fs::write(dir.join("README.md"), readme))
        .and_then(|_| std::fs::write(dir.join("src/main.rs"), "fn main() {}\n"))
    {
        eprintln!("switchboard: cannot make the demo project: {e}");
        return ExitCode::from(1);
    }
    let token = format!(
        "demo-{}",
        &sha256_hex(format!("{:?}{}", std::time::SystemTime::now(), std::process::id()).as_bytes())
            [..24]
    );
    let mut host = match FakeHost::start(port, WS, &token).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("switchboard: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "fake ai-gateway host on {} (workspace {WS:?}), demo project in {}",
        host.base_url(),
        dir.display()
    );
    println!("In another terminal run:\n");
    println!("  export {ENV}={token}");
    println!(
        "  switchboard gateway --url {} --workspace {WS} --root {} --intention {INTENT:?} --token-env {ENV}\n",
        host.base_url(),
        dir.display()
    );
    let script = steps(&sha256_hex(readme.as_bytes()));
    let mut next = 0;
    while next < script.len() {
        let Some(mut c) = host.accept(Duration::from_secs(3600)).await else {
            println!("no connection within an hour; giving up");
            return ExitCode::from(1);
        };
        println!("switchboard connected");
        let _ = c.send(r#"{"type":"ready","protocol":1}"#.into()).await;
        while next < script.len() {
            let (id, tool, args) = &script[next];
            println!("→ {id} {tool} {args}");
            if !c
                .send(fake_host::call(id, WS, SESSION, INTENT, tool, args.clone()))
                .await
            {
                break;
            }
            let Some(r) = c.result_for(id, Duration::from_secs(3600)).await else {
                println!("connection lost; {id} will be re-sent with the same id");
                break;
            };
            let v: Value = serde_json::from_str(&r).unwrap_or_default();
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            println!(
                "← {id} {}: {}",
                fake_host::code_of(&r),
                text.chars().take(300).collect::<String>()
            );
            if *tool == "workspace_exec" && fake_host::code_of(&r) == "ok" {
                let cid = v["result"]["structuredContent"]["commandId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                tokio::time::sleep(Duration::from_millis(500)).await;
                let pid = format!("{id}-poll");
                c.send(fake_host::call(
                    &pid,
                    WS,
                    SESSION,
                    INTENT,
                    "workspace_poll",
                    json!({"commandId": cid}),
                ))
                .await;
                if let Some(p) = c.result_for(&pid, Duration::from_secs(60)).await {
                    let v: Value = serde_json::from_str(&p).unwrap_or_default();
                    println!(
                        "← output:\n{}",
                        v["result"]["structuredContent"]["output"]
                            .as_str()
                            .unwrap_or_default()
                    );
                }
            }
            next += 1;
        }
    }
    println!("script done; the demo project stays in {}", dir.display());
    ExitCode::SUCCESS
}
