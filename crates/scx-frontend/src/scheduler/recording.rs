//! `--record`: the decision log, and the recording's lifecycle (start, copying each batch,
//! stopping, the tails read off the loop, the end).

use super::*;

/// Longest the loop goes on after its end for the tail reader's answer.
const TAILS_WAIT_NS: u64 = 2_000_000_000;

impl<O: SchedOps> Scheduler<O> {
    /// The nudge helper's id as the core knows it, if there is a helper.
    fn helper_id(&self) -> Option<TaskId> {
        self.nudger.as_ref().and_then(Nudger::task_id)
    }

    /// Keeps a decision log (`--record`): the core's inputs and what the loop sent, for
    /// `hybrid-sim decisions`. `machine` is the machine file's text; `knobs` are hybridland's
    /// and the policy's own by name; the log takes at most `max_bytes` of memory.
    pub(crate) fn with_decision_log(
        mut self,
        path: PathBuf,
        machine: String,
        seed: u64,
        (knobs, policy_knobs): (&PolicyConfig, std::collections::BTreeMap<String, i64>),
        max_bytes: usize,
    ) -> Self {
        let header = Header {
            format: decisions::FORMAT.to_owned(),
            version: decisions::VERSION,
            machine,
            policy: self.core.policy().name().to_owned(),
            seed,
            knobs: *knobs,
            policy_knobs,
            core: CoreSettings::from(self.core.config()),
            max_tasks: self.cfg.max_tasks,
            helper: self.helper_id(),
            max_bytes,
            truncated: false,
        };
        self.decisions = Some((path, DecisionLog::new(header)));
        self
    }

    /// Records what the loop sees (`--record`); `tails` reads `/proc` for the tasks still
    /// running when the recording stops, off the loop.
    pub(crate) fn with_recorder(mut self, recorder: Recorder, tails: Option<TailReader>) -> Self {
        self.recorder = Some(recorder);
        self.tail_reader = tails;
        self
    }

    /// Ends the recording, if it still records: the counters now, and a request to the tail
    /// reader for which recorded tasks still run. Without a reader the recording ends
    /// without them: the loop never reads `/proc` (one file per task, with tasks waiting).
    pub(super) fn stop_recording(&mut self) {
        if !self.recorder.as_ref().is_some_and(Recorder::recording) {
            return;
        }
        self.counters.fast = self.ops.counters().fast;
        let counters = self.counters();
        let now = self.now();
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        let candidates = r.stop(now, &counters);
        match &self.tail_reader {
            Some(reader) => {
                self.tails_pending = reader.request(candidates);
                if !self.tails_pending {
                    warn!(
                        "record: the /proc reader is gone: the recording ends without the tasks still running"
                    );
                }
            }
            None => r.set_tails(Vec::new()),
        }
    }

    /// Takes the tail reader's answer, if it is there.
    pub(super) fn collect_tails(&mut self) {
        if !self.tails_pending {
            return;
        }
        if let (Some(reader), Some(r)) = (self.tail_reader.as_ref(), self.recorder.as_mut())
            && let Some(tails) = reader.try_take()
        {
            r.set_tails(tails);
            self.tails_pending = false;
        }
    }

    /// Ends the recording when the loop has ended, before the scheduler detaches (so the
    /// tasks still running are where this scheduler put them): it stops, and the loop keeps
    /// scheduling, the reader thread included, until the reader has answered, for at most
    /// [`TAILS_WAIT_NS`].
    pub(crate) fn finish_recording(&mut self) {
        self.stop_recording();
        let deadline = now_ns().saturating_add(TAILS_WAIT_NS);
        while self.tails_pending && now_ns() < deadline {
            // Errors only end the wait early: the loop is over either way.
            if self.schedule_batch().is_err() {
                break;
            }
            self.apply_events();
            self.apply_exits();
            self.collect_tails();
            if self.tails_pending {
                std::thread::sleep(core::time::Duration::from_micros(200));
            }
        }
        if self.tails_pending {
            warn!(
                "record: the running tasks were not read within {} ms: the recording ends without them",
                TAILS_WAIT_NS / 1_000_000
            );
        }
    }

    /// Copies the batch into the recording, if any (with the clock read after the dequeue, so
    /// no run the batch reports ends after it).
    pub(super) fn record_batch(&mut self) {
        if self.queued.is_empty() || !self.recorder.as_ref().is_some_and(Recorder::recording) {
            return;
        }
        let at_ns = self.now();
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        let mut full = false;
        for t in &self.queued {
            let ev = Event {
                at_ns,
                start_ts: t.start_ts,
                stop_ts: t.stop_ts,
                exec_runtime: t.exec_runtime,
                pid: t.pid,
                cpu: i16::try_from(t.cpu).unwrap_or(-1),
                wakeup: t.flags & SCX_ENQ_WAKEUP != 0,
            };
            let mut comm = [0u8; 16];
            for (to, &from) in comm.iter_mut().zip(t.comm.iter()) {
                // A C char: the name's bytes.
                *to = from as u8;
            }
            full |= r.observe(ev, &comm);
        }
        if full {
            self.stop_recording();
        }
    }
}
