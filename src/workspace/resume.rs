//! Which workspace to bring back after its host stopped without being stopped (a crash, a
//! kill, a reboot), and how: its manifest names every session with the profile it was started
//! from and its agent's own session id, and the recordings that hold its history.
//!
//! A workspace is *crashed* when its manifest is not closed and no live process holds its lock
//! (`manifest::lock`); *closed* when it was stopped (nothing to resume); *running* otherwise.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::manifest::{self, Manifest, SessionEntry};
use super::profile::{ProfileKind, SessionProfile};
use crate::core::text::neutralize;

/// Manifests looked at, newest first: enough for any real history of one user, bounded so a
/// recordings directory of years never makes `ls` slow.
pub const MAX_SCANNED: usize = 400;

/// What a name or a path found.
#[derive(Debug)]
pub enum Found {
    /// Ended without being stopped: it can be resumed.
    Crashed {
        path: PathBuf,
        manifest: Box<Manifest>,
    },
    /// The newest workspace of that name was stopped cleanly (at `closed_ms`).
    Closed { path: PathBuf, closed_ms: u64 },
    /// A live process holds it.
    Running { path: PathBuf },
}

/// The workspace manifests of the recordings directory, newest first (their names carry the
/// UTC time they were made), at most [`MAX_SCANNED`].
pub fn manifests() -> Vec<PathBuf> {
    let dir = crate::paths::recordings_dir();
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("workspace-") && n.ends_with(".json"))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    names
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| manifest::is_manifest(p) && ours(p).is_ok())
        .take(MAX_SCANNED)
        .collect()
}

/// A manifest a resume may act on: a regular file of ours that nobody else can write. Its
/// profiles name the commands to run and the gateway a token is sent to, so one someone else
/// wrote or could change is never resumed (replay and validate still read it).
fn ours(path: &Path) -> Result<(), String> {
    crate::paths::check_owner(path).map_err(|e| e.to_string())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let md = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !md.is_file() {
            return Err("not a regular file".into());
        }
        if md.permissions().mode() & 0o022 != 0 {
            return Err("others can write it: not resumed".into());
        }
    }
    Ok(())
}

fn classify(path: PathBuf, m: Manifest) -> Found {
    if manifest::lock::running(&path) {
        Found::Running { path }
    } else if let Some(closed_ms) = m.closed_ms {
        Found::Closed { path, closed_ms }
    } else {
        Found::Crashed {
            path,
            manifest: Box::new(m),
        }
    }
}

/// Whether `target` names a manifest file rather than a workspace.
fn is_path(target: &str) -> bool {
    target.contains('/') || target.ends_with(".json")
}

/// Once its lock is held: the manifest at `path` still reads as `planned`, the crashed
/// workspace the plan was made from. A resume that read it, then waited while another
/// resumed it (and perhaps stopped it cleanly) must not start its agents a second time.
pub fn still_as_planned(path: &Path, planned: &Manifest) -> Result<(), String> {
    let now = manifest::load_manifest(path)
        .map_err(|e| format!("{}: {e}", neutralize(&path.display().to_string())))?;
    if now == *planned {
        return Ok(());
    }
    Err(match now.closed_ms {
        Some(ms) => format!(
            "{} was resumed and stopped cleanly at {} while this resume waited: nothing to resume",
            neutralize(&path.display().to_string()),
            when(ms)
        ),
        None => format!(
            "{} changed while this resume read it (resumed from elsewhere?): run the resume again",
            neutralize(&path.display().to_string())
        ),
    })
}

/// The workspace `target` names: a manifest's path, a workspace (host) name, or (none) the
/// newest crashed workspace.
pub fn find(target: Option<&str>) -> Result<Found, String> {
    match target {
        Some(t) if is_path(t) => {
            let path = PathBuf::from(t);
            ours(&path).map_err(|e| format!("{}: {e}", neutralize(t)))?;
            let m =
                manifest::load_manifest(&path).map_err(|e| format!("{}: {e}", neutralize(t)))?;
            Ok(classify(path, m))
        }
        Some(name) => {
            crate::host::place::check_name(name)?;
            newest_named(name)
                .map(|(p, m)| classify(p, m))
                .ok_or_else(|| {
                    format!(
                        "no workspace named {name} in {}",
                        crate::paths::recordings_dir().display()
                    )
                })
        }
        None => crashed()
            .into_iter()
            .next()
            .map(|(p, m)| Found::Crashed {
                path: p,
                manifest: Box::new(m),
            })
            .ok_or_else(|| "no workspace ended unexpectedly: nothing to resume".to_string()),
    }
}

/// The newest manifest of workspace `name`.
pub fn newest_named(name: &str) -> Option<(PathBuf, Manifest)> {
    manifests().into_iter().find_map(|p| {
        let m = manifest::load_manifest(&p).ok()?;
        (m.name.as_deref() == Some(name)).then_some((p, m))
    })
}

/// Crashed workspaces, newest first: of each name only the newest (a fresh start of a name
/// leaves its crashed predecessor to `resume PATH`), and every unnamed one.
pub fn crashed() -> Vec<(PathBuf, Manifest)> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for p in manifests() {
        let Ok(m) = manifest::load_manifest(&p) else {
            continue;
        };
        if let Some(n) = &m.name {
            if seen.contains(n) {
                continue;
            }
            seen.push(n.clone());
        }
        if m.closed_ms.is_none() && !manifest::lock::running(&p) {
            out.push((p, m));
        }
    }
    out
}

