//! The host's one-answer guard, with two clients on real connections and a real `App`.

use super::*;
use crate::ui::theme::Theme;
use switchboard_core::input::{KeyCode, KeyEvent, KeyModifiers};
use switchboard_core::msg::BackendEvent;
use switchboard_core::state::{SessionId, Settings};
use tokio::net::UnixStream;

use crate::test_gates::{Quiet, next_answer};

fn open_gate(app: &mut App, id: &str) {
    let gate = crate::test_gates::bash_permission(id, &format!("echo {id}"));
    app.apply(Msg::Backend {
        session: SessionId::FIRST,
        at_ms: 0,
        event: BackendEvent::GateOpen(Box::new(gate)),
    });
}

/// Attach a client over a socket pair; its far end is kept open (and drained) by the test.
async fn attach(
    host: &mut Host,
    app: &mut App,
    id: u64,
    events: &mpsc::Sender<ConnEvent>,
    rx: &mut mpsc::Receiver<ConnEvent>,
) -> UnixStream {
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    conn::spawn(id, ours, events.clone());
    let hello = wire::Hello {
        version: wire::VERSION,
        want: Want::Attach {
            cols: 100,
            rows: 30,
        },
    };
    wire::write_msg(&mut theirs, &hello).await.unwrap();
    let ev = rx.recv().await.unwrap();
    host.on_conn(app, ev);
    theirs
}

fn key(c: char, seen: u64) -> ClientMsg {
    ClientMsg::Key {
        key: KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        seen,
    }
}

/// The host draws every client's frame and each client puts it on its terminal at once,
/// as `attach` does: it says so (`ClientMsg::Shown`).
fn draw(host: &mut Host, app: &mut App) {
    host.draw(app);
    let drawn: Vec<(u64, u64)> = host.clients.iter().map(|c| (c.id, c.last_seq())).collect();
    for (id, seq) in drawn {
        host.on_client(app, id, ClientMsg::Shown { seq });
    }
}

fn seq(host: &Host, id: u64) -> u64 {
    host.clients.iter().find(|c| c.id == id).unwrap().last_seq()
}

fn notice(host: &Host, id: u64) -> Option<String> {
    host.clients
        .iter()
        .find(|c| c.id == id)
        .unwrap()
        .notice
        .clone()
}

/// Two clients on one card: A moves the shared card to another gate; B's `y`, typed against
/// the frame that showed the first gate, is refused (it would have answered a gate B never
/// saw). Once B's screen shows the card as it is, B's `y` answers that gate, once.
#[tokio::test]
async fn a_key_typed_against_a_card_another_client_moved_is_refused() {
    let (sent, mut commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    open_gate(&mut app, "g1");
    open_gate(&mut app, "g2");
    let mut host = Host::new("t", &app.state);
    let (events, mut rx) = mpsc::channel(16);
    let _a = attach(&mut host, &mut app, 1, &events, &mut rx).await;
    let _b = attach(&mut host, &mut app, 2, &events, &mut rx).await;
    draw(&mut host, &mut app);
    // Both open the card on the oldest gate.
    host.on_client(&mut app, 1, key('g', seq(&host, 1)));
    draw(&mut host, &mut app);
    host.on_client(&mut app, 2, key('g', seq(&host, 2)));
    draw(&mut host, &mut app);
    let b_saw = seq(&host, 2);
    assert_eq!(
        host.clients[1]
            .shown_at(b_saw)
            .unwrap()
            .gate
            .as_ref()
            .map(|g| g.id.as_str()),
        Some("g1")
    );
    // A puts the next gate up; B types `y` before its screen shows that.
    host.on_client(&mut app, 1, key(']', seq(&host, 1)));
    host.on_client(&mut app, 2, key('y', b_saw));
    let n = notice(&host, 2).expect("B is told");
    assert!(n.contains("another terminal"), "{n}");
    assert_eq!(app.state.pending_total(), 2, "nothing was answered");
    // A's own keys are not judged against A's own earlier ones: type-ahead works.
    assert!(notice(&host, 1).is_none());
    // B's screen catches up: its `y` answers the gate it now shows, once.
    draw(&mut host, &mut app);
    let shows = host.clients[1]
        .shown_at(seq(&host, 2))
        .unwrap()
        .gate
        .clone()
        .unwrap();
    // At once, it is held: the card changed on B's screen in the frame just drawn for it
    // (the settle time, measured per client). Once settled, it answers.
    host.on_client(&mut app, 2, key('y', seq(&host, 2)));
    assert_eq!(
        notice(&host, 2).as_deref(),
        Some(switchboard_core::update::HELD)
    );
    assert_eq!(app.state.pending_total(), 2, "nothing was answered");
    tokio::time::sleep(Duration::from_millis(app.state.settings.settle_ms + 50)).await;
    host.on_client(&mut app, 2, key('y', seq(&host, 2)));
    assert!(notice(&host, 2).is_none(), "{:?}", notice(&host, 2));
    assert_eq!(app.state.pending_total(), 1);
    let answered = next_answer(&mut commands).await;
    assert_eq!(answered, shows.id);
    assert!(commands.try_recv().is_err(), "one answer");
    // A key that goes to no gate passes however stale its frame: Ctrl-D on the card asks
    // to quit (one gate still waits), and the question's Esc closes it.
    let stale = seq(&host, 2);
    host.on_client(&mut app, 2, key('g', stale));
    let ctrl_d = ClientMsg::Key {
        key: KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL),
        seen: stale - 1,
    };
    host.on_client(&mut app, 2, ctrl_d);
    assert!(notice(&host, 2).is_none(), "{:?}", notice(&host, 2));
    assert_eq!(
        app.state.overlay,
        Some(switchboard_core::state::Overlay::ConfirmQuit)
    );
}

