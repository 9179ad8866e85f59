//! `switchboard validate`: schema checks, the protocol rules we enforce live, and decision
//! fidelity (re-derive each recorded answer through our encoder and compare canonical JSON).

use serde_json::Value;

use super::load::{self, Format, Frame, Loaded, Stream};
use crate::core::BackendKind;
pub use switchboard_record::check::{
    Finding, INFORMATIONAL, Report, Rules, Whole, canonical, is_exit_note, unreadable_note,
};

/// The rules for a recording of `backend`, or one finding when its header names a backend
/// this build does not know (replay reads such a file as Claude's; validate refuses to judge).
pub fn rules_for(backend: BackendKind, header: Option<&Value>) -> Box<dyn Rules> {
    match load::unknown_backend(header) {
        Some(name) => Box::new(Unsupported {
            r: Report {
                findings: vec![Finding {
                    line: 1,
                    rule: "backend",
                    message: format!(
                        "backend {name:?}: only the Claude, ACP, iii and gateway rules exist"
                    ),
                }],
                ..Report::default()
            },
        }),
        None => crate::registry::rules(backend),
    }
}

/// A recording of a backend this build has no rules for: one finding, frames counted.
struct Unsupported {
    r: Report,
}

impl Rules for Unsupported {
    fn frame(&mut self, _: &Frame) {
        self.r.frames += 1;
    }
    fn finish(self: Box<Self>) -> Report {
        self.r
    }
}

/// Check frames already loaded.
pub fn validate(loaded: &Loaded) -> Report {
    let mut rules = rules_for(loaded.backend, loaded.header.as_ref());
    for f in &loaded.frames {
        rules.frame(f);
    }
    rules.finish()
}

/// Check the file at `path` as it is read (a cassette, one JSON document, is loaded whole).
/// `Err`: the input cannot be read at all.
pub fn validate_path(
    path: &std::path::Path,
    force: Option<Format>,
) -> Result<(Format, Report), String> {
    match load::stream(path, force)? {
        Stream::Whole(loaded) => Ok((loaded.format, validate(&loaded))),
        Stream::Lines(mut lines) => {
            let mut rules = rules_for(lines.backend, lines.header.as_ref());
            for f in lines.by_ref() {
                rules.frame(&f?);
            }
            Ok((lines.format, rules.finish()))
        }
    }
}
