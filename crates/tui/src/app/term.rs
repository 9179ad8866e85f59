//! The real terminal: modes on and off (also on panic and signals), and the event loop.

use std::io::{self, Write, stdout};
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    EventStream,
};
use crossterm::terminal::{
    self, BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen, SetTitle,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio_stream::StreamExt;

use super::App;
use super::frames::{FRAME_INTERVAL, FrameScheduler};
use switchboard_core::Msg;
use switchboard_record::now_ms;

/// A TUI command refuses to start without a terminal on both ends.
pub fn need_terminal() -> Result<(), String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err("the TUI needs a terminal: stdin and stdout must be a tty".into())
    }
}

/// Undo every terminal mode we set. Safe to call more than once.
pub fn restore() {
    let mut out = stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        SetTitle(""),
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// OSC 52: ask the terminal to put `text` on the clipboard (works over ssh and tmux).
pub fn osc52(text: &str) -> Vec<u8> {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes())).into_bytes()
}

pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Show `text` in `$PAGER` (else `less -R`) with the TUI suspended; the terminal is given
/// back in its normal state and taken again afterwards.
pub(crate) fn page(text: &str) -> io::Result<()> {
    restore();
    run_viewer(&viewer(), text)
}

/// Hand `text` to `viewer` (a shell command taking the file as `$1`) in a private file.
/// The file holds the text neutralized: `less -R` would pass an agent's colours and OSC 8
/// links, `cat` or an editor its title and OSC 52 clipboard writes. Copies (`c`) keep the
/// exact bytes; this is only what is shown.
fn run_viewer(viewer: &str, text: &str) -> io::Result<()> {
    let path = private_temp_file(&switchboard_core::text::neutralize(text))?;
    let mut c = std::process::Command::new("sh");
    // The owner's pager or editor: their environment, less any secret we read.
    switchboard_backend::child_env::scrub(&mut c, false);
    let status = c
        .arg("-c")
        .arg(format!("{viewer} \"$1\""))
        .arg("switchboard-pager")
        .arg(&path)
        .status();
    let _ = std::fs::remove_file(&path);
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir);
    }
    status.map(|_| ())
}

/// `$PAGER`, else `less -R` when installed, else `$EDITOR` (the file is read-only), else `more`.
fn viewer() -> String {
    let set = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(p) = set("PAGER") {
        return p;
    }
    let on_path = |bin: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(bin).is_file()))
    };
    if on_path("less") {
        return "less -R".into();
    }
    set("EDITOR").unwrap_or_else(|| "more".into())
}

