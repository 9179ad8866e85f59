//! `stop` bounded both ways: against a host that never answers, and one that answers but
//! never finishes stopping. Each fake host is a socket in a private directory.

use super::*;

fn temp(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sb-stop-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    place::private_dir(&d).unwrap();
    d
}

/// A host that is there (its socket listens) but never reads a byte, as a SIGSTOPped one:
/// `stop` gives up after the 5 s `ls` allows, and says so.
#[tokio::test]
async fn a_host_that_does_not_answer_is_given_up_on() {
    let d = temp("wedged");
    let _listener = tokio::net::UnixListener::bind(place::socket_path(&d, "w")).unwrap();
    let t = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(20), stop(&d, "w"))
        .await
        .expect("stop hung on a host that does not answer");
    let e = r.unwrap_err();
    assert!(e.contains("did not answer within 5 s"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    let _ = std::fs::remove_dir_all(&d);
}

/// A host that answers a status at once but never says it stopped: the wait is bounded and
/// the message says the host goes on stopping by itself.
#[tokio::test]
async fn a_host_slow_to_stop_is_waited_for_a_bounded_time() {
    let d = temp("slow");
    let listener = tokio::net::UnixListener::bind(place::socket_path(&d, "s")).unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let hello: wire::Hello = wire::read_msg(&mut s, wire::MAX_FROM_CLIENT)
                .await
                .unwrap()
                .unwrap();
            if hello.want == wire::Want::Status {
                let st = wire::HostMsg::Status(wire::Status {
                    name: "s".into(),
                    pid: 1,
                    sessions: 0,
                    waiting: 0,
                    notified: 0,
                    clients: 0,
                });
                wire::write_msg(&mut s, &st).await.unwrap();
            } else {
                // Asked to stop: it never finishes.
                held.push(s);
            }
        }
    });
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        stop_within(&d, "s", Duration::from_millis(300)),
    )
    .await
    .expect("stop waited without bound");
    let e = r.unwrap_err();
    assert!(e.contains("has not finished within"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
