fn main() -> std::process::ExitCode {
    // A CLI's hook (`switchboard hook claude|codex`) runs before anything else: no argument
    // parser, no runtime, no logging; it must be quick and print nothing by accident.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("hook")) {
        return switchboard::cli::hook_main();
    }
    switchboard::cli::main()
}