/// Write `text` to a new file in a new directory only we can enter (no predictable name to
/// race, no symlink to follow).
fn private_temp_file(text: &str) -> io::Result<std::path::PathBuf> {
    let base = std::env::temp_dir();
    let mut attempt = 0u32;
    loop {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "switchboard-{}-{nanos:x}-{attempt}",
            std::process::id()
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Ok(()) => {
                let path = dir.join("view.txt");
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                f.write_all(text.as_bytes())?;
                // Read-only: an editor used as the viewer must not invite edits.
                #[cfg(unix)]
                std::fs::set_permissions(
                    &path,
                    std::os::unix::fs::PermissionsExt::from_mode(0o400),
                )?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Owns the terminal modes: the constructor enables them, `Drop` and the panic hook undo them.
pub struct TerminalGuard;

impl TerminalGuard {
    pub fn enter() -> io::Result<TerminalGuard> {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
        terminal::enable_raw_mode()?;
        let guard = TerminalGuard;
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture
        )?;
        Ok(guard)
    }
}

impl TerminalGuard {
    /// Take the terminal again after a suspension (pager).
    pub fn resume() -> io::Result<()> {
        terminal::enable_raw_mode()?;
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture
        )
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Run the app on the real terminal until the user quits.
///
/// However the loop ends (quit, signal, or a terminal that went away), the order is the same:
/// answer what is pending, record it, stop the agent's process group, and only then give the
/// terminal back, ignoring errors from a terminal that is gone.
pub async fn run(mut app: App) -> io::Result<App> {
    let (guard, result) = match TerminalGuard::enter() {
        Ok(guard) => (Some(guard), event_loop(&mut app).await),
        Err(e) => (None, Err(e)),
    };
    if !app.quit {
        // The terminal failed or closed under us: still answer what is pending.
        quit_on_signal(&mut app);
    }
    app.finish().await;
    drop(guard);
    result.map(|()| app)
}

/// Everything between entering and leaving the terminal; errors end it early, and `run` then
/// shuts the session down the same way as a quit.
async fn event_loop(app: &mut App) -> io::Result<()> {
    // Never dropped: ratatui's `Drop` shows the cursor and `eprintln!`s a failure, which
    // panics when the terminal is gone. `restore` (through the guard) does that work instead.
    let mut terminal = std::mem::ManuallyDrop::new(Terminal::new(CrosstermBackend::new(stdout()))?);
    // Not `terminal.clear()`: ratatui 0.30 asks the terminal for the cursor position there
    // (`ESC [6n`) and fails after 2 s on terminals that never answer. A full-screen viewport
    // needs no cursor position; clear directly.
    execute!(
        terminal.backend_mut(),
        terminal::Clear(terminal::ClearType::All)
    )?;
    let size = terminal.size()?;
    app.apply(Msg::Resize(size.width, size.height));
    let mut input = EventStream::new();
    let mut frames = FrameScheduler::new(FRAME_INTERVAL);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut title = String::new();
    let mut backend_open = true;
    // What this terminal's frames showed of the card, and since when (issue 38).
    let mut settle = crate::settle::Settle::default();
    #[cfg(unix)]
    let (mut sigterm, mut sighup) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        )
    };
    loop {
        tokio::select! {
            biased;
            ev = input.next() => {
                let msg = match ev {
                    // Pointer motion (any-motion tracking reports every move) does nothing:
                    // it must not redraw, let alone at the input frame rate.
                    Some(Ok(e)) => super::input::msg(e),
                    Some(Err(e)) => return Err(e),
                    None => break,
                };
                if let Some(msg) = msg {
                    let msg = match msg {
                        Msg::Key(k) if settle.holds(&app.state, k, 0, std::time::Instant::now()) => {
                            Msg::Held
                        }
                        m => m,
                    };
                    app.apply(msg);
                    frames.input();
                }
            }
            _ = sigterm.recv() => quit_on_signal(app),
            _ = sighup.recv() => quit_on_signal(app),
            () = frames.due(app.dirty) => {
                if app.bells > 0 {
                    app.bells = 0;
                    let _ = terminal.backend_mut().write_all(b"\x07");
                }
                let t = app.title();
                if t != title {
                    let _ = execute!(terminal.backend_mut(), SetTitle(&t));
                    title = t;
                }
                execute!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
                app.draw(&mut terminal)?;
                execute!(terminal.backend_mut(), EndSynchronizedUpdate)?;
                settle.drawn(crate::settle::Card::of(&app.state, 0), std::time::Instant::now());
                frames.drawn();
                app.dirty = false;
            }
            m = app.next_backend(), if backend_open || app.has_sources() => match m {
                Some(m) => {
                    app.apply(m);
                    app.drain_backend_for(super::DRAIN_MAX, super::DRAIN_TIME);
                }
                // The backend ended by itself; the UI stays open to read.
                None => backend_open = false,
            },
            _ = tick.tick() => {
                // Elapsed times move only while something runs; an idle screen stays idle.
                if app.busy() {
                    app.apply(Msg::Tick(now_ms()));
                }
            }
        }
        for text in std::mem::take(&mut app.copies) {
            let _ = terminal.backend_mut().write_all(&osc52(&text));
            let _ = terminal.backend_mut().flush();
        }
        let pages = std::mem::take(&mut app.pages);
        if !pages.is_empty() {
            // The pager owns the terminal meanwhile: no event reader may steal its keys.
            drop(input);
            for text in pages {
                if let Err(e) = page(&text) {
                    app.state.status_line = Some(format!("pager failed: {e}"));
                }
            }
            TerminalGuard::resume()?;
            // Full redraw without a cursor-position query: clear, then empty both buffers.
            execute!(
                terminal.backend_mut(),
                terminal::Clear(terminal::ClearType::All)
            )?;
            terminal.swap_buffers();
            terminal.swap_buffers();
            input = EventStream::new();
            app.dirty = true;
        }
        if app.quit {
            break;
        }
    }
    Ok(())
}

/// SIGTERM/SIGHUP, a lost terminal: answer every gate fail-closed and leave, the workspace
/// left open for `resume` (a reboot stops it this way).
pub(crate) fn quit_on_signal(app: &mut App) {
    app.interrupted = true;
    quit_now(app);
}

/// Stop as asked (`switchboard stop`): every gate answered fail-closed, the workspace closed.
pub(crate) fn quit_now(app: &mut App) {
    use switchboard_core::input::{KeyCode, KeyEvent, KeyModifiers};
    app.state.overlay = None;
    app.apply(Msg::Key(KeyEvent::new(
        KeyCode::Char('d'),
        KeyModifiers::CONTROL,
    )));
    if app.state.overlay.is_some() {
        app.apply(Msg::Key(KeyEvent::new(
            KeyCode::Char('y'),
            KeyModifiers::NONE,
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a pager (`cat` here, as with `PAGER=cat`) receives: no control, C1 or bidi
    /// character, and each one shown visibly.
    #[test]
    fn the_pager_gets_neutralized_text() {
        let dir = std::env::temp_dir().join(format!("sb-pager-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("seen");
        let hostile = "title\u{1b}]0;pwned\u{7} link\u{1b}]8;;http://x\u{1b}\\y\u{1b}]8;;\u{1b}\\ \
                       clip\u{1b}]52;c;cm0gLXJmIH4=\u{7} red\u{1b}[31m c1\u{9b}2J bidi\u{202e}txt.exe";
        run_viewer(&format!("cat >'{}'", out.display()), hostile).unwrap();
        let seen = std::fs::read_to_string(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            !seen.chars().any(switchboard_core::text::is_hostile),
            "{seen:?}"
        );
        assert!(seen.contains("^[]52;c;cm0gLXJmIH4=^G"), "{seen}");
        assert!(seen.contains("c1<U+009B>2J bidi<U+202E>txt.exe"), "{seen}");
    }

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }
}
