//! The journal's writes for each step of a call: a call id without an effect remembered
//! (while the seen-id table has room), an effect executing, a question asked, a result
//! completed and then sent.

use super::*;

impl Journal {
    /// Whether the seen-id table has no room for another id at `now_ms`, after forgetting
    /// the ids past the retention. Within the retention no id is ever forgotten (a forgotten
    /// id could be answered a second time, differently): a full table makes calls without
    /// an effect wait (`busy`), never effects.
    pub fn seen_full(&mut self, now_ms: u64) -> bool {
        while let Some(front) = self.seen_order.front() {
            match self.seen.get(front) {
                Some(s) if now_ms.saturating_sub(s.at) < RETENTION_MS => break,
                _ => {
                    let k = self.seen_order.pop_front().expect("front exists");
                    self.seen.remove(&k);
                }
            }
        }
        self.seen.len() >= self.seen_cap
    }

    /// Remember a call id that had no effect: a read (`refusal: None`, run again on a
    /// re-send) or a pre-execution refusal (the exact body, sent again on a re-send). When
    /// the line cannot be written the id is not remembered, and the caller's answer must not
    /// be final: a restart would forget it and could answer the id differently.
    pub fn remember(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        refusal: Option<&str>,
    ) -> io::Result<()> {
        if self.seen.contains_key(key) || self.entries.contains_key(key) {
            return Ok(());
        }
        let s = Seen {
            hash: hash.to_string(),
            tool: tool.to_string(),
            refusal: refusal
                .filter(|b| b.len() <= SEEN_BODY_MAX)
                .map(str::to_string),
            at: switchboard_record::now_ms(),
        };
        self.write(&Record::of_seen(key, &s).line()?, false)?;
        self.insert_seen(key.clone(), s);
        Ok(())
    }

    /// Step 11a: the effect is about to start (fsync'd before this returns).
    pub fn executing(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
    ) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Executing,
                hash: hash.to_string(),
                tool: tool.to_string(),
                effect,
                result: None,
                at: switchboard_record::now_ms(),
                live: true,
            },
        )
    }

    /// A question shown to the owner.
    pub fn asked(&mut self, key: &Key, hash: &str, effect: Value) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Asked,
                hash: hash.to_string(),
                tool: "workspace_ask".to_string(),
                effect,
                result: None,
                at: switchboard_record::now_ms(),
                live: true,
            },
        )
    }

    /// Final answer for the id: stored before it is sent.
    pub fn completed(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
        result: &str,
    ) -> io::Result<()> {
        self.append(
            key,
            Entry {
                state: State::Completed,
                hash: hash.to_string(),
                tool: tool.to_string(),
                effect,
                result: Some(result.to_string()),
                at: switchboard_record::now_ms(),
                live: false,
            },
        )
    }

    /// The result of a completed receipt was handed to the socket: a restart knows the peer
    /// may have it. One short line (no result), fsync'd; a receipt already marked (a re-send
    /// answered from here) is not marked again, so re-sends never grow the journal.
    pub fn sent(&mut self, key: &Key) -> io::Result<bool> {
        let Some(e) = self.entries.get(key) else {
            return Ok(false);
        };
        if e.state != State::Completed {
            return Ok(false);
        }
        let at = switchboard_record::now_ms();
        let r = Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: State::Sent,
            hash: e.hash.clone(),
            tool: e.tool.clone(),
            effect: Value::Null,
            result: None,
            at,
        };
        self.write(&r.line()?, true)?;
        if let Some(e) = self.entries.get_mut(key) {
            e.state = State::Sent;
            e.at = at;
        }
        Ok(true)
    }

    /// A completed receipt without the fsync: only for building large journals in the
    /// benchmark (every real receipt goes through `completed`).
    #[doc(hidden)]
    pub fn completed_unsynced_for_bench(
        &mut self,
        key: &Key,
        hash: &str,
        tool: &str,
        effect: Value,
        result: &str,
    ) -> io::Result<()> {
        let r = Record {
            ws: key.0.clone(),
            session: key.1.clone(),
            id: key.2.clone(),
            state: State::Completed,
            hash: hash.to_string(),
            tool: tool.to_string(),
            effect,
            result: Some(result.to_string()),
            at: switchboard_record::now_ms(),
        };
        self.out.line(&r.line()?, false)
    }
}
