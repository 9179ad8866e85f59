//! The backend's own mapping behind one small interface, so replay, export, sessions and the
//! player read every backend's recordings the same way (no second parser). Each backend
//! implements it for its mapping (its `replay` module); the product's registry picks one.

use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;

use crate::Dir;

/// A gate closed by a recorded reply of ours.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    pub gate_id: String,
    /// The decision the reply expresses, when it is one the UI could have taken.
    pub decision: Option<Decision>,
    /// How the player shows it ("allowed once", "selected Allow", "raw reply {…}").
    pub label: String,
}

/// A frame's text parsed ahead of its mapping, by the backend's `Parser`: what it holds is
/// the backend's own business (its mapping downcasts it). The mapping is lent it: what it
/// leaves there goes back to the thread that parsed it, to be dropped where it was allocated
/// (a tree freed on another thread costs both threads: an iii replay spent a fifth of its
/// reader's time taking back memory the pass had freed).
pub type Parsed = Box<dyn std::any::Any + Send>;

/// What a backend's parser made of a frame, as the type its mapping expects. `None` when
/// another backend's parser made it: only the registry pairs parsers and mappings, so that is
/// a bug there (debug builds stop on it); the mapping then reads the line itself.
pub fn parsed_as<T: 'static>(parsed: &mut Parsed) -> Option<T> {
    // A box of `()` allocates nothing.
    match std::mem::replace(parsed, Box::new(())).downcast::<T>() {
        Ok(t) => Some(*t),
        Err(_) => {
            debug_assert!(false, "parsed by another backend's parser");
            None
        }
    }
}

/// `parsed_as`, lent: the mapping reads it where it is (and may take parts of it).
pub fn parsed_mut<T: 'static>(parsed: &mut Parsed) -> Option<&mut T> {
    let t = parsed.downcast_mut::<T>();
    debug_assert!(t.is_some(), "parsed by another backend's parser");
    t
}

/// Parses one recorded frame for `inbound_parsed` / `outbound_parsed`. It keeps no state, so
/// the background pass runs it on its reader thread while the pass maps the previous batch:
/// parsing is most of a frame's cost, and that way the two threads share it.
pub type Parser = fn(Dir, &str) -> Option<Parsed>;

/// A recording read back frame by frame: inbound lines are the agent's, outbound ours.
/// Implementations never write anything and never perform IO for the agent.
pub trait ReplayMapper: Send {
    /// The recorded time of the frame about to be read.
    fn set_now(&mut self, _ms: u64) {}
    fn inbound(&mut self, line: &str) -> Vec<BackendEvent>;
    /// `inbound` of a line its backend's `Parser` already read: the same events, without a
    /// second parse. Given what another parser made, it reads the line itself.
    fn inbound_parsed(&mut self, line: &str, _parsed: &mut Parsed) -> Vec<BackendEvent> {
        self.inbound(line)
    }
    /// `outbound` of a line its backend's `Parser` already read.
    fn outbound_parsed(
        &mut self,
        line: &str,
        _parsed: &mut Parsed,
    ) -> (Vec<BackendEvent>, Vec<Answered>) {
        self.outbound(line)
    }
    /// A remark of ours in the recording (`note`): most mappings have no use for them; one
    /// that recorded what an answer held beyond the wire (the gateway's edit) reads it here.
    fn note(&mut self, _line: &str) {}
    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>);
    /// A copy of the mapping state (replay checkpoints).
    fn clone_box(&self) -> Box<dyn ReplayMapper>;
}

pub fn decision_label(d: &Decision) -> String {
    match d {
        Decision::Allow { always: true, .. } => "allowed always".into(),
        Decision::Allow {
            updated_input: Some(_),
            ..
        } => "allowed with an edit".into(),
        Decision::Allow { .. } => "allowed once".into(),
        Decision::Deny { message, interrupt } => format!(
            "denied{}: {message}",
            if *interrupt { " and interrupted" } else { "" }
        ),
        Decision::Answer { answers } => answers
            .iter()
            .map(|(q, a)| format!("{q} = {a}"))
            .collect::<Vec<_>>()
            .join("; "),
        Decision::DialogComplete { result } => format!("completed with {result}"),
        Decision::DialogCancel => "cancelled".into(),
        Decision::ElicitAccept { content } => format!("accepted {content}"),
        Decision::ElicitDecline => "declined".into(),
        Decision::ElicitCancel => "cancelled".into(),
        Decision::Continue => "continued".into(),
        Decision::Block { reason } => format!("blocked: {reason}"),
        Decision::Raw { body } => format!("raw reply {body}"),
        Decision::Option {
            option_id,
            name,
            allow,
        } => format!(
            "selected {name} ({option_id}, {})",
            if *allow { "allow" } else { "reject" }
        ),
        Decision::Cancelled => "cancelled".into(),
        Decision::OwnTerminal { why } => why.clone(),
    }
}

impl Clone for Box<dyn ReplayMapper> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
