//! What the recording reads from `/proc`, never on the loop: the tasks still running when
//! recording stops (their tails), by a thread of its own, and the scheduler's own threads,
//! which are not part of the workload.

use anyhow::Result;
use hybridland_trace::recording::Tail;
use tracing::warn;

/// A recorded task that had not exited when recording stopped: whether it was still running
/// is for `/proc` to say ([`read_tails`]), off the loop.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TailCandidate {
    pub(super) pid: i32,
    pub(super) last_at: u64,
}

/// Which of `candidates` `proc_state` finds running, and where: the recording's tails.
pub(crate) fn read_tails(candidates: &[TailCandidate], proc_state: &ProcState) -> Vec<Tail> {
    candidates
        .iter()
        .filter_map(|c| match proc_state(c.pid) {
            Some(('R', cpu)) => Some(Tail {
                pid: c.pid,
                cpu: u16::try_from(cpu).ok()?,
                from_ns: c.last_at,
            }),
            _ => None,
        })
        .collect()
}

/// A thread of ours that reads `/proc` for the recording's tails, so the loop never does: a
/// read per recorded task (tens of thousands after a thread storm) would hold up every task
/// waiting for a CPU. Started before the scheduler is loaded, as the nudge helper is; it ends
/// when this is dropped.
pub(crate) struct TailReader {
    requests: std::sync::mpsc::Sender<Vec<TailCandidate>>,
    replies: std::sync::mpsc::Receiver<Vec<Tail>>,
}

impl TailReader {
    /// Starts the reader.
    pub(crate) fn spawn() -> Result<Self> {
        let (requests, incoming) = std::sync::mpsc::channel::<Vec<TailCandidate>>();
        let (answer, replies) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hl-tails".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for candidates in incoming {
                    if answer.send(read_tails(&candidates, &proc_state)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self { requests, replies })
    }

    /// Asks for the tails among `candidates`; returns whether the reader took the request.
    pub(crate) fn request(&self, candidates: Vec<TailCandidate>) -> bool {
        self.requests.send(candidates).is_ok()
    }

    /// The answer, once it is there.
    pub(crate) fn try_take(&self) -> Option<Vec<Tail>> {
        self.replies.try_recv().ok()
    }
}

/// Reads a task's state letter and last CPU (`/proc/PID/stat`), `None` when it is gone.
pub(crate) type ProcState = dyn Fn(i32) -> Option<(char, i32)>;

/// `/proc/PID/stat`'s state letter and last CPU (field 39).
pub(crate) fn proc_state(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<(char, i32)> {
    // The command name may hold spaces and parentheses: fields resume after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // State is field 3; the CPU is field 39.
    let cpu = fields.nth(35)?.parse().ok()?;
    Some((state, cpu))
}

/// The thread ids of this process.
pub(crate) fn own_threads() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_else(|e| {
            warn!("record: cannot list this process's threads ({e}): they may be recorded too");
            Vec::new()
        })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn proc_stat_gives_state_and_cpu_whatever_the_name() {
        // The state is field 3, the CPU field 39: the 37th after the name.
        let mut v: Vec<String> = vec!["R".into()];
        for i in 1..37 {
            v.push(if i == 36 { "5".into() } else { i.to_string() });
        }
        let text = format!("123 (a) (b c) {}", v.join(" "));
        assert_eq!(parse_stat(&text), Some(('R', 5)));
        assert_eq!(parse_stat("garbage"), None);
        assert!(proc_state(i32::try_from(std::process::id()).unwrap()).is_some());
    }
}
