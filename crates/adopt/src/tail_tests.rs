use super::*;
use std::io::Write;

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-tail-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("projects/p")).unwrap();
    d
}

async fn next(rx: &mut mpsc::Receiver<(TailKey, TailMsg)>) -> TailMsg {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the follower said something in time")
        .expect("the follower is alive")
        .1
}

#[tokio::test]
async fn lines_arrive_as_the_file_grows_and_a_cut_line_waits_for_its_end() {
    let d = temp("grow");
    let roots = Arc::new(Roots::new(vec![d.join("projects")]));
    let path = d.join("projects/p/s.jsonl");
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(follow(roots, path.display().to_string(), TailKey::Main, tx));
    // Not there yet: it waits.
    tokio::time::sleep(POLL).await;
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"{\"a\":1}\n{\"b\":").unwrap();
    f.flush().unwrap();
    assert_eq!(next(&mut rx).await, TailMsg::Line("{\"a\":1}".into()));
    f.write_all(b"2}\n").unwrap();
    assert_eq!(next(&mut rx).await, TailMsg::Line("{\"b\":2}".into()));
    drop(rx);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("it stops once nobody listens")
        .unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test]
async fn what_is_not_a_transcript_of_ours_is_refused_at_once() {
    let d = temp("hostile");
    let roots = Roots::new(vec![d.join("projects")]);
    let refused = |p: &str| roots.open(p).unwrap_err();
    // Outside every transcript directory, climbing out, not .jsonl.
    assert!(refused("/etc/passwd.jsonl").contains("not beneath"));
    let esc = format!("{}/projects/../../x.jsonl", d.display());
    assert!(refused(&esc).contains("plain absolute"));
    assert!(refused(&format!("{}/projects/p/id_rsa", d.display())).contains(".jsonl"));
    // A FIFO: refused without blocking.
    let fifo = d.join("projects/p/fifo.jsonl");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(refused(&fifo.display().to_string()).contains("regular"));
    // A device, through a link beneath the root: the link is refused.
    let dev = d.join("projects/p/dev.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &dev).unwrap();
    assert!(roots.open(&dev.display().to_string()).is_err());
    // A link that leads out of the root.
    let out = d.join("projects/p/out.jsonl");
    std::os::unix::fs::symlink("/etc/hostname", &out).unwrap();
    assert!(roots.open(&out.display().to_string()).is_err());
    // Another user's file (we may hand it away only as root).
    let theirs = d.join("projects/p/theirs.jsonl");
    std::fs::write(&theirs, b"{}\n").unwrap();
    let c = std::ffi::CString::new(theirs.display().to_string()).unwrap();
    // SAFETY: a path we own.
    if unsafe { libc::chown(c.as_ptr(), 4242, 4242) } == 0 {
        assert!(refused(&theirs.display().to_string()).contains("not ours"));
    }
    // An enormous one (sparse: no disk used).
    let big = d.join("projects/p/big.jsonl");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(10 << 30).unwrap();
    assert!(refused(&big.display().to_string()).contains("larger than"));
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test]
async fn garbage_is_refused_and_a_huge_line_skipped() {
    let d = temp("garbage");
    let roots = Arc::new(Roots::new(vec![d.join("projects")]));
    let junk = d.join("projects/p/junk.jsonl");
    std::fs::write(&junk, "not json\n".repeat(GARBAGE_LINES + 5)).unwrap();
    let (tx, mut rx) = mpsc::channel(256);
    tokio::spawn(follow(
        roots.clone(),
        junk.display().to_string(),
        TailKey::Main,
        tx,
    ));
    let mut lines = 0;
    loop {
        match next(&mut rx).await {
            TailMsg::Line(_) => lines += 1,
            TailMsg::Refused(why) => {
                assert!(why.contains("not a transcript"), "{why}");
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(lines < GARBAGE_LINES);
    let long = d.join("projects/p/long.jsonl");
    let mut body = b"{\"x\":\"".to_vec();
    body.extend(std::iter::repeat_n(b'y', MAX_LINE + 10));
    body.extend_from_slice(b"\"}\n{\"ok\":1}\n");
    std::fs::write(&long, body).unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    tokio::spawn(follow(roots, long.display().to_string(), TailKey::Main, tx));
    match next(&mut rx).await {
        TailMsg::Note(n) => assert!(n.contains("skipped"), "{n}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(next(&mut rx).await, TailMsg::Line("{\"ok\":1}".into()));
    let _ = std::fs::remove_dir_all(&d);
}

/// A transcript that does not appear is said on screen once it is late (not polled unseen for
/// as long as its session lasts), then looked for less often; when it appears, that is said
/// and its lines follow.
#[tokio::test(start_paused = true)]
async fn a_transcript_that_is_late_is_said_and_one_that_comes_is_read() {
    let d = temp("late");
    let roots = Arc::new(Roots::new(vec![d.join("projects")]));
    let path = d.join("projects/p/late.jsonl");
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(follow(roots, path.display().to_string(), TailKey::Main, tx));
    // Nothing before it is late.
    tokio::time::sleep(NOT_YET - Duration::from_secs(1)).await;
    assert!(rx.try_recv().is_err());
    match next(&mut rx).await {
        TailMsg::Note(n) => assert!(n.contains("has not appeared after 30 s"), "{n}"),
        other => panic!("{other:?}"),
    }
    // Said once, however long it stays away.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(rx.try_recv().is_err());
    std::fs::write(&path, b"{\"a\":1}\n").unwrap();
    assert_eq!(
        next(&mut rx).await,
        TailMsg::Note("the transcript appeared".into())
    );
    assert_eq!(next(&mut rx).await, TailMsg::Line("{\"a\":1}".into()));
    drop(rx);
    task.await.unwrap();
    let _ = std::fs::remove_dir_all(&d);
}
