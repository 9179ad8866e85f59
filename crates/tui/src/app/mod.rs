//! The app: owns the state, runs effects, joins backend events with terminal input.

mod effects;
pub use effects::notify_message;
pub mod frames;
pub mod headless;
pub mod input;
pub mod term;

use std::time::Duration;

use std::pin::Pin;

use futures_util::FutureExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::{Stream, StreamExt, StreamMap};

use crate::ui::theme::Theme;
use switchboard_backend::{Backend, EVENT_CHANNEL};
use switchboard_core::msg::{BackendEvent, Command, Stamped};
use switchboard_core::state::{SessionId, Settings};
use switchboard_core::{Msg, State};
use switchboard_record::now_ms;

/// Most backend messages applied in one turn of the terminal loop.
pub const DRAIN_MAX: usize = 1024;
/// Longest time one turn of the terminal loop spends applying backend messages, so keys are
/// read (and the screen drawn) at least this often under any flood.
pub const DRAIN_TIME: Duration = Duration::from_millis(8);

/// How long quitting waits for the backend to answer, close and stop the agent.
/// Longer than the backend's own worst case (3 s grace, SIGTERM 1 s, SIGKILL 2 s, leftovers of
/// the group 1 s); past it the runtime is dropped, which still SIGKILLs the agent's group.
pub const BACKEND_STOP_TIMEOUT: Duration = Duration::from_secs(8);

/// One session source's events, ending with `None` once its backend dropped the channel.
type SourceEvents = Pin<Box<dyn Stream<Item = Option<Stamped>> + Send>>;

/// A running session source: one backend task and its command channel.
struct Source {
    session: SessionId,
    commands: mpsc::UnboundedSender<Command>,
    task: Option<JoinHandle<()>>,
}

pub struct App {
    pub state: State,
    pub theme: Theme,
    sources: Vec<Source>,
    /// Every source's bounded channel, polled fairly (a flooding session cannot starve
    /// another: `StreamMap` starts each poll at a random stream).
    events: StreamMap<SessionId, SourceEvents>,
    /// Set by `Effect::Quit`: the loop ends after the backend stopped.
    pub quit: bool,
    /// Set by `Effect::Detach`: the host lets the client whose key it was go.
    pub detach: bool,
    /// Gates answered since the host last took them (who answered what, for the notice a
    /// client gets when its key comes second). Nobody else reads it: the host empties it.
    pub answered: Vec<switchboard_core::state::GateRef>,
    /// Ring the notification command on every bell (a terminal's app). A host rings it
    /// itself, once per gate, while no client is attached.
    pub notify_on_bell: bool,
    /// Bells requested since the last flush (the terminal loop rings them).
    pub bells: u32,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// Run (through `sh -c`) when a gate opens, from config.toml.
    pub notify_command: Option<String>,
    /// Texts to put on the clipboard (the terminal loop writes OSC 52).
    pub copies: Vec<String>,
    /// Texts to show in the pager (the terminal loop suspends the TUI for it).
    pub pages: Vec<String>,
    /// Starts the sessions the new-session dialog asks for (set by the command line).
    pub launcher: Option<Launcher>,
    /// Told every session opened and closed and every decision sent (the workspace manifest).
    pub observer: Option<Box<dyn WorkspaceObserver>>,
    /// Stopped by a signal or a lost terminal, not by its owner (`q`, `stop`): the manifest
    /// stays open, so `resume` brings the workspace back (a reboot's SIGTERM among them).
    pub interrupted: bool,
    /// Saves and removes rules in the rules file (`r` in a card, the rules view); set by the
    /// command line, which owns the config. Without it a rule applies for this run only.
    pub rule_file: Option<RuleFile>,
    /// Where hook events go (the adopted-sessions source), once it runs.
    hook_sink: Option<switchboard_backend::hooks::HookSink>,
    /// Builds the adopted-sessions source the first time a hook calls (a host's workspace
    /// that did not start with one): its backend, and where its events go.
    pub adopt: Option<AdoptFactory>,
    /// How each session that can be started again was started (its profile as JSON): the
    /// manifest keeps it, so a crashed workspace can be resumed.
    profiles: std::collections::HashMap<SessionId, serde_json::Value>,
    /// Sources that host several sessions ask for more here.
    spawner: switchboard_backend::Spawner,
    spawns: mpsc::UnboundedReceiver<switchboard_backend::SpawnRequest>,
}

