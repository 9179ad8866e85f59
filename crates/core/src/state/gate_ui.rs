//! One gate card's interaction state: its highlight, toggles, typed text and in-place editor.

use crate::gate::{Gate, GateKind};
use crate::text_field::TextField;

/// An in-place text editor inside the gate panel and what its text is for.
#[derive(Clone, Debug)]
pub struct Editor {
    pub purpose: EditorPurpose,
    pub area: TextField,
}

impl Editor {
    /// An editor holding `initial`, the cursor at its end.
    pub fn new(purpose: EditorPurpose, initial: &str) -> Editor {
        let area = TextField::from_lines(initial.lines().map(str::to_string).collect());
        Editor { purpose, area }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditorPurpose {
    /// Deny message (`n`).
    DenyMessage,
    /// Tool input as JSON before allowing (`e`).
    EditInput,
    /// The whole reply body as JSON (`r`).
    RawReply,
    /// The "Other" answer of the question on this page.
    Other,
    /// Reason for blocking at a breakpoint (`b`).
    BlockReason,
    /// The value of the highlighted elicitation field.
    Field,
    /// A rule to save (`A`): `allow|ask|deny TOOL [PATTERN]`.
    Rule,
}

impl EditorPurpose {
    /// Multi-line editors submit with Ctrl-S; one-line editors with Enter.
    pub fn multiline(self) -> bool {
        matches!(self, EditorPurpose::EditInput | EditorPurpose::RawReply)
    }
}

/// Interaction state of one gate card (highlight, toggles, typed text).
#[derive(Clone, Debug, Default)]
pub struct GateUi {
    /// Highlighted choice in a permission/breakpoint/dialog card.
    pub choice: usize,
    /// The highlight was moved with the arrows (or starts on a refusal): only then does
    /// Enter pick it. A permission or breakpoint card starts on no choice, so an Enter meant
    /// for something else (a typed answer confirmed twice) never allows (issue 22 item 4).
    pub picked: bool,
    /// Question page and highlighted row (options, then "Other").
    pub page: usize,
    pub cursor: usize,
    /// Per question: which options are chosen.
    pub chosen: Vec<Vec<bool>>,
    /// Per question: the "Other" text and whether it is chosen.
    pub other: Vec<String>,
    pub other_on: Vec<bool>,
    /// Per question: whether the page was confirmed with Enter.
    pub confirmed: Vec<bool>,
    /// Elicitation field values, as typed.
    pub fields: Vec<String>,
    pub editor: Option<Editor>,
    /// Last validation error, shown in the card.
    pub error: Option<String>,
    /// Card body lines scrolled past (PgUp/PgDn) when the body is taller than the card.
    pub scroll: usize,
    /// Arrival order across the workspace (the inbox is oldest first).
    pub seq: u64,
    /// Opened while the session was offline: rules apply to it once the connection is back.
    pub rules_later: bool,
}

impl GateUi {
    pub fn for_gate(gate: &Gate) -> GateUi {
        let mut ui = GateUi::default();
        match &gate.kind {
            GateKind::Permission(p) => {
                // Asked to default to no: the highlight starts on the refusal, which Enter may
                // pick; otherwise on nothing.
                if p.default_to_no {
                    ui.choice = p
                        .choices()
                        .iter()
                        .position(|c| *c == crate::gate::PermChoice::Deny)
                        .unwrap_or(0);
                    ui.picked = true;
                }
            }
            GateKind::Question(q) => {
                let n = q.questions.len();
                ui.chosen = q
                    .questions
                    .iter()
                    .map(|q| vec![false; q.options.len()])
                    .collect();
                ui.other = vec![String::new(); n];
                ui.other_on = vec![false; n];
                ui.confirmed = vec![false; n];
                // A question without options is answered by typing: the answer field has the
                // keys from the start (issue 22 item 3), so no letter triggers a card key.
                if q.questions.first().is_some_and(|s| s.options.is_empty()) {
                    ui.editor = Some(Editor::new(EditorPurpose::Other, ""));
                }
            }
            GateKind::Elicitation(e) => {
                ui.fields = e
                    .fields
                    .iter()
                    .map(|f| f.default.clone().unwrap_or_default())
                    .collect();
                if e.free_text() {
                    ui.editor = Some(Editor::new(EditorPurpose::Field, &ui.fields[0]));
                }
            }
            GateKind::Dialog(_) | GateKind::Breakpoint(_) => {}
        }
        ui
    }
}
