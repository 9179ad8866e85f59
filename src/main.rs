/// mimalloc: replay's background pass parses on one thread and maps on another, and glibc's
/// allocator serialized the two on its arena locks (each freeing what the other made). The
/// replay bench (benches/perf.rs) declares the same allocator, so it measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // A CLI's hook (`switchboard hook claude|codex`) runs before anything else: no argument
    // parser, no runtime, no logging; it must be quick and print nothing by accident.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("hook")) {
        return switchboard::cli::hook_main();
    }
    switchboard::cli::main()
}