/// An edit of the rules file at a path: an error says why the file was left as it was.
pub type RuleEdit = fn(&std::path::Path, &switchboard_core::rules::RuleSpec) -> Result<(), String>;

/// How the app edits the rules file (the product's config module does it).
#[derive(Clone, Copy, Debug)]
pub struct RuleFile {
    pub append: RuleEdit,
    pub remove: RuleEdit,
}

/// Builds a backend for a new session.
pub type Launcher =
    Box<dyn FnMut(&switchboard_core::msg::NewSession) -> Result<Launched, String> + Send>;

/// A session the launcher built, not yet started.
pub struct Launched {
    /// Its root's name in the tree.
    pub name: String,
    pub backend: Box<dyn Backend>,
    /// Its own rules, added to the workspace's for it.
    pub rules: switchboard_core::rules::Rules,
    /// How to start it again after a crash (the workspace manifest keeps it).
    pub profile: Option<serde_json::Value>,
}

/// Builds the adopted-sessions source: `(its session's name, the backend, its hook sink)`.
pub type AdoptFactory = Box<
    dyn FnOnce() -> (
            String,
            Box<dyn Backend>,
            switchboard_backend::hooks::HookSink,
        ) + Send,
>;

/// What the workspace manifest records, told by the app as it happens. A failure is shown
/// in the footer and the log; the sessions go on.
pub trait WorkspaceObserver: Send {
    fn session_opened(
        &mut self,
        id: SessionId,
        name: &str,
        backend: switchboard_core::BackendKind,
        at_ms: u64,
    ) -> Result<(), String>;
    fn session_recording(&mut self, id: SessionId, path: &str) -> Result<(), String>;
    fn session_ended(
        &mut self,
        id: SessionId,
        exit_code: Option<i32>,
        at_ms: u64,
    ) -> Result<(), String>;
    /// `by`: human, batch, rule, covered, quit or close.
    fn decision(
        &mut self,
        id: SessionId,
        gate_id: &str,
        decision: &switchboard_core::gate::Decision,
        by: &str,
        at_ms: u64,
    ) -> Result<(), String>;
    /// What a session needs to come back after a crash: its profile as started (the command
    /// line sets it, as the session opens), the agent's own session id and whether it can
    /// load a session (the app tells them as the agent says them).
    fn session_resume(
        &mut self,
        _id: SessionId,
        _profile: Option<serde_json::Value>,
        _agent_session: Option<&str>,
        _load_session: Option<bool>,
    ) -> Result<(), String> {
        Ok(())
    }
    /// A rule made for session `id` only (`a`; one kept without a rules file): a resume
    /// adds it again.
    fn session_rule(
        &mut self,
        _id: SessionId,
        _spec: &switchboard_core::rules::RuleSpec,
    ) -> Result<(), String> {
        Ok(())
    }
    /// That rule was deleted (the rules view's `d`): a resume must not add it again.
    fn session_rule_removed(
        &mut self,
        _id: SessionId,
        _spec: &switchboard_core::rules::RuleSpec,
    ) -> Result<(), String> {
        Ok(())
    }
    /// The workspace stopped cleanly (nothing to resume).
    fn closed(&mut self, _at_ms: u64) -> Result<(), String> {
        Ok(())
    }
    /// Write what is known now, before returning (a workspace's start).
    fn sync(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Where the manifest is.
    fn path(&self) -> Option<std::path::PathBuf>;
    /// Failures of writes done in the background since the last call.
    fn take_errors(&mut self) -> Vec<String> {
        Vec::new()
    }
}

impl App {
    /// Start `backend` as a workspace of one session. Must run inside a tokio runtime.
    pub fn start(backend: Box<dyn Backend>, settings: Settings, theme: Theme) -> App {
        let mut state = State::new(backend.kind(), &backend.root_name(), now_ms());
        state.reply_check = backend.reply_check();
        state.sessions[0].keeps_gates_on_quit = backend.keeps_gates_on_quit();
        state.settings = settings;
        let (spawner, spawns) = switchboard_backend::Spawner::channel();
        let mut app = App {
            spawner,
            spawns,
            state,
            theme,
            sources: Vec::new(),
            events: StreamMap::new(),
            quit: false,
            detach: false,
            answered: Vec::new(),
            notify_on_bell: true,
            bells: 0,
            dirty: true,
            notify_command: None,
            copies: Vec::new(),
            pages: Vec::new(),
            launcher: None,
            observer: None,
            interrupted: false,
            rule_file: None,
            hook_sink: None,
            adopt: None,
            profiles: Default::default(),
        };
        app.run_source(SessionId::FIRST, backend);
        app
    }

