//! The four real ACP agents pinned in `tests/peers` (opencode, gemini-cli, codex-acp,
//! claude-agent-acp), each started against a local fake of its model API that the test owns:
//! where its program is, its command line, a declared environment (a scratch `HOME`, `PATH`,
//! the agent's offline settings; variables that would point it at a real account are
//! removed) and the config files it reads, written into the test's scratch directory.
//! `shared/reference/acp.md` §12 tells how each runs offline.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::json;

use switchboard::backend::acp::session::AcpConfig;

use super::common::{CLAUDE_CLI, manifest, require_or_skip};
use super::fake_gemini::FakeGemini;
use super::fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env, temp_dir};
use super::fake_openai::FakeOpenAi;
use super::fake_script::Script;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Opencode,
    Gemini,
    Codex,
    Claude,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Opencode => "opencode",
            Kind::Gemini => "gemini",
            Kind::Codex => "codex",
            Kind::Claude => "claude",
        }
    }

    /// Its scenario, `fixtures/scenarios/agent_<name>.json`.
    fn scenario(self) -> String {
        format!("agent_{}", self.name())
    }
}

/// The fake model API an agent talks to.
pub enum Model {
    Anthropic(FakeModel),
    Gemini(FakeGemini),
    OpenAi(FakeOpenAi),
}

impl Model {
    pub fn base_url(&self) -> String {
        match self {
            Model::Anthropic(m) => m.base_url(),
            Model::Gemini(m) => m.base_url(),
            Model::OpenAi(m) => m.base_url(),
        }
    }

    /// Every request so far, one line each.
    pub fn dump(&self) -> String {
        match self {
            Model::Anthropic(m) => m.dump(),
            Model::Gemini(m) => m.http.dump(),
            Model::OpenAi(m) => m.http.dump(),
        }
    }

    /// The names of the scenario rules that answered, in order.
    pub fn fired(&self) -> Vec<String> {
        match self {
            Model::Anthropic(m) => m.fired_rules(),
            Model::Gemini(m) => m.turns().into_iter().filter_map(|r| r.rule).collect(),
            Model::OpenAi(m) => m.turns().into_iter().filter_map(|r| r.rule).collect(),
        }
    }

    #[track_caller]
    pub fn assert_no_unexpected(&self) {
        match self {
            Model::Anthropic(m) => m.assert_no_unexpected(),
            Model::Gemini(m) => m.http.assert_no_unexpected(),
            Model::OpenAi(m) => m.http.assert_no_unexpected(),
        }
    }
}

/// What a test may change about an agent's start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Opts {
    /// Do not offer the agent the client's `fs` capability.
    pub withhold_fs: bool,
}

/// An agent ready to start: its config, its running fake model, its scratch directories.
pub struct Setup {
    pub config: AcpConfig,
    pub model: Model,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub record: PathBuf,
}

fn peers() -> PathBuf {
    manifest("tests/peers/node_modules")
}

/// The agent's program if installed (`npm ci --prefix tests/peers`).
pub fn program(kind: Kind) -> Option<PathBuf> {
    let p = match kind {
        Kind::Opencode => peers().join("opencode-linux-x64/bin/opencode"),
        Kind::Gemini => peers().join(".bin/gemini"),
        Kind::Codex => peers().join("@zed-industries/codex-acp-linux-x64/bin/codex-acp"),
        Kind::Claude => peers().join(".bin/claude-agent-acp"),
    };
    Some(p).filter(|p| p.is_file())
}

/// Variables of ours that would send an agent to a real account, a real endpoint or a
/// developer's own settings: removed from its environment.
const REMOVE: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_GEMINI_BASE_URL",
    "NO_PROXY",
    "no_proxy",
    // Agents behave differently under CI (gemini-cli among them): the same run everywhere.
    "CI",
];

/// The declared environment every agent starts from: removals, then a scratch `HOME` and XDG
/// directories under `home`, our `PATH` (the agents are node scripts or find tools there).
fn base_env(home: &Path) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = CLAUDE_ENV_REMOVE
        .iter()
        .chain(REMOVE)
        .map(|k| (k.to_string(), None))
        .collect();
    // Any setting of these agents' own we might hold (OPENCODE_*, CODEX_*, GEMINI_*).
    for (k, _) in std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))) {
        if ["OPENCODE_", "CODEX_", "GEMINI_"]
            .iter()
            .any(|p| k.starts_with(p))
        {
            env.push((k, None));
        }
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let d = |rel: &str| Some(home.join(rel).display().to_string());
    env.extend([
        ("HOME".into(), d("")),
        ("XDG_CONFIG_HOME".into(), d(".config")),
        ("XDG_DATA_HOME".into(), d(".local/share")),
        ("XDG_CACHE_HOME".into(), d(".cache")),
        ("XDG_STATE_HOME".into(), d(".local/state")),
        ("PATH".into(), Some(path)),
        ("NO_COLOR".into(), Some("1".into())),
    ]);
    env
}

fn set(env: &mut Vec<(String, Option<String>)>, pairs: &[(&str, String)]) {
    for (k, v) in pairs {
        env.retain(|(x, _)| x != k);
        env.push((k.to_string(), Some(v.clone())));
    }
}

