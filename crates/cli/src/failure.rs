//! Errors sorted by whose fault they are, which decides the exit status.

/// A failed command.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The input is at fault: exit status 2.
    Input(anyhow::Error),
    /// Anything else: exit status 1.
    Internal(anyhow::Error),
}

impl Failure {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Input(_) => 2,
            Self::Internal(_) => 1,
        }
    }

    /// The error and its causes on one line each.
    pub(crate) fn message(&self) -> String {
        let (Self::Input(e) | Self::Internal(e)) = self;
        format!("{e:#}")
    }
}
