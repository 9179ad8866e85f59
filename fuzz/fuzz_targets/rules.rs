//! The rules file (TOML) and the `A` editor's rule line: parsing, then matching with what was
//! parsed (globs, path normalisation) and writing it back as a line that parses the same.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use switchboard::config::{parse_config, parse_rules};
use switchboard::core::rules::{Origin, Rules, glob, normalise_path, parse_spec_line, spec_line};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("rules.toml");
    let mut rules = Rules::default();
    if let Ok(specs) = parse_rules(path, text) {
        for spec in specs {
            rules.add(spec, Origin::File("rules.toml".into()));
        }
    }
    let _ = parse_config(Path::new("config.toml"), text);
    // The last line is a subject to match against: "tool arg".
    let subject = text.lines().last().unwrap_or("");
    let (tool, arg) = subject.split_once(' ').unwrap_or((subject, ""));
    let _ = rules.evaluate(tool, arg);
    let _ = normalise_path(arg);
    let _ = glob(tool, arg);
    for line in text.lines() {
        if let Ok(spec) = parse_spec_line(line) {
            rules.add(spec.clone(), Origin::Session);
            let again = parse_spec_line(&spec_line(&spec));
            assert_eq!(
                again.as_ref().ok(),
                Some(&spec),
                "{line:?} → {:?}",
                spec_line(&spec)
            );
        }
    }
    let _ = rules.evaluate(tool, arg);
});
