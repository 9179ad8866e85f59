//! Gateway recordings read back in `switchboard replay`: each effect call becomes the card
//! it raised live, each result closes it with the recorded decision, reads are tool rows.
//! Nothing is executed and no file is read: a write's card shows the new content (the old
//! file is not in the recording), a patch its replaced and new text.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::codec::{self, Inbound};
use super::engine::{self, Ask, Out};
use super::mapping::Nodes;
use super::validate::{self, Class};
use serde::Deserialize;
use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::{ItemKind, ItemOp};
use switchboard_record::Dir;
use switchboard_record::mapper::{Answered, Parsed, ReplayMapper, parsed_as};
use switchboard_record::obj::Obj;

#[derive(Clone, Default)]
pub struct Replay {
    nodes: NodesCell,
    /// Open cards by (sessionId, id): the engine's gate number and the question, if any.
    open: HashMap<(String, String), (u64, Option<String>)>,
    next: u64,
    now: u64,
    /// What the owner's edits ran, by gate (the `edit:` notes the session records).
    edits: HashMap<String, Value>,
}

/// `Nodes` is not `Clone` (it needs none live); replay checkpoints copy it.
#[derive(Default)]
struct NodesCell(Nodes);

impl Clone for NodesCell {
    fn clone(&self) -> Self {
        NodesCell(self.0.clone_state())
    }
}

fn s(args: &Map<String, Value>, k: &str) -> String {
    args.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn ask_of(tool: &str, args: &Map<String, Value>) -> Ask {
    match tool {
        "workspace_write" => Ask::Edit {
            path: s(args, "path"),
            old: String::new(),
            new: s(args, "content"),
            created: args.get("expectedSha256").is_some_and(Value::is_null),
        },
        "workspace_patch" => Ask::Edit {
            path: s(args, "path"),
            old: s(args, "oldText"),
            new: s(args, "newText"),
            created: false,
        },
        "workspace_delete" => Ask::Delete {
            path: s(args, "path"),
        },
        "workspace_exec" => Ask::Exec {
            command: s(args, "command"),
            cwd: args
                .get("cwd")
                .and_then(Value::as_str)
                .unwrap_or(".")
                .to_string(),
        },
        "workspace_input" => Ask::Input {
            command_id: s(args, "commandId"),
            text: s(args, "text"),
        },
        "workspace_stop" => Ask::Stop {
            command_id: s(args, "commandId"),
        },
        "workspace_ask" => Ask::Question {
            question: s(args, "question"),
        },
        _ => Ask::Tool {
            name: s(args, "name"),
            arguments: args.get("arguments").cloned().unwrap_or(Value::Null),
        },
    }
}

impl ReplayMapper for Replay {
    fn note(&mut self, line: &str) {
        if let Some((gate, args)) = super::recording::edit_note(line)
            && self.edits.len() < 10_000
        {
            self.edits.insert(gate, args);
        }
    }

    fn set_now(&mut self, ms: u64) {
        self.now = ms;
    }

    fn inbound(&mut self, line: &str) -> Vec<BackendEvent> {
        self.inbound_frame(codec::decode(line).ok())
    }

    fn inbound_parsed(&mut self, line: &str, parsed: &mut Parsed) -> Vec<BackendEvent> {
        match parsed_as::<Option<Inbound>>(parsed) {
            Some(f) => self.inbound_frame(f),
            None => self.inbound(line),
        }
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        self.reply(Reply::read(line))
    }

    fn outbound_parsed(
        &mut self,
        line: &str,
        parsed: &mut Parsed,
    ) -> (Vec<BackendEvent>, Vec<Answered>) {
        match parsed_as::<Reply>(parsed) {
            Some(r) => self.reply(r),
            None => self.outbound(line),
        }
    }

    fn clone_box(&self) -> Box<dyn ReplayMapper> {
        Box::new(self.clone())
    }
}

/// The background pass's parser for gateway recordings: the agent's frames decoded, ours
/// read as the replies they are.
pub fn parse_ahead(dir: Dir, line: &str) -> Option<Parsed> {
    match dir {
        Dir::In => Some(Box::new(codec::decode(line).ok())),
        Dir::Out => Some(Box::new(Reply::read(line))),
        _ => None,
    }
}

/// What replay reads of a frame of ours: a tool's result, or nothing it uses.
#[derive(Debug, Default, PartialEq)]
pub struct Reply {
    result: bool,
    session: String,
    id: String,
    text: String,
    code: Option<String>,
    answer: String,
    edited: bool,
}

/// A result frame as its fields are read, the rest skipped (`structuredContent` repeats a
/// read's whole file): anything of another shape (a field of another type, a duplicate) is
/// read through a `Value` instead, with the same meaning. Every object is read as an object
/// only (`Obj`): a derived struct would also take an array, field by position.
#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, rename = "sessionId")]
    session_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    result: Option<Obj<TypedBody>>,
}