    /// Hook events go to `sink` (the adopted-sessions source already runs).
    pub fn set_hook_sink(&mut self, sink: switchboard_backend::hooks::HookSink) {
        self.hook_sink = Some(sink);
    }

    /// A hook event from a CLI: to the adopted-sessions source, started now if it is not
    /// yet. Without one (or while quitting) the call is dropped and its hook falls through.
    pub fn hook_call(&mut self, call: switchboard_backend::hooks::HookCall) {
        if self.state.quitting {
            return;
        }
        if self.hook_sink.as_ref().is_none_or(|s| s.closed())
            && let Some(make) = self.adopt.take()
        {
            let (name, backend, sink) = make();
            self.add_session(&name, backend, switchboard_core::rules::Rules::default());
            self.hook_sink = Some(sink);
        }
        if let Some(sink) = &self.hook_sink {
            sink.offer(call);
        }
    }

    /// Start `backend` as one more session of the workspace, named `name` in the tree, with
    /// its own rules (added to the workspace's, for this session only). Returns its id.
    pub fn add_session(
        &mut self,
        name: &str,
        backend: Box<dyn Backend>,
        rules: switchboard_core::rules::Rules,
    ) -> SessionId {
        let id = self.open_session(
            name,
            backend.kind(),
            backend.reply_check(),
            backend.keeps_gates_on_quit(),
        );
        for r in rules.list {
            self.state.rules.add_scoped(r.spec, r.origin, Some(id));
        }
        self.run_source(id, backend);
        id
    }

    /// A new session in the state (and the manifest), for a source of its own or a hosting
    /// source's spawn alike.
    fn open_session(
        &mut self,
        name: &str,
        backend: switchboard_core::BackendKind,
        reply_check: switchboard_core::state::ReplyCheck,
        keeps_gates_on_quit: bool,
    ) -> SessionId {
        let id = self.state.add_session(backend, name);
        let i = self.state.sessions.len() - 1;
        self.state.sessions[i].reply_check = reply_check;
        self.state.sessions[i].keeps_gates_on_quit = keeps_gates_on_quit;
        if let Some(o) = self.observer.as_mut() {
            let r = o.session_opened(id, name, backend, now_ms());
            self.observed(r);
        }
        self.dirty = true;
        id
    }

    /// Session `id`'s channels: its bounded event channel joins the fair merge, its command
    /// channel is kept for `Effect::Send`. Returns the ends its backend holds.
    fn attach(
        &mut self,
        id: SessionId,
    ) -> (mpsc::Sender<Stamped>, mpsc::UnboundedReceiver<Command>) {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (ev_tx, ev_rx) = mpsc::channel(EVENT_CHANNEL);
        let stream: SourceEvents = Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(ev_rx)
                .map(Some)
                .chain(tokio_stream::once(None)),
        );
        self.events.insert(id, stream);
        self.sources.push(Source {
            session: id,
            commands: cmd_tx,
            task: None,
        });
        (ev_tx, cmd_rx)
    }

    /// Session `id` was started from `profile` (as JSON): kept for the manifest, so the
    /// session can be started again after a crash.
    pub fn remember_profile(&mut self, id: SessionId, profile: serde_json::Value) {
        if let Some(o) = self.observer.as_mut() {
            let r = o.session_resume(id, Some(profile.clone()), None, None);
            self.observed(r);
        }
        self.profiles.insert(id, profile);
    }

