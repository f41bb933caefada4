//! Errors sorted by whose fault they are, which decides the exit status. The README's "Exit
//! status" table lists these codes; every command follows it.

/// A failed command.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A replay failed for a reason that is not the input's (a policy's invalid decision, a
    /// stalled replay): exit status 1.
    Internal(anyhow::Error),
    /// The input is at fault (a malformed file, an unknown name, a bad value, a machine the
    /// trace does not fit, a limit the replay would exceed): exit status 2, as clap's usage
    /// errors.
    Input(anyhow::Error),
    /// An output could not be written (standard output, `-o`, `--timeline`, `--plot`,
    /// `--live`): exit status 3, so a script never takes a lost result for a good one.
    Output(anyhow::Error),
}

impl Failure {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Internal(_) => 1,
            Self::Input(_) => 2,
            Self::Output(_) => 3,
        }
    }

    /// The error and its causes on one line each.
    pub(crate) fn message(&self) -> String {
        let (Self::Input(e) | Self::Internal(e) | Self::Output(e)) = self;
        format!("{e:#}")
    }
}