#[derive(Deserialize)]
struct TypedBody {
    #[serde(default)]
    content: Option<Vec<Obj<TypedText>>>,
    #[serde(default, rename = "structuredContent")]
    structured: Option<Obj<TypedStructured>>,
}

#[derive(Deserialize)]
struct TypedText {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default)]
struct TypedStructured {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default, rename = "editedByOwner")]
    edited_by_owner: Option<bool>,
}

impl Reply {
    fn read(line: &str) -> Reply {
        Reply::read_typed(line).unwrap_or_else(|| Reply::read_value(line))
    }

    /// The usual shape, read field by field.
    fn read_typed(line: &str) -> Option<Reply> {
        let Obj(t) = serde_json::from_str::<Obj<Typed>>(line).ok()?;
        let (body, structured) = match t.result {
            Some(Obj(b)) => (b.content.unwrap_or_default(), b.structured),
            None => (Vec::new(), None),
        };
        let structured = structured.map(|Obj(s)| s).unwrap_or_default();
        Some(Reply {
            result: t.kind == "result",
            session: t.session_id.unwrap_or_default(),
            id: t.id.unwrap_or_default(),
            text: body
                .into_iter()
                .next()
                .and_then(|Obj(c)| c.text)
                .unwrap_or_default(),
            code: structured.code,
            answer: structured.answer.unwrap_or_default(),
            edited: structured.edited_by_owner == Some(true),
        })
    }

    /// Any shape, through a `Value`.
    fn read_value(line: &str) -> Reply {
        let v: Value = serde_json::from_str(line).unwrap_or_default();
        let str_at = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        Reply {
            result: v["type"] == "result",
            session: str_at("/sessionId").unwrap_or_default(),
            id: str_at("/id").unwrap_or_default(),
            text: v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            code: str_at("/result/structuredContent/code"),
            answer: str_at("/result/structuredContent/answer").unwrap_or_default(),
            edited: v["result"]["structuredContent"]["editedByOwner"] == true,
        }
    }
}

impl Replay {
    fn inbound_frame(&mut self, frame: Option<Inbound>) -> Vec<BackendEvent> {
        let Some(Inbound::Call(c)) = frame else {
            return Vec::new();
        };
        let session = c.session_id.clone().unwrap_or_default();
        let key = (session.clone(), c.id.clone());
        if self.open.contains_key(&key) {
            return Vec::new(); // a re-send joins its card
        }
        let tool = c.tool.clone().unwrap_or_default();
        let args = validate::decode_args(c.args.as_ref()).unwrap_or_default();
        let class = validate::class_of(&tool);
        if class == Class::Read && tool != "workspace_tool" {
            let ran = Out::Ran {
                session,
                tool: tool.clone(),
                summary: codec::clip(&Value::Object(args).to_string()),
                outcome: format!("call {}", c.id),
            };
            return self.nodes.0.map(&ran, self.now);
        }
        self.next += 1;
        let ask = ask_of(&tool, &args);
        let question = match &ask {
            Ask::Question { question } => Some(question.clone()),
            _ => None,
        };
        self.open.insert(key, (self.next, question));
        let g = engine::Gate {
            gate: self.next,
            session,
            call_id: c.id,
            tool,
            intention: c.intention.unwrap_or_default(),
            ask,
            // A replay decides nothing.
            editable: None,
            environment: Vec::new(),
        };
        self.nodes.0.map(&Out::Gate(g), self.now)
    }

