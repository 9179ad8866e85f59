//! The built binaries end to end: `switchboard demo-gateway` (the fake host as a command)
//! and `switchboard gateway` on a pseudo-terminal connecting to it on loopback; the owner
//! approves the write and the command and answers the question with keys.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Kills the demo host if the test fails before it ends on its own.
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        // SAFETY: signalling the child this test started (already reaped is harmless: ESRCH).
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}

#[test]
fn demo_gateway_and_gateway_talk_on_loopback() {
    demo_host_served(false);
}

/// The same channel as a `[[session]]` profile of kind `gateway`, started by `switchboard up`.
#[test]
fn up_starts_a_gateway_profile() {
    demo_host_served(true);
}

fn demo_host_served(via_up: bool) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut host = Command::new(switchboard())
        .args(["demo-gateway", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reap_host = Reap(host.id());
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let (mut project, mut token) = (None, None);
    let mut line = String::new();
    while project.is_none() || token.is_none() {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "demo-gateway ended early"
        );
        if let Some(p) = line.trim().split("demo project in ").nth(1) {
            project = Some(PathBuf::from(p));
        }
        if let Some(t) = line
            .trim()
            .strip_prefix("export SWITCHBOARD_DEMO_GATEWAY_TOKEN=")
        {
            token = Some(t.to_string());
        }
    }
    let (project, token) = (project.unwrap(), token.unwrap());
    let host_log = Arc::new(Mutex::new(String::new()));
    {
        let log = host_log.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            log.lock().unwrap().push_str(&s);
        });
    }

    let data = std::env::temp_dir().join(format!("sb-gw-bin-{}-{via_up}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(switchboard());
    if via_up {
        let config = data.join("profiles.toml");
        std::fs::write(
            &config,
            format!(
                "[[session]]\nname = \"remote\"\nbackend = \"gateway\"\nurl = \"ws://127.0.0.1:{port}\"\n\
                 workspace = \"demo\"\nroot = {:?}\nintention = \"tidy the README\"\n\
                 token_env = \"SWITCHBOARD_DEMO_GATEWAY_TOKEN\"\n",
                project.to_str().unwrap()
            ),
        )
        .unwrap();
        cmd.args(["up", "--config", config.to_str().unwrap()]);
    } else {
        cmd.args([
            "gateway",
            "--url",
            &format!("ws://127.0.0.1:{port}"),
            "--workspace",
            "demo",
            "--root",
            project.to_str().unwrap(),
            "--intention",
            "tidy the README",
            "--token-env",
            "SWITCHBOARD_DEMO_GATEWAY_TOKEN",
        ]);
    }
    cmd.env("SWITCHBOARD_DEMO_GATEWAY_TOKEN", &token);
    cmd.env("SWITCHBOARD_DATA_DIR", &data);
    cmd.env("SWITCHBOARD_CONFIG_DIR", &data);
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    let reap_tui = child.process_id().map(Reap);
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    )));
    {
        let parser = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                parser.lock().unwrap().process(&buf[..n]);
            }
        });
    }
    let screen = || parser.lock().unwrap().screen().contents();
    let wait = |what: &str| {
        let t = Instant::now();
        while !screen().contains(what) {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "waiting for {what:?}\n{}",
                screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The conversation is a session of its own: its card waits in the inbox, and a
    // background session never takes the keyboard. Leave the prompt (Tab), jump to it (`g`).
    wait("1 waiting");
    writer.write_all(b"\t").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    writer.write_all(b"g").unwrap();
    wait("+# Demo project");
    assert!(
        screen().contains("conversation "),
        "the conversation's session is in the tree\n{}",
        screen()
    );
    if via_up {
        assert!(
            screen().contains("remote"),
            "the profile names the channel's session\n{}",
            screen()
        );
    }
    // Each card's keys act once it has been on screen for the settle time (300 ms).
    let settle = || std::thread::sleep(Duration::from_millis(400));
    settle();
    writer.write_all(b"y").unwrap();
    wait("ls -la && wc -l README.md");
    settle();
    writer.write_all(b"y").unwrap();
    wait("Shall I also add a CHANGELOG.md?");
    settle();
    writer.write_all(b"\r").unwrap();
    wait("your answer");
    writer.write_all(b"not yet\r").unwrap();
    let status = host.wait().unwrap();
    // Reaped: its pid may be reused, so never signal it again.
    std::mem::forget(reap_host);
    assert!(status.success(), "the scripted host finished");
    std::thread::sleep(Duration::from_millis(300));
    let log = host_log.lock().unwrap().clone();
    assert!(log.contains("← c4 ok"), "{log}");
    assert!(log.contains("← c6 ok"), "{log}");
    assert!(
        log.contains("README.md"),
        "the command's output came back: {log}"
    );
    assert!(
        std::fs::read_to_string(project.join("README.md"))
            .unwrap()
            .starts_with("# Demo project")
    );
    writer.write_all(b"\x04").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    writer.write_all(b"y").unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "switchboard did not quit\n{}",
            screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::mem::forget(reap_tui);
    let files = files_under(&data);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("gateway")),
        "{files:?}"
    );
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(!text.contains(&token), "the token is in {}", f.display());
    }
    let _ = std::fs::remove_dir_all(&project);
}
