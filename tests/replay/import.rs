//! `switchboard import` round trips, and our recordings match the recording schema.

use super::*;

// 4. import round trip

#[test]
fn import_round_trip() {
    let Some(cs) = cassettes() else { return };
    let dir = scratch("import");
    for c in cs {
        let name = stem(&c);
        let dst = dir.join(name.replace(".cassette.json", ".jsonl"));
        let o = run(&["import", c.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let direct = load(&c, None).unwrap();
        assert_eq!(
            stdout(&o),
            format!(
                "imported {} frames into {}\n",
                direct.frames.len(),
                dst.display()
            )
        );
        // A valid recording by the schema, and clean.
        check_recording_schema(&dst);
        assert_clean(std::slice::from_ref(&dst));
        let imported = load(&dst, None).unwrap();
        assert_eq!(imported.format, Format::Recording, "{name}");
        // Frames: every events line once as `in` (in order), every controlOut line once as
        // `out`, each reply after its request; one provenance note first.
        let cas: Value = serde_json::from_str(&std::fs::read_to_string(&c).unwrap()).unwrap();
        let strings = |k: &str| -> Vec<String> {
            cas[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        let (events, control_out) = (strings("events"), strings("controlOut"));
        let fr = &imported.frames;
        assert_eq!(fr[0].dir, Dir::Note, "{name}");
        assert!(fr[0].text.starts_with("imported from "), "{name}");
        assert_eq!(fr.len(), 1 + events.len() + control_out.len(), "{name}");
        let ins: Vec<String> = fr
            .iter()
            .filter(|f| f.dir == Dir::In)
            .map(|f| f.text.clone())
            .collect();
        assert_eq!(ins, events, "{name}: events, in order");
        let mut outs: Vec<String> = fr
            .iter()
            .filter(|f| f.dir == Dir::Out)
            .map(|f| f.text.clone())
            .collect();
        let mut want = control_out.clone();
        outs.sort();
        want.sort();
        assert_eq!(outs, want, "{name}: controlOut, each once");
        assert!(
            fr.iter()
                .skip(1)
                .all(|f| matches!(f.dir, Dir::In | Dir::Out))
        );
        let ts: Vec<u64> = fr.iter().map(|f| f.ts.unwrap()).collect();
        assert!(
            ts.windows(2).all(|w| w[0] < w[1]),
            "{name}: increasing times"
        );
        let id_of = |f: &switchboard::replay::load::Frame, ty: &str| -> Option<String> {
            let v: Value = serde_json::from_str(&f.text).ok()?;
            if v["type"] != ty {
                return None;
            }
            let id = if ty == "control_request" {
                &v["request_id"]
            } else {
                &v["response"]["request_id"]
            };
            id.as_str().map(str::to_string)
        };
        let mut requests: HashMap<String, usize> = HashMap::new();
        for (i, f) in fr.iter().enumerate() {
            if let Some(id) = id_of(f, "control_request") {
                requests.insert(id, i);
            }
        }
        let mut replies = 0;
        for (i, f) in fr.iter().enumerate() {
            if let Some(id) = id_of(f, "control_response") {
                let req = requests
                    .get(&id)
                    .unwrap_or_else(|| panic!("{name}: reply to unknown {id}"));
                assert!(
                    req < &i,
                    "{name}: reply to {id} at {i} before its request at {req}"
                );
                replies += 1;
            }
        }
        assert!(replies > 0, "{name}");
        // The same final state as replaying the cassette directly (times are synthetic).
        let mut a = Player::open(direct);
        let mut b = Player::open(imported);
        press(&mut a, KeyCode::End);
        press(&mut b, KeyCode::End);
        assert_eq!(domain(b.state(), false), domain(a.state(), false), "{name}");
        assert_eq!(a.total() + 1, b.total());
    }
    // Import refuses what is not a cassette.
    let o = run(&[
        "import",
        our("edit").to_str().unwrap(),
        "-o",
        dir.join("x.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

// The recording format schema

fn recording_validators() -> (jsonschema::Validator, jsonschema::Validator) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(manifest("schema/recording.v1.json")).unwrap(),
    )
    .unwrap();
    let def = |name: &str| {
        jsonschema::draft7::new(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$ref": format!("#/definitions/{name}"),
            "definitions": doc["definitions"],
        }))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    // The whole document compiles too.
    jsonschema::draft7::new(&doc).expect("recording.v1.json compiles");
    (def("Header"), def("Entry"))
}

fn check_recording_schema(path: &Path) {
    let (header, entry) = recording_validators();
    let text = std::fs::read_to_string(path).unwrap();
    for (i, l) in text.lines().enumerate() {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
        let (name, val) = if i == 0 {
            ("Header", &header)
        } else {
            ("Entry", &entry)
        };
        let errors: Vec<String> = val.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{}:{}: not a {name}: {errors:?}",
            path.display(),
            i + 1
        );
    }
}

#[test]
fn our_recordings_match_the_recording_schema() {
    for path in ours() {
        check_recording_schema(&path);
    }
    // The schema has teeth.
    let (header, entry) = recording_validators();
    assert!(!entry.is_valid(&json!({"ts": 1, "dir": "sideways", "line": "x"})));
    assert!(!entry.is_valid(&json!({"ts": -1, "dir": "in", "line": "x"})));
    assert!(!entry.is_valid(&json!({"ts": 1, "dir": "in", "line": "x", "extra": 1})));
    assert!(!entry.is_valid(&json!({"dir": "in", "line": "x"})));
    let h: Value = serde_json::from_str(
        std::fs::read_to_string(our("edit"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(header.is_valid(&h));
    let mut h2 = h.clone();
    h2["switchboard_recording"] = json!(2);
    assert!(!header.is_valid(&h2));
    let mut h3 = h;
    h3.as_object_mut().unwrap().remove("argv");
    assert!(!header.is_valid(&h3));
}