/// A card's settle time runs from when the client's terminal showed it, not from when the
/// host drew the frame: a frame still on its way (a slow client, a slow link) does not
/// count, and a `y` typed a moment after the frame arrived is held however long ago the host
/// drew it. A frame number the host never drew changes nothing.
#[tokio::test]
async fn settle_time_runs_from_when_the_client_showed_the_card() {
    let (sent, mut commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    let settle = Duration::from_millis(app.state.settings.settle_ms);
    let mut host = Host::new("t", &app.state);
    let (events, mut rx) = mpsc::channel(16);
    let _a = attach(&mut host, &mut app, 1, &events, &mut rx).await;
    draw(&mut host, &mut app);
    // A gate opens and takes the keyboard; the frame with its card is drawn, and reaches the
    // terminal only after the settle time.
    open_gate(&mut app, "g1");
    host.draw(&mut app);
    let with_card = seq(&host, 1);
    tokio::time::sleep(settle + Duration::from_millis(50)).await;
    host.on_client(&mut app, 1, key('y', with_card));
    assert_eq!(
        notice(&host, 1).as_deref(),
        Some(switchboard_core::update::HELD),
        "drawn long ago, never shown: held"
    );
    // A hostile frame number is ignored.
    host.on_client(&mut app, 1, ClientMsg::Shown { seq: u64::MAX });
    host.on_client(&mut app, 1, ClientMsg::Shown { seq: with_card });
    host.on_client(&mut app, 1, key('y', with_card));
    assert_eq!(
        notice(&host, 1).as_deref(),
        Some(switchboard_core::update::HELD),
        "shown just now: held"
    );
    assert_eq!(app.state.pending_total(), 1, "nothing was answered");
    // The frames after it show the same card: it stays on screen since it was first shown.
    draw(&mut host, &mut app);
    tokio::time::sleep(settle + Duration::from_millis(50)).await;
    host.on_client(&mut app, 1, key('y', seq(&host, 1)));
    assert!(notice(&host, 1).is_none(), "{:?}", notice(&host, 1));
    assert_eq!(app.state.pending_total(), 0);
    let answered = next_answer(&mut commands).await;
    assert_eq!(answered, "g1");
}

/// A paste the client cut to fit a frame goes in as cut, and its client is told.
#[tokio::test]
async fn a_paste_cut_by_the_client_says_so() {
    let (sent, _commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    let mut host = Host::new("t", &app.state);
    let (events, mut rx) = mpsc::channel(16);
    let _a = attach(&mut host, &mut app, 1, &events, &mut rx).await;
    draw(&mut host, &mut app);
    let paste = |cut| ClientMsg::Paste {
        text: "ls".into(),
        seen: 1,
        cut,
    };
    host.on_client(&mut app, 1, paste(false));
    assert!(notice(&host, 1).is_none());
    host.on_client(&mut app, 1, paste(true));
    let n = notice(&host, 1).expect("told");
    assert!(n.contains("only its first 128 KiB"), "{n}");
}

/// A paste flood into one client's prompt: 40 pastes of a frame's worth (40 MB, as a client
/// that ignores its own cut could send) leave the prompt at its bound, the client is told
/// what was not taken, and a frame drawn meanwhile costs what it shows. A key typed past the
/// bound is refused the same way; one that fits is taken without a word.
#[tokio::test]
async fn a_paste_flood_is_bounded_and_its_client_told() {
    use switchboard_core::text_field::MAX_BYTES;
    let (sent, _commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    let mut host = Host::new("t", &app.state);
    let (events, mut rx) = mpsc::channel(16);
    let _a = attach(&mut host, &mut app, 1, &events, &mut rx).await;
    draw(&mut host, &mut app);
    let chunk = "x".repeat(wire::MAX_FROM_CLIENT - 64);
    let t = std::time::Instant::now();
    for _ in 0..40 {
        host.on_client(
            &mut app,
            1,
            ClientMsg::Paste {
                text: chunk.clone(),
                seen: seq(&host, 1),
                cut: false,
            },
        );
        draw(&mut host, &mut app);
    }
    assert_eq!(app.state.prompt.len(), MAX_BYTES);
    let n = notice(&host, 1).expect("told");
    assert!(n.contains("at most 1024 KiB"), "{n}");
    host.on_client(&mut app, 1, key('z', seq(&host, 1)));
    assert!(
        notice(&host, 1).is_some(),
        "a key past the bound is refused"
    );
    // Room again: a key that fits goes in, and the notice is gone.
    let ctrl_w = ClientMsg::Key {
        key: KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL),
        seen: seq(&host, 1),
    };
    host.on_client(&mut app, 1, ctrl_w);
    host.on_client(&mut app, 1, key('z', seq(&host, 1)));
    assert!(notice(&host, 1).is_none(), "{:?}", notice(&host, 1));
    assert_eq!(app.state.prompt_text(), "z");
    // (It took 12 s of the host's loop before: the prompt was 40 MB, copied whole for every
    // frame. Generous for a debug build on a busy machine; the bound is what matters.)
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

/// Clients are bounded in number (the next one is refused and told why) and in the screen
/// each takes (a hello of 1000 × 400 is drawn at most 500 × 200).
#[tokio::test]
async fn clients_are_bounded_in_number_and_in_screen() {
    let (sent, _commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    let mut host = Host::new("t", &app.state);
    let (events, mut rx) = mpsc::channel(16);
    let mut ends = Vec::new();
    for id in 1..=MAX_CLIENTS as u64 {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        conn::spawn(id, ours, events.clone());
        let hello = wire::Hello {
            version: wire::VERSION,
            want: Want::Attach {
                cols: 1000,
                rows: 400,
            },
        };
        wire::write_msg(&mut theirs, &hello).await.unwrap();
        host.on_conn(&mut app, rx.recv().await.unwrap());
        ends.push(theirs);
    }
    assert_eq!(host.clients.len(), MAX_CLIENTS);
    assert!(
        host.clients.iter().all(|c| c.size
            == (
                super::super::client::MAX_COLS,
                super::super::client::MAX_ROWS
            )),
        "screens clamped"
    );
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    conn::spawn(99, ours, events.clone());
    let hello = wire::Hello {
        version: wire::VERSION,
        want: Want::Attach { cols: 80, rows: 24 },
    };
    wire::write_msg(&mut theirs, &hello).await.unwrap();
    host.on_conn(&mut app, rx.recv().await.unwrap());
    assert_eq!(
        host.clients.len(),
        MAX_CLIENTS,
        "the next one is not let in"
    );
    let answer: HostMsg = tokio::time::timeout(
        Duration::from_secs(5),
        wire::read_msg(&mut theirs, wire::MAX_FROM_HOST),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let HostMsg::Refused { reason } = answer else {
        panic!("{answer:?}")
    };
    assert!(reason.contains("32 clients are attached"), "{reason}");
    // One leaves: a place is free again.
    host.on_conn(&mut app, ConnEvent::Gone(1, None));
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    conn::spawn(100, ours, events.clone());
    wire::write_msg(&mut theirs, &hello).await.unwrap();
    host.on_conn(&mut app, rx.recv().await.unwrap());
    assert_eq!(host.clients.len(), MAX_CLIENTS);
    assert!(host.clients.iter().any(|c| c.id == 100));
}