    /// Write the workspace manifest through `observer`, starting with the sessions already
    /// open (their recordings too, when known).
    pub fn observe(&mut self, mut observer: Box<dyn WorkspaceObserver>) {
        let mut errors = Vec::new();
        for s in &self.state.sessions {
            let mut r = observer.session_opened(s.id, s.name(), s.session.backend, now_ms());
            if let (Ok(()), Some(path)) = (&r, &s.session.recording) {
                r = observer.session_recording(s.id, path);
            }
            if let (Ok(()), Some(p)) = (&r, self.profiles.get(&s.id)) {
                r = observer.session_resume(s.id, Some(p.clone()), None, None);
            }
            if let Err(e) = r {
                errors.push(e);
            }
        }
        // On disk before the workspace's agents have said anything: a kill right after the
        // start still leaves every session's way back.
        if let Err(e) = observer.sync() {
            errors.push(e);
        }
        self.observer = Some(observer);
        for e in errors {
            self.observed(Err(e));
        }
    }

    /// Tell the manifest; a failure is shown, never fatal.
    fn observed(&mut self, r: Result<(), String>) {
        if let Err(e) = r {
            tracing::warn!("workspace manifest: {e}");
            self.state.push_log(format!("workspace manifest: {e}"));
            self.state.status_line = Some(format!("workspace manifest: {e}"));
        }
    }