/// One session to start again.
#[derive(Clone, Debug)]
pub struct Back {
    /// Its id in the manifest (its entry goes on).
    pub mid: u32,
    pub profile: SessionProfile,
    /// The agent's own session id (Claude `--resume`, ACP `session/load`).
    pub agent_session: Option<String>,
    /// Its recordings so far, in order (the first, then each continuation): its history.
    pub history: Vec<PathBuf>,
    /// The rules made for it only ("this session"), added again as it comes back.
    pub rules: Vec<crate::core::rules::RuleSpec>,
}

/// How a crashed workspace comes back.
#[derive(Clone, Debug)]
pub struct Plan {
    pub path: PathBuf,
    pub manifest: Manifest,
    /// When the host stopped: the last time anything of it was recorded.
    pub stopped_ms: u64,
    pub sessions: Vec<Back>,
    /// Sessions that do not come back, each with why.
    pub left: Vec<String>,
    /// When the resume was written into the manifest, before any agent started again
    /// (`None` until then, and in a front that only starts the host).
    pub resumed_ms: Option<u64>,
}

/// Plan the return of the workspace `m` read from `path`. `config`: the profiles of
/// config.toml now, where a session's secrets (iii handshake headers) are read again.
pub fn plan(path: &Path, m: Manifest, config: &[SessionProfile]) -> Plan {
    let mut sessions = Vec::new();
    let mut left = Vec::new();
    let mut stopped_ms = m.started_ms;
    for d in &m.decisions {
        stopped_ms = stopped_ms.max(d.at_ms);
    }
    if let Ok(t) = std::fs::metadata(path).and_then(|md| md.modified())
        && let Ok(d) = t.duration_since(std::time::UNIX_EPOCH)
    {
        stopped_ms = stopped_ms.max(d.as_millis() as u64);
    }
    for s in &m.sessions {
        let history = recordings(path, s);
        for h in &history {
            if let Some(ts) = last_ts(h) {
                stopped_ms = stopped_ms.max(ts);
            }
        }
        let name = neutralize(&s.name).into_owned();
        if s.closed_ms.is_some() {
            // It had ended before the host stopped: its history replays, it does not restart.
            continue;
        }
        let Some(r) = &s.resume else {
            use crate::core::BackendKind;
            left.push(match BackendKind::from_name(&s.backend) {
                Some(BackendKind::Adopted) => {
                    format!("{name}: sessions in their own terminals rejoin through their hooks")
                }
                Some(BackendKind::Iii) => {
                    format!("{name}: its engine shows it again when the workspace reconnects")
                }
                // A conversation the gateway host opened: it opens it again on the channel.
                Some(BackendKind::Gateway) => {
                    format!("{name}: its gateway host opens it again when the channel reconnects")
                }
                _ => {
                    format!(
                        "{name}: how it was started was not recorded before the host stopped: \
                     it cannot be started again"
                    )
                }
            });
            continue;
        };
        let mut profile = match super::saved::from_json(&r.profile) {
            Ok(p) => p,
            Err(e) => {
                left.push(format!("{name}: its saved profile cannot be read: {e}"));
                continue;
            }
        };
        let wanted = super::saved::header_names(&r.profile);
        if profile.backend == ProfileKind::Iii && !wanted.is_empty() {
            match config.iter().find(|c| {
                c.name == profile.name
                    && c.backend == ProfileKind::Iii
                    && c.engine == profile.engine
            }) {
                Some(c) => profile.headers = c.headers.clone(),
                None => left.push(format!(
                    "{name}: its engine handshake headers ({}) were not kept (they may be \
                     secrets) and config.toml has no iii profile of that name for that engine: \
                     it connects without them",
                    neutralize(&wanted.join(", "))
                )),
            }
        }
        // The id goes on the agent's command line (`--resume ID`): one that could read as a
        // flag, or holds anything but an id's characters, is not used.
        let agent_session = match &r.agent_session {
            Some(id) if !manifest::agent_session_ok(id) => {
                left.push(format!(
                    "{name}: its agent's session id {:?} is not one an agent gives: it starts \
                     a new conversation",
                    neutralize(id)
                ));
                None
            }
            other => other.clone(),
        };
        sessions.push(Back {
            mid: s.id,
            profile,
            agent_session,
            history,
            rules: s.rules.clone(),
        });
    }
    Plan {
        path: path.to_path_buf(),
        manifest: m,
        stopped_ms,
        sessions,
        left,
        resumed_ms: None,
    }
}

/// Session `s`'s recordings that exist, in order.
pub fn recordings(manifest_path: &Path, s: &SessionEntry) -> Vec<PathBuf> {
    s.recording
        .iter()
        .chain(s.continued.iter())
        .map(|r| Manifest::resolve(manifest_path, r))
        .filter(|p| p.is_file())
        .collect()
}

/// The time of a recording's last whole entry, read from its tail.
pub fn last_ts(path: &Path) -> Option<u64> {
    const TAIL: u64 = 64 << 10;
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut buf = Vec::with_capacity(TAIL as usize);
    f.take(TAIL).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    // The last line may be torn by the crash: the last one that parses counts.
    text.lines().rev().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        v.get("ts")
            .or_else(|| v.get("started_ms"))
            .and_then(serde_json::Value::as_u64)
    })
}

/// The time of a day, for the user: `14:02 UTC`, with the date when it is not today.
pub fn when(ms: u64) -> String {
    let stamp = crate::record::utc_from_secs((ms / 1000) as i64);
    let today = crate::record::utc_from_secs((crate::record::now_ms() / 1000) as i64);
    // `YYYY-MM-DDTHH:MM:SSZ`: the date is the first 10 characters.
    let clock = crate::core::update::utc_clock(ms);
    if stamp.get(..10) == today.get(..10) {
        clock
    } else {
        format!("{} {clock}", stamp.get(..10).unwrap_or(""))
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
