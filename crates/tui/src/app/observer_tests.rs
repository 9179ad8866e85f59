//! What the app tells the workspace manifest: a rule made for one session only (`a`) is told
//! once, under its session, so a resume can add it again.

use super::*;
use crate::test_gates::Quiet;
use crate::ui::theme::Theme;
use std::sync::{Arc, Mutex};
use switchboard_core::input::{KeyCode, KeyEvent, KeyModifiers};
use switchboard_core::rules::RuleSpec;
use switchboard_core::state::Settings;
use tokio::sync::mpsc;

type Rules = Arc<Mutex<Vec<(SessionId, RuleSpec)>>>;

/// The rules told made, and the ones told deleted.
struct Told(Rules, Rules);

impl crate::app::WorkspaceObserver for Told {
    fn session_opened(
        &mut self,
        _: SessionId,
        _: &str,
        _: switchboard_core::BackendKind,
        _: u64,
    ) -> Result<(), String> {
        Ok(())
    }
    fn session_recording(&mut self, _: SessionId, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn session_ended(&mut self, _: SessionId, _: Option<i32>, _: u64) -> Result<(), String> {
        Ok(())
    }
    fn decision(
        &mut self,
        _: SessionId,
        _: &str,
        _: &switchboard_core::gate::Decision,
        _: &str,
        _: u64,
    ) -> Result<(), String> {
        Ok(())
    }
    fn session_rule(&mut self, id: SessionId, spec: &RuleSpec) -> Result<(), String> {
        self.0.lock().unwrap().push((id, spec.clone()));
        Ok(())
    }
    fn session_rule_removed(&mut self, id: SessionId, spec: &RuleSpec) -> Result<(), String> {
        self.1.lock().unwrap().push((id, spec.clone()));
        Ok(())
    }
    fn path(&self) -> Option<std::path::PathBuf> {
        None
    }
}

fn gate(app: &mut App, id: &str, command: &str) {
    app.apply(Msg::Backend {
        session: SessionId::FIRST,
        at_ms: 0,
        event: switchboard_core::msg::BackendEvent::GateOpen(Box::new(
            crate::test_gates::bash_permission(id, command),
        )),
    });
}

fn key(app: &mut App, c: char) {
    app.apply(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )));
}

#[tokio::test]
async fn a_session_rule_is_told_to_the_manifest_once() {
    let (sent, _commands) = mpsc::unbounded_channel();
    let mut app = App::start(Box::new(Quiet { sent }), Settings::default(), Theme::dark());
    let told: Rules = Arc::default();
    let deleted: Rules = Arc::default();
    app.observe(Box::new(Told(told.clone(), deleted.clone())));
    // `y` makes no rule; `a` makes one for exactly this request, in this session.
    gate(&mut app, "g1", "touch x");
    key(&mut app, 'y');
    assert!(told.lock().unwrap().is_empty());
    gate(&mut app, "g2", "touch x");
    key(&mut app, 'a');
    let rules = told.lock().unwrap().clone();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0].0, SessionId::FIRST);
    assert_eq!(rules[0].1.tool, "Bash");
    assert_eq!(rules[0].1.pattern.as_deref(), Some("touch x"));
    assert!(rules[0].1.exact);
    // The same request again is answered by the rule: nothing new is told.
    gate(&mut app, "g3", "touch x");
    assert_eq!(app.state.pending_total(), 0, "the rule answered it");
    gate(&mut app, "g4", "touch y");
    key(&mut app, 'a');
    assert_eq!(told.lock().unwrap().len(), 2);
    // Deleted in the rules view (the first row, `touch x`): told, so a resume does not add
    // it again; moving in the view tells nothing.
    key(&mut app, 'R');
    key(&mut app, 'j');
    key(&mut app, 'k');
    assert!(deleted.lock().unwrap().is_empty());
    key(&mut app, 'd');
    let gone = deleted.lock().unwrap().clone();
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert_eq!(gone[0], rules[0]);
    assert_eq!(app.state.rules.list.len(), 1);
}
