//! The `switchboard` binary is linked as a position-dependent executable (`-no-pie`): a CLI
//! runs `switchboard hook` as a new process for every hook event, and a PIE of this size has
//! tens of thousands of relocations to apply and the pages they dirty, about half of the
//! hook's start-up (benches/hooks.rs). Only the final link changes; the code is the same.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bin=switchboard=-no-pie");
    }
}