    fn run_source(&mut self, id: SessionId, backend: Box<dyn Backend>) {
        let (ev_tx, cmd_rx) = self.attach(id);
        // The supervisor holds a sender until the backend task is over, so a panic is told
        // before the channel closes: the session ends with a visible error, the workspace
        // goes on.
        let told = ev_tx.clone();
        let inner = backend.start_hosting(ev_tx, cmd_rx, self.spawner.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = inner.await
                && e.is_panic()
            {
                tracing::error!("session {id}: the backend task panicked: {e}");
                let _ = told
                    .send(Stamped {
                        at_ms: now_ms(),
                        event: BackendEvent::Exited {
                            code: None,
                            detail: "the backend failed (a bug in switchboard: it panicked; \
                                     see the log)"
                                .into(),
                            stderr_tail: Vec::new(),
                        },
                    })
                    .await;
            }
        });
        if let Some(src) = self.sources.iter_mut().find(|s| s.session == id) {
            src.task = Some(task);
        }
    }

    /// The first session's id, for one-session callers.
    pub fn first_session(&self) -> SessionId {
        self.state.sessions[0].id
    }

    /// A source's channel ended: its backend task is over. A session that never said it
    /// exited is closed here, so nothing waits on an answer that cannot arrive.
    fn source_ended(&mut self, id: SessionId) -> Msg {
        if let Some(src) = self.sources.iter_mut().find(|s| s.session == id) {
            src.task.take();
        }
        let exited = self
            .state
            .session_by_id(id)
            .is_none_or(|s| s.session.exited.is_some());
        // Stopped with the workspace by a signal (a shutdown): still open for `resume`.
        let resumable = self.interrupted && self.state.quitting;
        if let (false, Some(o)) = (resumable, self.observer.as_mut()) {
            let code = self
                .state
                .session_by_id(id)
                .and_then(|s| s.session.exited.as_ref())
                .and_then(|e| e.0);
            let r = o.session_ended(id, code, now_ms());
            self.observed(r);
        }
        let event = if exited {
            BackendEvent::Info {
                key: "backend".into(),
                value: Some("stopped".into()),
            }
        } else {
            BackendEvent::Exited {
                code: None,
                detail: "the backend stopped".into(),
                stderr_tail: Vec::new(),
            }
        };
        Msg::Backend {
            session: id,
            at_ms: now_ms(),
            event,
        }
    }

    fn wrap(&mut self, (id, item): (SessionId, Option<Stamped>)) -> Msg {
        match item {
            Some(Stamped { at_ms, event }) => Msg::Backend {
                session: id,
                at_ms,
                event,
            },
            None => self.source_ended(id),
        }
    }

    /// Wait for the next backend message (None once every backend is gone). Requests to open
    /// sessions are served on the way.
    pub async fn next_backend(&mut self) -> Option<Msg> {
        loop {
            if self.events.is_empty() {
                // Every source has ended: wait for a session to be opened (a restart, the
                // new-session dialog, a hosting source's spawn), never report the end for good.
                match self.spawns.recv().await {
                    Some(req) => self.spawn(req),
                    None => return None,
                }
                continue;
            }
            tokio::select! {
                item = self.events.next() => return Some(self.wrap(item?)),
                Some(req) = self.spawns.recv() => self.spawn(req),
            }
        }
    }

    /// The next queued backend message, without waiting.
    fn try_backend(&mut self) -> Option<Msg> {
        while let Ok(req) = self.spawns.try_recv() {
            self.spawn(req);
        }
        let item = self.events.next().now_or_never()??;
        Some(self.wrap(item))
    }

    /// Open a session a hosting source asked for: its own bounded channel, merged like the
    /// others; its commands go back to the source.
    fn spawn(&mut self, req: switchboard_backend::SpawnRequest) {
        if self.state.quitting {
            // Nobody would answer its gates: the source hears `None` and stops opening.
            return;
        }
        let id = self.open_session(
            &req.name,
            req.backend,
            req.reply_check,
            req.keeps_gates_on_quit,
        );
        let (ev_tx, cmd_rx) = self.attach(id);
        let _ = req.reply.send(switchboard_backend::SessionLink {
            session: id,
            events: ev_tx,
            commands: cmd_rx,
        });
    }

    /// Apply queued backend messages without waiting, up to `budget` (drain, then render).
    pub fn drain_backend(&mut self, budget: usize) {
        self.drain_backend_for(budget, Duration::MAX);
    }

    /// Like `drain_backend`, but also stop once `time` has passed: however fast the agents
    /// write, the loop gets back to drawing and reading keys within one slice.
    pub fn drain_backend_for(&mut self, budget: usize, time: Duration) {
        let until = std::time::Instant::now().checked_add(time);
        for _ in 0..budget {
            if until.is_some_and(|u| std::time::Instant::now() >= u) {
                break;
            }
            match self.try_backend() {
                Some(m) => self.apply(m),
                None => break,
            }
        }
    }

    /// After quitting: let every backend finish its shutdown (answers, stdin close, kill),
    /// applying their last events, bounded by `BACKEND_STOP_TIMEOUT` for all of them together.
    pub async fn finish(&mut self) {
        for s in &self.sources {
            let _ = s.commands.send(Command::Shutdown);
        }
        let deadline = tokio::time::Instant::now() + BACKEND_STOP_TIMEOUT;
        loop {
            if self.sources.iter().all(|s| s.task.is_none()) {
                break;
            }
            tokio::select! {
                m = self.next_backend() => match m {
                    Some(m) => self.apply(m),
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::warn!("a backend did not stop in time");
                    break;
                }
            }
        }
        self.drain_backend(usize::MAX);
        // Stopped by its owner (a quit, `stop`): nothing to resume.
        if let (false, Some(o)) = (self.interrupted, self.observer.as_mut()) {
            let r = o.closed(now_ms());
            self.observed(r);
        }
    }

    /// Where the workspace manifest is written, if one is.
    pub fn manifest_path(&self) -> Option<std::path::PathBuf> {
        self.observer.as_ref().and_then(|o| o.path())
    }

    /// Whether a source is still read (a session started after the others ended is).
    pub fn has_sources(&self) -> bool {
        !self.events.is_empty()
    }

    /// Whether any session's agent is working or waits on a gate (elapsed times and gate ages
    /// tick only then; an idle screen stays idle).
    pub fn busy(&self) -> bool {
        self.state.sessions.iter().any(|s| {
            s.cancel_sent_ms.is_some()
                || !s.gates.is_empty()
                || s.tree.nodes.iter().any(|n| {
                    use switchboard_core::tree::NodeStatus;
                    matches!(n.status, NodeStatus::Running | NodeStatus::Waiting)
                })
        })
    }

    /// Draw a frame, and give the reducer what it measured (mouse hits, page moves).
    pub fn draw<B: ratatui::backend::Backend>(
        &mut self,
        term: &mut ratatui::Terminal<B>,
    ) -> Result<(), B::Error> {
        crate::ui::draw(term, &mut self.state, &self.theme)
    }

    /// The terminal title: pending gates stand out in a tab bar.
    pub fn title(&self) -> String {
        match self.state.pending_total() {
            0 => "switchboard".to_string(),
            n => format!("switchboard ({n} waiting)"),
        }
    }
}

