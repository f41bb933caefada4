//! `hybrid-sim decisions`: a live run's decision log through the same scheduler core again.

use crate::failure::Failure;
use crate::inputs;
use crate::opts::DecisionsArgs;
use hybridland_sim::decision_replay::{
    DecisionReplayError, ReplayedDispatch, replay_decisions_observed,
};
use hybridland_sim::input_file;
use hybridland_trace::decisions::{DecisionLog, MAX_FILE_BYTES};

/// Runs the command: the report, or a failure (exit status 1) after printing it when the
/// replay parts from the log.
pub(crate) fn run(args: &DecisionsArgs) -> Result<String, Failure> {
    let name = args.log.display().to_string();
    let text = input_file::read_bounded(&args.log, MAX_FILE_BYTES, "decision log")
        .map_err(|e| Failure::Input(e.into()))?;
    let log = DecisionLog::read_from(text.as_bytes())
        .map_err(|e| Failure::Input(anyhow::anyhow!("{name}: {e}")))?;
    let knobs = inputs::knobs(&args.set)?;
    // -vv: a line per dispatch; the check keeps a plain replay free of the formatting.
    let verbose = tracing::enabled!(tracing::Level::DEBUG);
    let mut observe = |r: &ReplayedDispatch<'_>| {
        if verbose {
            crate::decision_log::log_replayed(r);
        }
    };
    let report = replay_decisions_observed(&log, &knobs, &mut observe).map_err(|e| match e {
        DecisionReplayError::Knob(_) => Failure::Input(e.into()),
        _ => Failure::Input(anyhow::anyhow!("{name}: {e}")),
    })?;
    let text = report.render();
    if report.all_agree() {
        Ok(text)
    } else {
        // The report says where the core parted: it must reach the reader before the failure
        // does, and a write that fails is an output failure (exit 3), as for every command.
        crate::output::write_stdout(&text)?;
        Err(Failure::Internal(anyhow::anyhow!(
            "the replayed core parts from the log at line {}",
            report.difference.as_ref().map_or(0, |d| d.line)
        )))
    }
}
