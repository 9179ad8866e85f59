//! Sub-agent tasks: start, progress, usage and completion frames.

use std::time::Instant;

use serde_json::{Value, json};

use super::helpers::epoch_ms;
use super::{Agent, Ctx, Step, Task};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn new_task(
        &mut self,
        parent: Option<String>,
        description: &str,
        subagent_type: &str,
        prompt: &str,
    ) -> Task {
        Task {
            task_id: format!("a{:016x}", self.rand()),
            tool_use_id: self.tool_id(),
            parent,
            description: description.into(),
            subagent_type: subagent_type.into(),
            prompt: prompt.into(),
            started: Instant::now(),
            tool_uses: 0,
            tokens: 0,
        }
    }

    pub(super) fn start_task(&mut self, task: &Task, parent_task_id: Option<&str>) -> Step<()> {
        let mut t = task.clone();
        t.started = Instant::now();
        self.tasks.push(t);
        let mut fields = json!({
            "task_id": task.task_id,
            "tool_use_id": task.tool_use_id,
            "description": task.description,
            "subagent_type": task.subagent_type,
            "task_type": "local_agent",
            "prompt": task.prompt,
        });
        if let Some(p) = parent_task_id {
            fields["parent_task_id"] = json!(p);
            fields["spawn_depth"] = json!(2);
        } else {
            fields["spawn_depth"] = json!(1);
        }
        self.sys("task_started", fields);
        let ctx = task.ctx();
        self.user_line(&ctx, json!([{"type": "text", "text": task.prompt}]), None);
        self.pause(150, 300)
    }

    pub(super) fn task_usage(&self, task_id: &str) -> Value {
        match self.tasks.iter().find(|t| t.task_id == task_id) {
            Some(t) => json!({
                "total_tokens": t.tokens,
                "tool_uses": t.tool_uses,
                "duration_ms": t.started.elapsed().as_millis() as u64,
            }),
            None => json!({"total_tokens": 0, "tool_uses": 0, "duration_ms": 0}),
        }
    }

    pub(super) fn progress(&mut self, task: &Task, last_tool: &str) {
        let usage = self.task_usage(&task.task_id);
        self.sys(
            "task_progress",
            json!({
                "task_id": task.task_id,
                "tool_use_id": task.tool_use_id,
                "description": task.description,
                "usage": usage,
                "last_tool_name": last_tool,
            }),
        );
    }

    pub(super) fn complete_task(
        &mut self,
        task: &Task,
        summary: &str,
        final_text: &str,
    ) -> Step<()> {
        self.pause(150, 300)?;
        let usage = self.task_usage(&task.task_id);
        self.sys(
            "task_updated",
            json!({"task_id": task.task_id, "patch": {"status": "completed", "end_time": epoch_ms()}}),
        );
        self.sys(
            "task_notification",
            json!({
                "task_id": task.task_id,
                "tool_use_id": task.tool_use_id,
                "status": "completed",
                "output_file": "",
                "summary": summary,
                "usage": usage,
            }),
        );
        let content = json!([{"type": "text", "text": final_text}]);
        let result = json!({
            "status": "completed",
            "prompt": task.prompt,
            "agentId": task.task_id,
            "agentType": task.subagent_type,
            "resolvedModel": self.model,
            "content": content,
            "totalDurationMs": usage["duration_ms"],
            "totalTokens": usage["total_tokens"],
            "totalToolUseCount": usage["tool_uses"],
            "usage": {"input_tokens": 12, "output_tokens": usage["total_tokens"]},
        });
        self.tasks.retain(|t| t.task_id != task.task_id);
        let ctx = Ctx {
            parent: task.parent.clone(),
            ..Ctx::default()
        };
        self.tool_result(&ctx, &task.tool_use_id, content, false, Some(result));
        Ok(())
    }

    // ---- turns
}