#[cfg(test)]
mod spawner_tests {
    use super::*;
    use switchboard_backend::Spawner;
    use switchboard_core::Effect;

    /// A source that hosts two sessions: it opens them through the spawner and raises one
    /// gate in each, then reports every command it gets back, tagged with the session.
    struct Host {
        seen: mpsc::UnboundedSender<(SessionId, Command)>,
    }

    impl Backend for Host {
        fn kind(&self) -> switchboard_core::BackendKind {
            switchboard_core::BackendKind::Iii
        }
        fn root_name(&self) -> String {
            "engine".into()
        }
        fn reply_check(&self) -> switchboard_core::state::ReplyCheck {
            switchboard_claude::session::reply_check
        }
        fn start(
            self: Box<Self>,
            _: mpsc::Sender<Stamped>,
            _: mpsc::UnboundedReceiver<Command>,
        ) -> JoinHandle<()> {
            unreachable!("a hosting source is started with start_hosting")
        }
        fn start_hosting(
            self: Box<Self>,
            _events: mpsc::Sender<Stamped>,
            _commands: mpsc::UnboundedReceiver<Command>,
            spawner: Spawner,
        ) -> JoinHandle<()> {
            tokio::spawn(async move {
                let mut links = Vec::new();
                for name in ["root-a", "root-b"] {
                    let link = spawner
                        .open(
                            name,
                            switchboard_core::BackendKind::Iii,
                            switchboard_claude::session::reply_check,
                            true,
                        )
                        .await
                        .expect("the workspace opens it");
                    let gate =
                        crate::test_gates::bash_permission("held-0", &format!("echo {name}"));
                    let _ = link
                        .events
                        .send(Stamped {
                            at_ms: now_ms(),
                            event: BackendEvent::GateOpen(Box::new(gate)),
                        })
                        .await;
                    links.push(link);
                }
                let mut handles = Vec::new();
                for link in links {
                    let seen = self.seen.clone();
                    handles.push(tokio::spawn(async move {
                        // The whole link, events included: its session lives while it does.
                        let mut link = link;
                        while let Some(c) = link.commands.recv().await {
                            let _ = seen.send((link.session, c));
                        }
                    }));
                }
                for h in handles {
                    let _ = h.await;
                }
            })
        }
        fn keeps_gates_on_quit(&self) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn a_hosting_source_opens_sessions_and_gets_each_ones_answers() {
        let (tx, mut seen) = mpsc::unbounded_channel();
        let mut app = App::start(
            Box::new(Host { seen: tx }),
            Settings::default(),
            Theme::dark(),
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while app.state.pending_total() < 2 {
            let m = tokio::time::timeout_at(deadline, app.next_backend())
                .await
                .expect("two gates in time")
                .expect("the source runs");
            app.apply(m);
        }
        let names: Vec<&str> = app.state.sessions.iter().map(|s| s.name()).collect();
        assert_eq!(names, vec!["engine", "root-a", "root-b"]);
        assert!(
            app.state.sessions[1..]
                .iter()
                .all(|s| s.keeps_gates_on_quit)
        );
        // The same gate id in two sessions: answer root-b's from the inbox.
        let b = app.state.sessions[2].id;
        let fx = switchboard_core::update::workspace::answer_in(
            &mut app.state,
            &switchboard_core::state::GateRef {
                session: b,
                id: "held-0".into(),
            },
            switchboard_core::gate::Decision::Allow {
                updated_input: None,
                always: false,
            },
        );
        for e in fx {
            if let Effect::Send(sid, cmd) = e {
                let _ = app
                    .sources
                    .iter()
                    .find(|s| s.session == sid)
                    .unwrap()
                    .commands
                    .send(cmd);
            }
        }
        let (sid, cmd) = tokio::time::timeout(Duration::from_secs(5), seen.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(sid, b);
        assert!(matches!(cmd, Command::Answer { ref gate_id, .. } if gate_id == "held-0"));
        assert_eq!(
            app.state.sessions[1].gates.len(),
            1,
            "root-a's gate is untouched"
        );
    }
}
