//! Writing what a command produced, so that a write that fails (a full disk, a missing
//! directory, `> /dev/full`) is a [`Failure::Output`] with the path in its message, never a
//! result silently lost.

use crate::failure::Failure;
use anyhow::anyhow;
use std::io::Write;
use std::path::Path;

/// Writes `text` to the file at `path`, replacing it.
pub(crate) fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    // An unbuffered file: each write is a system call whose error (ENOSPC) shows here, where a
    // buffered writer dropped unflushed would swallow it.
    let written = std::fs::File::create(path).and_then(|mut f| f.write_all(text.as_bytes()));
    written.map_err(|e| Failure::Output(anyhow!("{}: cannot write: {e}", path.display())))
}

/// How writing to standard output went.
pub(crate) enum Stdout {
    Written,
    /// The reader went away (`| head`): the rest is not wanted, and no message is worth
    /// printing, but the exit status still says the output is incomplete.
    Closed,
}

/// Writes `text` to standard output and flushes it.
pub(crate) fn write_stdout(text: &str) -> Result<Stdout, Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(Stdout::Written),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Stdout::Closed),
        Err(e) => Err(Failure::Output(anyhow!(
            "standard output: cannot write: {e}"
        ))),
    }
}
