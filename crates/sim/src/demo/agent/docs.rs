//! The `docs` script: the changelog and README of a release. Within the first seconds it has a
//! Bash (`npm test`, the same input as the `web` script's), a multi-select question and a
//! helper's Edit of the README open at once; then it edits the changelog with what you chose.

use serde_json::{Value, json};

use super::parallel::{Gates, bash_frames, bash_input, edit_frames, edit_input};
use super::web::{NPM_TEST, NPM_TEST_WHY};
use super::{Agent, Ctx, Step};

pub(super) const DOCS_OPENING: &str =
    "I'll check the tests, ask what to call out, and have a helper fix the README.";

pub(super) const DOCS_TEST_PASS: &str = "PASS src/components/Button.test.tsx\n\
PASS src/theme/tokens.test.ts\n\nTests: 42 passed, 42 total";

pub(super) const DOCS_Q: &str = "Which changes should the 2.4.0 changelog call out?";
/// The options of [`DOCS_Q`], in order.
pub(super) const CHANGES: [(&str, &str); 4] = [
    ("Theme tokens", "Spacing and radius tokens renamed"),
    ("Button sizes", "`size` replaces `small`/`large`"),
    ("Dark mode fixes", "Contrast fixes in five components"),
    ("Dropped IE 11", "No more legacy build"),
];

pub(super) const README_PATH: &str = "README.md";
pub(super) const README_FILE: &str = "# @acme/ui\n\nReact components for Acme apps.\n\n## Usage\n\n\
```sh\nnpm install @acme/ui@2.3\n```\n\n```tsx\n<Button small>Save</Button>\n```\n";
pub(super) const README_OLD: &str =
    "npm install @acme/ui@2.3\n```\n\n```tsx\n<Button small>Save</Button>";
pub(super) const README_NEW: &str =
    "npm install @acme/ui@2.4\n```\n\n```tsx\n<Button size=\"sm\">Save</Button>";

pub(super) const CHANGELOG_PATH: &str = "CHANGELOG.md";
pub(super) const CHANGELOG_FILE: &str = "# Changelog\n\n## 2.3.0\n\n- Tooltip component\n";
pub(super) const CHANGELOG_OLD: &str = "# Changelog\n";

#[derive(Clone, Copy)]
enum Gate {
    Tests,
    Question,
    Readme,
}

/// The changelog bullets for the labels chosen in the answers (all of them when none is).
pub(super) fn changelog_entry(answers: Option<&Value>) -> String {
    let chosen: Vec<String> = match answers.and_then(|a| a.get(DOCS_Q)) {
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let bullets: Vec<String> = CHANGES
        .iter()
        .filter(|(label, _)| chosen.is_empty() || chosen.iter().any(|c| c == label))
        .map(|(label, what)| format!("- {label}: {what}"))
        .collect();
    let bullets = if bullets.is_empty() {
        // Labels the human typed that are not ours: use them verbatim.
        chosen.iter().map(|c| format!("- {c}")).collect()
    } else {
        bullets
    };
    format!("# Changelog\n\n## 2.4.0\n\n{}\n", bullets.join("\n"))
}

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn docs_turn(&mut self) -> Step<String> {
        let main = Ctx::default();
        let helper = self.new_task(
            None,
            "Refresh the README usage section",
            "general-purpose",
            "Update the install and usage snippet in README.md to the 2.4.0 API (`<Button size=\"sm\">`).",
        );
        let test_id = self.tool_id();
        let test_input = bash_input(NPM_TEST, NPM_TEST_WHY);
        let ask_id = self.tool_id();
        let options: Vec<Value> = CHANGES
            .iter()
            .map(|(label, description)| json!({"label": label, "description": description}))
            .collect();
        let ask_input = json!({"questions": [
            {"question": DOCS_Q, "header": "Changelog", "multiSelect": true, "options": options},
        ]});

        let mut m = self.begin(&main);
        self.text(&mut m, DOCS_OPENING)?;
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
        let readme_id = self.tool_id();
        let readme_input = edit_input(README_PATH, README_OLD, README_NEW);
        if helper_on {
            let mut m = self.begin(&hc);
            self.text(&mut m, "The usage snippet still shows 2.3 and `small`.")?;
            self.tool_use(&mut m, &readme_id, "Edit", &readme_input)?;
            self.end(&mut m, "tool_use");
            self.progress(&helper, "Edit");
            let prompt = self.edit_prompt(README_PATH, "Update the usage snippet to 2.4.0");
            self.open_perm(
                &mut gates,
                Gate::Readme,
                &hc,
                "Edit",
                &readme_id,
                &readme_input,
                prompt,
            )?;
        }

        let cwd = self.cwd.clone();
        let mut notes: Vec<String> = Vec::new();
        let mut answers: Option<Value> = None;
        while let Some((gate, settled)) = self.next_settled(&mut gates)? {
            match gate {
                Gate::Tests => {
                    let (said, _) =
                        self.close_perm(&main, &test_id, "`npm test`", settled, |_, _| {
                            bash_frames(DOCS_TEST_PASS)
                        })?;
                    notes.push(format!("`npm test`: {said}"));
                }
                Gate::Question => {
                    let done = Self::close_ask(settled);
                    answers = done.answers;
                    notes.push(done.text);
                }
                Gate::Readme => {
                    let (said, ran) = self.close_perm(
                        &hc,
                        &readme_id,
                        &format!("Helper's edit of {README_PATH}"),
                        settled,
                        |used, edited| edit_frames(&cwd, README_FILE, used, edited),
                    )?;
                    let text = if ran {
                        format!("The README now shows the 2.4.0 install and API. {said}")
                    } else {
                        format!("{said} I left {README_PATH} as it was.")
                    };
                    self.say(&hc, &text, "end_turn")?;
                    self.complete_task(&helper, &text, &text)?;
                    notes.push(format!("Helper: {text}"));
                }
            }
        }
        self.pause_step()?;

        // The changelog entry, from what you picked.
        let entry = changelog_entry(answers.as_ref());
        let log_id = self.tool_id();
        let log_input = edit_input(CHANGELOG_PATH, CHANGELOG_OLD, &entry);
        let mut m = self.begin(&main);
        self.text(&mut m, "Now the changelog entry for 2.4.0.")?;
        self.tool_use(&mut m, &log_id, "Edit", &log_input)?;
        self.end(&mut m, "tool_use");
        let prompt = self.edit_prompt(CHANGELOG_PATH, "Add the 2.4.0 entry");
        let settled = self.perm_now(&main, "Edit", &log_id, &log_input, prompt)?;
        let (said, _) = self.close_perm(
            &main,
            &log_id,
            &format!("Edit of {CHANGELOG_PATH}"),
            settled,
            |used, edited| edit_frames(&cwd, CHANGELOG_FILE, used, edited),
        )?;
        notes.push(format!("{CHANGELOG_PATH}: {said}"));
        self.pause_step()?;
        let summary = self.summary(&notes.join("\n"));
        self.say(&main, &summary, "end_turn")?;
        Ok(summary)
    }
}
