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

/// A JSON document that could not be read (not JSON, truncated, a wrong type, a missing or
/// unknown field): the file, the place and the parser's message. Traces and live figures both
/// report it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}:{column}: {message}{}", at_path(path))]
pub struct JsonSyntax {
    /// File name.
    pub source_name: String,
    /// 1-based line.
    pub line: usize,
    /// Column as serde_json counts it (1-based; 0 for a value refused before its first
    /// character is read).
    pub column: usize,
    /// Where in the document, e.g. `tasks[2].phases[0].run_ns`; empty when unknown.
    pub path: String,
    /// The parser's message, without serde_json's position.
    pub message: String,
}

/// Reads `text` as exactly one JSON document of type `T`; `source_name` names it in the error.
pub(crate) fn from_json_str<T: serde::de::DeserializeOwned>(
    text: &str,
    source_name: &str,
) -> Result<T, JsonSyntax> {
    let syntax = |line, column, path, e: &serde_json::Error| JsonSyntax {
        source_name: source_name.to_owned(),
        line,
        column,
        path,
        message: strip_position(&e.to_string()),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        syntax(inner.line(), inner.column(), path, &inner)
    })?;
    de.end()
        .map_err(|e| syntax(e.line(), e.column(), String::new(), &e))?;
    Ok(value)
}
