//! What a profile names on disk, checked to be there: directories, programs and rules files.

use std::path::{Path, PathBuf};

use super::{Resolve, shown};

pub(super) fn readable_dir(p: &Path) -> Result<(), String> {
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("{}: no such directory", p.display()))
        }
        Err(e) => Err(format!("{}: {e}", p.display())),
        Ok(m) if !m.is_dir() => Err(format!("{}: not a directory", p.display())),
        Ok(_) => std::fs::read_dir(p)
            .map(|_| ())
            .map_err(|e| format!("{}: not readable: {e}", p.display())),
    }
}

/// The program (first word) exists: a path is resolved and must be a file, a bare name must be
/// on `$PATH`. The arguments are passed as they are, without a shell.
pub(super) fn check_command(c: &mut [String], resolve: &Resolve) -> Result<(), String> {
    let Some(program) = c.first_mut() else {
        return Err("empty: give the program and its arguments".into());
    };
    if program.is_empty() {
        return Err("the program (first entry) is empty".into());
    }
    for w in c.iter() {
        if w.contains('\0') {
            return Err(format!("{}: contains a NUL byte", shown(w)));
        }
    }
    let program = &mut c[0];
    if program.contains('/') || program.starts_with('~') {
        let p = resolve.path(program)?;
        if !p.is_file() {
            return Err(format!("{}: no such file", p.display()));
        }
        *program = p.display().to_string();
    } else if find_on_path(program).is_none() {
        return Err(format!("{}: not found on $PATH", shown(program)));
    }
    Ok(())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub(super) fn check_rules_file(r: &str, resolve: &Resolve) -> Result<PathBuf, String> {
    let p = resolve.path(r)?;
    if !p.is_file() {
        return Err(format!("{}: no such file", p.display()));
    }
    let mut rules = crate::core::rules::Rules::default();
    crate::config::load_rules(&p, &mut rules).map_err(|e| e.to_string())?;
    Ok(p)
}
