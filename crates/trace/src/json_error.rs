//! Error text for the project's JSON readers (traces, rt-app files, live figures): serde_json
//! puts the position inside its message, while their errors carry line, column and path as
//! fields of their own.

/// serde_json appends " at line L column C"; the error carries them separately.
pub fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// ` (at `PATH`)` for an error's message, or nothing at the document's root.
pub fn at_path(path: &str) -> String {
    if path.is_empty() || path == "." {
        String::new()
    } else {
        format!(" (at `{path}`)")
    }
}
