//! Canned texts of the first-turn script: thinking, file contents, tool output, questions.

pub(super) const THINKING: &str = "The user wants audit logging around authentication. I should look at the \
layout first, ask before writing anything, and let two sub-agents explore and draft in parallel.";

pub(super) const LS_OUTPUT: &str =
    "admin.rs\nauth.rs\nbilling.rs\nlib.rs\nmain.rs\nsearch.rs\nsession.rs";

pub(super) const AUTH_RS: &str = "use crate::session::Session;\n\
use crate::store::UserStore;\n\
\n\
pub struct AuthError(pub String);\n\
\n\
/// Checks a password and opens a session.\n\
pub fn authenticate(store: &UserStore, name: &str, password: &str) -> Result<Session, AuthError> {\n\
    let user = store\n\
        .find(name)\n\
        .ok_or_else(|| AuthError(format!(\"unknown user {name}\")))?;\n\
    if !user.verify(password) {\n\
        return Err(AuthError(\"bad password\".into()));\n\
    }\n\
    let session = Session::start(&user)?;\n\
    Ok(session)\n\
}\n";

pub(super) const EDIT_OLD: &str = "    let session = Session::start(&user)?;\n    Ok(session)";
pub(super) const EDIT_NEW: &str = "    let session = Session::start(&user)?;\n    audit::record(AuditEvent::Login {\n        user: user.id,\n        session: session.id(),\n    });\n    Ok(session)";

pub(super) const GREP_OUTPUT: &str = "src/auth.rs:7:pub fn authenticate(store: &UserStore, name: &str, password: &str) -> Result<Session, AuthError> {\nsrc/admin.rs:31:    let session = auth::authenticate(&store, &name, &pw)?;";

pub(super) const Q1: &str = "Which modules should get audit logging?";
pub(super) const Q2: &str = "How should we roll it out?";