    fn reply(&mut self, r: Reply) -> (Vec<BackendEvent>, Vec<Answered>) {
        if !r.result {
            return (Vec::new(), Vec::new());
        }
        let key = (r.session, r.id);
        let text = r.text;
        let code = r.code.unwrap_or_else(|| "ok".to_string());
        let row = BackendEvent::Item {
            node: None,
            op: ItemOp::Push(ItemKind::ToolResult {
                tool_use_id: key.1.clone(),
                text: codec::clip(&text),
                is_error: code != "ok",
            }),
        };
        let Some((gate, question)) = self.open.remove(&key) else {
            return (vec![row], Vec::new());
        };
        let id = super::mapping::gate_id(gate);
        let (decision, label) = match (code.as_str(), question) {
            ("ok", Some(q)) => {
                let a = r.answer;
                (
                    Some(Decision::Answer {
                        answers: vec![(q, a.clone())],
                    }),
                    format!("answered {a:?}"),
                )
            }
            ("denied_by_owner" | "cancelled", _) => (
                Some(Decision::Deny {
                    message: text.clone(),
                    interrupt: false,
                }),
                code.replace('_', " "),
            ),
            // The owner's edit ran (the result says so; what ran, the session's note).
            ("ok", None) if r.edited => (
                Some(Decision::Allow {
                    updated_input: Some(
                        self.edits
                            .remove(&id)
                            .unwrap_or_else(|| Value::Object(Default::default())),
                    ),
                    always: false,
                }),
                "allowed with an edit".to_string(),
            ),
            ("ok", None) => (
                Some(Decision::Allow {
                    updated_input: None,
                    always: false,
                }),
                "allowed".to_string(),
            ),
            // Refused before any card was shown live (schema, stale SHA, busy...), or an
            // allowed effect that failed: the result says which.
            (c, _) => (None, format!("answered {c} (no decision recorded)")),
        };
        let mut events = vec![row];
        events.push(match &decision {
            Some(d) => BackendEvent::GateAnswered {
                id: id.clone(),
                decision: d.clone(),
            },
            None => BackendEvent::GateWithdrawn { id: id.clone() },
        });
        (
            events,
            vec![Answered {
                gate_id: id,
                decision,
                label,
            }],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed read of our results means what the `Value` read does, and whatever it
    /// refuses (a field of another type, a duplicate key, junk) is read the `Value` way.
    #[test]
    fn the_typed_read_of_a_result_means_what_the_value_read_does() {
        let typed = [
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"t\n\"q\""}],"structuredContent":{"code":"denied_by_owner","path":"a","content":"x"}}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"t"}],"structuredContent":{"code":"ok","editedByOwner":true}}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"answer":"yes"}}}"#,
            r#"{"type":"result","id":"c1","sessionId":null,"result":{"content":[],"structuredContent":{"code":null}}}"#,
            r#"{"type":"result","id":"c1","result":{"content":[{"type":"image"}]}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":null}"#,
            r#"{"type":"ready","protocol":1}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","extra":[1,{"a":2}],"result":{"isError":false,"content":[{"type":"text","text":"t","x":1}],"structuredContent":{"code":"stale_sha","editedByOwner":false}}}"#,
        ];
        for line in typed {
            let t = Reply::read_typed(line).unwrap_or_else(|| panic!("typed: {line}"));
            assert_eq!(t, Reply::read_value(line), "{line}");
            assert_eq!(Reply::read(line), t);
        }
        let odd = [
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"t"}],"structuredContent":{"code":"ok","code":"denied_by_owner"}}}"#,
            r#"{"type":"result","id":7,"sessionId":"s","result":{"content":"x"}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"t"}],"structuredContent":{"code":"ok","editedByOwner":"yes"}}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[7],"structuredContent":[]}}"#,
            r#"{"type":7}"#,
            "not json",
            // Arrays where objects go: a derived struct would read them by position.
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[{"type":"text","text":"t"}],"structuredContent":["denied_by_owner"]}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":{"content":[["t"]]}}"#,
            r#"{"type":"result","id":"c1","sessionId":"s","result":["x"]}"#,
            r#"["result","s","c1",{}]"#,
        ];
        for line in odd {
            assert_eq!(Reply::read_typed(line), None, "{line}");
            assert_eq!(Reply::read(line), Reply::read_value(line), "{line}");
        }
        // The duplicate: the last `code` wins, as in a `Value`.
        assert_eq!(Reply::read(odd[0]).code.as_deref(), Some("denied_by_owner"));
    }

    #[test]
    fn a_recorded_write_opens_its_card_and_the_result_closes_it_allowed() {
        let mut r = Replay::default();
        let call = r#"{"type":"call","protocol":1,"id":"w1","workspaceId":"w","sessionId":"s","intention":"i","tool":"workspace_write","args":{"path":"a.txt","content":"new\n","expectedSha256":null}}"#;
        let ev = r.inbound(call);
        assert!(matches!(&ev[0], BackendEvent::GateOpen(g) if g.id == "gw-1"));
        assert!(r.inbound(call).is_empty(), "a re-send joins");
        let (_, answered) = r.outbound(r#"{"type":"result","id":"w1","sessionId":"s","result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}}"#);
        assert_eq!(answered[0].gate_id, "gw-1");
        assert!(matches!(answered[0].decision, Some(Decision::Allow { .. })));
        let ask = call
            .replace("workspace_write", "workspace_ask")
            .replace(
                r#"{"path":"a.txt","content":"new\n","expectedSha256":null}"#,
                r#"{"question":"Q?"}"#,
            )
            .replace("w1", "q1");
        r.inbound(&ask);
        let (_, a) = r.outbound(r#"{"type":"result","id":"q1","sessionId":"s","result":{"content":[],"structuredContent":{"answer":"yes"}}}"#);
        assert_eq!(
            a[0].decision,
            Some(Decision::Answer {
                answers: vec![("Q?".into(), "yes".into())]
            })
        );
    }
}
