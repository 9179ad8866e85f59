//! The `web` script: a failing CSS snapshot test. Within the first seconds it has a Bash
//! (`npm test`, the same input as the `docs` script's), a question and a helper's Edit of the
//! stylesheet open at once; once the fix is allowed it reruns the tests (a rule added on the first
//! run allows the second).

use serde_json::json;

use super::parallel::{Gates, Settled, bash_frames, bash_input, edit_frames, edit_input};
use super::{Agent, Ctx, Step};

pub(super) const WEB_THINKING: &str =
    "The snapshot broke when the theme tokens were renamed: a stale token, probably.";

pub(super) const WEB_OPENING: &str =
    "I'll rerun the tests, ask you one thing, and have a helper fix the stylesheet.";

/// The test command both the `web` and the `docs` scripts run: identical gates across sessions.
pub(super) const NPM_TEST: &str = "npm test";
pub(super) const NPM_TEST_WHY: &str = "Run the test suite";

pub(super) const WEB_TEST_FAIL: &str = "FAIL src/components/Button.test.tsx\n  \
● Button › matches the snapshot\n\n    - padding: 8px 16px;\n    + padding: 0 0;\n\n\
Tests: 1 failed, 41 passed, 42 total";
pub(super) const WEB_TEST_PASS: &str =
    "PASS src/components/Button.test.tsx\n\nTests: 42 passed, 42 total";

pub(super) const WEB_Q: &str = "Should I regenerate the dark-theme snapshot too?";

pub(super) const CSS_PATH: &str = "src/components/Button.module.css";
pub(super) const CSS_FILE: &str = ".button {\n  padding: var(--space-2) var(--space-4);\n  \
border-radius: var(--radius-md);\n}\n";
pub(super) const CSS_OLD: &str = "  padding: var(--space-2) var(--space-4);";
pub(super) const CSS_NEW: &str = "  padding: var(--space-sm) var(--space-md);";

#[derive(Clone, Copy)]
enum Gate {
    Tests,
    Question,
    Css,
}

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn web_turn(&mut self) -> Step<String> {
        let main = Ctx::default();
        let helper = self.new_task(
            None,
            "Fix the Button stylesheet",
            "general-purpose",
            "Button.module.css still reads the removed --space-2/--space-4 tokens; move it to the new spacing scale so the snapshot matches.",
        );
        let test_id = self.tool_id();
        let test_input = bash_input(NPM_TEST, NPM_TEST_WHY);
        let ask_id = self.tool_id();
        let ask_input = json!({"questions": [
            {"question": WEB_Q, "header": "Dark theme", "multiSelect": false, "options": [
                {"label": "Regenerate it", "description": "Update the dark-theme snapshot with the fix"},
                {"label": "Leave it", "description": "Only the light-theme snapshot changes"},
            ]},
        ]});

        let mut m = self.begin(&main);
        self.thinking(&mut m, WEB_THINKING)?;
        self.text(&mut m, WEB_OPENING)?;
        self.tool_use(&mut m, &test_id, "Bash", &test_input)?;
        self.tool_use(&mut m, &ask_id, "AskUserQuestion", &ask_input)?;
        self.tool_use(&mut m, &helper.tool_use_id, "Agent", &helper.input())?;
        self.end(&mut m, "tool_use");

        let mut gates = Gates::new();
        let prompt = self.bash_prompt(NPM_TEST, NPM_TEST_WHY);
        self.open_perm(
            &mut gates,
            Gate::Tests,
            &main,
            "Bash",
            &test_id,
            &test_input,
            prompt,
        )?;
        self.open_ask(&mut gates, Gate::Question, &main, &ask_id, &ask_input)?;
        let helper_on = self.open_task(&helper)?;
        let hc = helper.ctx();
        let css_id = self.tool_id();
        let css_input = edit_input(CSS_PATH, CSS_OLD, CSS_NEW);
        if helper_on {
            let mut m = self.begin(&hc);
            self.text(&mut m, "Moving the padding to the new spacing tokens.")?;
            self.tool_use(&mut m, &css_id, "Edit", &css_input)?;
            self.end(&mut m, "tool_use");
            self.progress(&helper, "Edit");
            let prompt = self.edit_prompt(
                CSS_PATH,
                "Move the Button padding to the new spacing tokens",
            );
            self.open_perm(
                &mut gates,
                Gate::Css,
                &hc,
                "Edit",
                &css_id,
                &css_input,
                prompt,
            )?;
        }

        let cwd = self.cwd.clone();
        let mut notes: Vec<String> = Vec::new();
        let mut css_fixed = false;
        while let Some((gate, settled)) = self.next_settled(&mut gates)? {
            match gate {
                Gate::Tests => {
                    let (said, _) =
                        self.close_perm(&main, &test_id, "`npm test`", settled, |_, _| {
                            bash_frames(WEB_TEST_FAIL)
                        })?;
                    notes.push(format!("`npm test`: {said}"));
                }
                Gate::Question => notes.push(Self::close_ask(settled).text),
                Gate::Css => {
                    let (said, ran) = self.close_perm(
                        &hc,
                        &css_id,
                        &format!("Helper's edit of {CSS_PATH}"),
                        settled,
                        |used, edited| edit_frames(&cwd, CSS_FILE, used, edited),
                    )?;
                    css_fixed = ran;
                    let text = if ran {
                        format!("Padding now uses the new spacing tokens. {said}")
                    } else {
                        format!("{said} I left {CSS_PATH} as it was.")
                    };
                    self.say(&hc, &text, "end_turn")?;
                    self.complete_task(&helper, &text, &text)?;
                    notes.push(format!("Helper: {text}"));
                }
            }
        }
        self.pause_step()?;

        // With the fix in, the same `npm test` again (a rule added on the first run allows it).
        let mut lead = notes.join("\n");
        if css_fixed {
            let rerun_id = self.tool_id();
            let mut m = self.begin(&main);
            self.text(
                &mut m,
                "The stylesheet is fixed; running the suite once more.",
            )?;
            self.tool_use(&mut m, &rerun_id, "Bash", &test_input)?;
            self.end(&mut m, "tool_use");
            let prompt = self.bash_prompt(NPM_TEST, NPM_TEST_WHY);
            let settled = self.perm_now(&main, "Bash", &rerun_id, &test_input, prompt)?;
            if let Settled::Perm(_) = &settled {
                self.pause(200, 400)?;
            }
            let (said, ran) = self.close_perm(
                &main,
                &rerun_id,
                "`npm test` after the fix",
                settled,
                |_, _| bash_frames(WEB_TEST_PASS),
            )?;
            lead.push_str(&if ran {
                format!("\nThe snapshot passes again (42 of 42). {said}")
            } else {
                format!("\nI could not confirm the fix: {said}")
            });
            self.pause_step()?;
        }
        let summary = self.summary(&lead);
        self.say(&main, &summary, "end_turn")?;
        Ok(summary)
    }
}
