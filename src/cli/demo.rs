//! The demo commands: the scripted agent, the demo workspace, the fake iii engine and the fake
//! ai-gateway host. The only commands that link the peers of `crates/sim`; the supervising
//! commands never do (tests/crate_walls.rs).

use std::process::ExitCode;

use super::*;

/// `demo --sessions N`: the first N sessions of the demo workspace, each its own recording.
pub(super) fn workspace(args: DemoArgs) -> ExitCode {
    if args.common.record.is_some() {
        eprintln!(
            "switchboard: --record names one file; a demo workspace records each session in the data dir"
        );
        return ExitCode::from(2);
    }
    let base = profile_of(&args.common, ProfileKind::Demo);
    let profiles: Vec<SessionProfile> = switchboard_sim::demo::demo_workspace()
        .into_iter()
        .take(args.sessions as usize)
        .map(|d| {
            let mut p = SessionProfile::new(d.name, ProfileKind::Demo, base.cwd.clone());
            p.script = d.script;
            p.prompt = Some(base.prompt.clone().unwrap_or(d.prompt));
            p.breaks = args.breaks.clone();
            p
        })
        .collect();
    let cx = launch_context(&args.common);
    let mut specs = Vec::new();
    for p in &profiles {
        match launch::launch(p, &cx) {
            Ok(s) => specs.push(s),
            Err(e) => {
                eprintln!("switchboard: {}", crate::core::text::neutralize(&e));
                return ExitCode::from(2);
            }
        }
    }
    let mut opts = RunOptions::of(&args.common);
    opts.launcher = Some(Launchable { profiles, cx });
    run_sources(specs, &opts)
}

/// `demo-agent`: the scripted Claude agent itself (what a demo session runs as its child).
pub(super) fn agent(args: &[String]) -> ExitCode {
    ExitCode::from(switchboard_sim::demo::agent::run(args) as u8)
}

/// `demo-gateway`: a fake ai-gateway host with a scripted remote agent.
pub(super) fn gateway(port: u16) -> ExitCode {
    switchboard_sim::gateway::demo::main(port)
}

/// `demo-engine`: a fake iii engine with a scripted harness world.
pub(super) fn engine(port: u16) -> ExitCode {
    switchboard_sim::iii::fake_engine::demo_main(port)
}