/// Start `kind`'s fake model and prepare its agent, or `None` under the skip rule when the
/// agent is not installed (a failure under `CI=true`).
pub fn setup(kind: Kind, tag: &str, opts: Opts) -> Option<Setup> {
    let test = format!("{}_{tag}", kind.name());
    let prog = require_or_skip(
        &test,
        &format!("{} (npm ci --prefix tests/peers)", kind.name()),
        program(kind),
    )?;
    let claude = match kind {
        Kind::Claude => Some(require_or_skip(&test, CLAUDE_CLI, claude_bin())?),
        _ => None,
    };
    let root = temp_dir(&format!("agent-{test}"));
    let cwd = root.join("cwd");
    let home = root.join("home");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let cwd = std::fs::canonicalize(&cwd).unwrap();
    let cwd_s = cwd.display().to_string();
    let mut env = base_env(&home);
    let mut args: Vec<String> = Vec::new();
    let model = match kind {
        Kind::Opencode | Kind::Claude => Model::Anthropic(FakeModel::start_blocking(
            Scenario::load(&kind.scenario()).with_var("cwd", &cwd_s),
        )),
        Kind::Gemini => Model::Gemini(FakeGemini::start(
            Script::load(&kind.scenario()).with_var("cwd", &cwd_s),
        )),
        Kind::Codex => Model::OpenAi(FakeOpenAi::start(
            Script::load(&kind.scenario()).with_var("cwd", &cwd_s),
        )),
    };
    let url = model.base_url();
    match kind {
        Kind::Opencode => {
            let config = root.join("opencode.json");
            let v = json!({
                "$schema": "https://opencode.ai/config.json",
                "model": "anthropic/claude-sonnet-4-5",
                "small_model": "anthropic/claude-haiku-4-5",
                "provider": {"anthropic": {"options": {
                    "baseURL": format!("{url}/v1"),
                    "apiKey": "sk-ant-fake-opencode"
                }}},
                // Its default allows shell and edits without asking.
                "permission": {"bash": "ask", "edit": "ask"},
                "autoupdate": false,
                "share": "disabled"
            });
            std::fs::write(&config, serde_json::to_string_pretty(&v).unwrap()).unwrap();
            args.push("acp".into());
            let one = || "1".to_string();
            set(
                &mut env,
                &[
                    ("OPENCODE_CONFIG", config.display().to_string()),
                    ("OPENCODE_DISABLE_MODELS_FETCH", one()),
                    ("OPENCODE_DISABLE_AUTOUPDATE", one()),
                    ("OPENCODE_DISABLE_LSP_DOWNLOAD", one()),
                    ("OPENCODE_DISABLE_SHARE", one()),
                    ("OPENCODE_DISABLE_DEFAULT_PLUGINS", one()),
                    ("OPENCODE_DISABLE_CLAUDE_CODE", one()),
                    ("OPENCODE_DISABLE_EXTERNAL_SKILLS", one()),
                ],
            );
        }
        Kind::Gemini => {
            let dir = home.join(".gemini");
            std::fs::create_dir_all(&dir).unwrap();
            let v = json!({
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
            });
            std::fs::write(dir.join("settings.json"), v.to_string()).unwrap();
            args.extend(["--acp", "-m", "gemini-2.5-flash"].map(String::from));
            set(
                &mut env,
                &[
                    ("GOOGLE_GEMINI_BASE_URL", url),
                    ("GEMINI_API_KEY", "fake-gemini-key".into()),
                ],
            );
        }
        Kind::Codex => {
            let codex_home = root.join("codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            // Read-only sandbox and on-request approvals: a write or a command that asks for
            // escalation asks the client first. Legacy landlock: the CI kernel may lack the new.
            let toml = format!(
                r#"model = "gpt-5.5"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
use_legacy_landlock = true
"#
            );
            std::fs::write(codex_home.join("config.toml"), toml).unwrap();
            set(
                &mut env,
                &[
                    ("CODEX_HOME", codex_home.display().to_string()),
                    ("FAKE_OPENAI_API_KEY", "sk-fake-openai".into()),
                ],
            );
        }
        Kind::Claude => {
            let pairs: Vec<(String, String)> = claude_env(&home, &url);
            for (k, v) in pairs {
                env.retain(|(x, _)| *x != k);
                env.push((k, Some(v)));
            }
            set(
                &mut env,
                &[
                    (
                        "CLAUDE_CODE_EXECUTABLE",
                        claude.unwrap().display().to_string(),
                    ),
                    // Root may not use the CLI's permission-skipping mode otherwise.
                    ("IS_SANDBOX", "1".into()),
                ],
            );
        }
    }
    let record = root.join("recording.jsonl");
    let config = AcpConfig {
        program: prog,
        args,
        cwd: cwd.clone(),
        record: Some(record.clone()),
        env,
        withhold_fs: opts.withhold_fs,
        ..AcpConfig::default()
    };
    Some(Setup {
        config,
        model,
        root,
        cwd,
        record,
    })
}
