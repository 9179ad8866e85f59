//! A permission card with ACP's options: its reject option answers at once (ACP cannot carry
//! a message). The iii held calls, driven through iii's real mapper, are tested in
//! `crates/iii/tests/reducer.rs`.

use super::*;

#[test]
fn acp_reject_options_are_sent_as_they_are() {
    // ACP cannot carry a message: its reject option answers at once, as before.
    let mut s = st();
    let mut g = bash("g1", "ls");
    if let GateKind::Permission(p) = &mut g.kind {
        p.options = vec![
            crate::gate::PermOption {
                option_id: "ok".into(),
                name: "Allow".into(),
                kind: "allow_once".into(),
            },
            crate::gate::PermOption {
                option_id: "no".into(),
                name: "Reject".into(),
                kind: "reject_once".into(),
            },
        ];
        assert!(p.deny_reason.is_none());
    }
    open(&mut s, g);
    let fx = ch(&mut s, 'n');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Option {
                option_id: "no".into(),
                name: "reject once".into(),
                allow: false
            }
        )
    );
}
