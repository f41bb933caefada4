//! The line grammar of the recordings: which lines are comments, headers and perf call-chain
//! lines, an event line's reporting task, CPU, flags, timestamp, event and fields, and the
//! fields of `sched_switch` and the wake-ups in each tool's form.

use std::collections::BTreeMap;

/// One parsed event line.
pub(super) struct Line<'a> {
    pub(super) cpu: u16,
    pub(super) ts_ns: u64,
    pub(super) event: &'a str,
    pub(super) fields: &'a str,
    /// The pid of the task the line was reported from, when it reads.
    pub(super) current: Option<u32>,
    /// The line's flags say it was reported from an interrupt (hardirq, softirq, NMI).
    pub(super) in_interrupt: bool,
}

/// An empty line or a `#` comment (tracefs's and perf script's headers).
pub(super) fn is_comment(line: &str) -> bool {
    line.is_empty() || line.starts_with('#')
}

/// A line trace-cmd or tracefs prints besides the events, tried only on a line that is not an
/// event line: `cpus=2`, `version = 6`, `CPU 1 is empty`, `CPU:1 [LOST 12 EVENTS]` or
/// `CPU:1 [EVENTS DROPPED]`, `##### CPU 1 buffer started ####` (a comment), and trace-cmd's
/// own notes (`trace-cmd: ...`).
pub(super) fn is_header(line: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(n) = line.strip_prefix("cpus=") {
        return number(n.trim());
    }
    if let Some(v) = line.strip_prefix("version") {
        return v
            .trim_start()
            .strip_prefix('=')
            .is_some_and(|n| number(n.trim()));
    }
    if let Some(rest) = line.strip_prefix("CPU ") {
        return rest
            .strip_suffix(" is empty")
            .is_some_and(|n| number(n.trim()));
    }
    if let Some(rest) = line.strip_prefix("CPU:") {
        return rest.split_once(' ').is_some_and(|(n, note)| {
            number(n) && note.starts_with('[') && note.ends_with(']') && note.contains("EVENTS")
        });
    }
    line.starts_with("trace-cmd: ")
}

/// `COMM-PID [ (TGID)] [CPU] [FLAGS] SECONDS: EVENT: FIELDS`, or perf's
/// `COMM PID [CPU] SECONDS: sched:EVENT: FIELDS`.
pub(super) fn parse_line(line: &str) -> Option<Line<'_>> {
    // The CPU is the first `[digits]` group; a comm may hold brackets, so search for digits.
    let mut search = 0;
    let (cpu, before, after) = loop {
        let open = search + line[search..].find('[')?;
        let close = open + line[open..].find(']')?;
        let inner = &line[open + 1..close];
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
            break (
                inner.parse::<u16>().ok()?,
                &line[..open],
                &line[close + 1..],
            );
        }
        search = close + 1;
    };
    // Then the timestamp: the first token `SECONDS.FRACTION:`; a flags column before it says
    // whether the line came from an interrupt.
    let mut rest = after;
    let mut in_interrupt = false;
    let ts_ns = loop {
        let tok_start = rest.len() - rest.trim_start().len();
        let tok = rest[tok_start..].split_whitespace().next()?;
        rest = &rest[tok_start + tok.len()..];
        if let Some(num) = tok.strip_suffix(':')
            && let Some(ns) = seconds_to_ns(num)
        {
            break ns;
        }
        in_interrupt |= flags_say_interrupt(tok);
    };
    let rest = rest.trim_start();
    let colon = rest
        .find(": ")
        .or_else(|| rest.strip_suffix(':').map(str::len))?;
    let event_full = &rest[..colon];
    if event_full.contains(char::is_whitespace) {
        return None;
    }
    let event = event_full.rsplit(':').next()?;
    let fields = rest.get(colon + 1..).unwrap_or("").trim();
    Some(Line {
        cpu,
        ts_ns,
        event,
        fields,
        current: current_pid(before),
        in_interrupt,
    })
}

/// The pid of `COMM-PID [(TGID)]` (tracefs, trace-cmd) or `COMM PID` (perf script).
fn current_pid(prefix: &str) -> Option<u32> {
    let mut who = prefix.trim_end();
    if who.ends_with(')') {
        who = who[..who.rfind('(')?].trim_end();
    }
    let last = who.split_whitespace().next_back()?;
    let digits = if last.bytes().all(|b| b.is_ascii_digit()) && who.len() > last.len() {
        last
    } else {
        last.rsplit_once('-')?.1
    };
    digits.parse().ok()
}

/// Whether a tracefs flags token (`d.s4.`, `dNh2.`: irqs-off, need-resched, then the
/// hardirq/softirq/NMI column, ...) says the line was reported from an interrupt.
fn flags_say_interrupt(tok: &str) -> bool {
    let b = tok.as_bytes();
    (4..=6).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'|')
        && !b[..3].iter().all(u8::is_ascii_digit)
        && matches!(b[2], b'h' | b'H' | b's' | b'z' | b'Z')
}

fn seconds_to_ns(s: &str) -> Option<u64> {
    let (whole, frac) = s.split_once('.')?;
    if whole.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let w: u64 = whole.parse().ok()?;
    let f: u64 = format!("{frac:0<9}").parse().ok()?;
    w.checked_mul(1_000_000_000)?.checked_add(f)
}

/// `key=value` fields; a value runs to the next ` key=` (comms may hold spaces) or ` ==>`.
pub(super) fn fields(s: &str) -> BTreeMap<&str, &str> {
    let mut keys: Vec<(usize, usize)> = Vec::new(); // (key start, '=' position)
    let bytes = s.as_bytes();
    for (eq, _) in s.match_indices('=') {
        let mut k = eq;
        while k > 0 && (bytes[k - 1].is_ascii_alphanumeric() || bytes[k - 1] == b'_') {
            k -= 1;
        }
        if k < eq && (k == 0 || bytes[k - 1] == b' ') {
            keys.push((k, eq));
        }
    }
    let mut out = BTreeMap::new();
    for (i, &(k, eq)) in keys.iter().enumerate() {
        let end = keys.get(i + 1).map_or(s.len(), |next| next.0);
        let value = s[eq + 1..end].trim_end();
        let value = value.strip_suffix("==>").unwrap_or(value).trim_end();
        out.insert(&s[k..eq], value);
    }
    out
}

pub(super) struct SwitchSide {
    pub(super) comm: String,
    pub(super) pid: u32,
    pub(super) state: String,
}

/// `prev_comm=.. prev_pid=.. prev_prio=.. prev_state=.. ==> next_comm=.. next_pid=.. ..`
/// (tracefs, older trace-cmd, `trace-cmd report -N`; `-R` prints the same fields without the
/// `==>`), or the sched plugin's `COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]` (current
/// trace-cmd and perf).
pub(super) fn parse_switch(s: &str) -> Option<(SwitchSide, SwitchSide)> {
    let f = fields(s);
    if let (Some(pc), Some(pp), Some(nc), Some(np)) = (
        f.get("prev_comm"),
        f.get("prev_pid"),
        f.get("next_comm"),
        f.get("next_pid"),
    ) {
        return Some((
            SwitchSide {
                comm: (*pc).to_owned(),
                pid: pp.parse().ok()?,
                state: f.get("prev_state").copied().unwrap_or("R").to_owned(),
            },
            SwitchSide {
                comm: (*nc).to_owned(),
                pid: np.parse().ok()?,
                state: String::new(),
            },
        ));
    }
    let (left, right) = s.split_once(" ==> ")?;
    let side = |part: &str| -> Option<(String, u32, String)> {
        let open = part.rfind(" [")?;
        let (who, tail) = part.split_at(open);
        let close = tail.find(']')?;
        let state = tail[close + 1..].trim().to_owned();
        let colon = who.rfind(':')?;
        Some((
            who[..colon].trim().to_owned(),
            who[colon + 1..].trim().parse().ok()?,
            state,
        ))
    };
    let (pc, pp, ps) = side(left)?;
    let (nc, np, _) = side(right)?;
    Some((
        SwitchSide {
            comm: pc,
            pid: pp,
            state: if ps.is_empty() { "R".into() } else { ps },
        },
        SwitchSide {
            comm: nc,
            pid: np,
            state: String::new(),
        },
    ))
}

/// `comm=NAME pid=PID ...` (tracefs, `-N`, `-R`), or the sched plugin's
/// `NAME:PID [PRIO] [success=1] CPU:NNN` (current trace-cmd and perf).
pub(super) fn parse_wakeup(s: &str) -> Option<(String, u32)> {
    let f = fields(s);
    if let (Some(comm), Some(pid)) = (f.get("comm"), f.get("pid")) {
        return Some(((*comm).to_owned(), pid.parse().ok()?));
    }
    let open = s.rfind(" [")?;
    let who = &s[..open];
    let tail = &s[open + 2..];
    tail.find(']')?;
    let colon = who.rfind(':')?;
    let comm = who[..colon].trim();
    if comm.is_empty() {
        return None;
    }
    Some((comm.to_owned(), who[colon + 1..].trim().parse().ok()?))
}

/// Whether a switched-out task stays runnable (was preempted) rather than blocking.
///
/// Letters as the kernel prints them: `R` and `R+` (preempted) are runnable, every other state
/// (`S`, `D`, `I`, `T`, `X`, `Z`, ... and combinations such as `D|K`) blocks. trace-cmd's sched
/// plugin (libtraceevent) prints its own table's letters, all of them sleeps here too: `W` for
/// the kernel's `I`, `X` and `Z` swapped, and `R` for `R+`. A number is the
/// raw field (`trace-cmd report -R`, old kernels): its low 8 bits are the kernel's reported
/// states (TASK_REPORT: 1 S, 2 D, 4 T, 8 t, 16 X, 32 Z, 64 P, 128 I); with none of them set
/// the task was running, whatever preemption flag is above them (256, TASK_REPORT_MAX, since
/// 4.14; 4096 or 2048, TASK_STATE_MAX, before). `None` for anything else.
pub(super) fn state_is_runnable(state: &str) -> Option<bool> {
    let state = state.trim();
    if state.is_empty() {
        return None;
    }
    if state.bytes().all(|b| b.is_ascii_digit()) {
        let v: u64 = state.parse().ok()?;
        return Some(v & 0xff == 0);
    }
    if let Some(hex) = state.strip_prefix("0x") {
        let v = u64::from_str_radix(hex, 16).ok()?;
        return Some(v & 0xff == 0);
    }
    let letters_ok = state.bytes().all(|b| b"RSDTtXZPIKWNx+|".contains(&b));
    if !letters_ok {
        return None;
    }
    Some(state.starts_with('R'))
}

/// A perf call-chain line: a hex address, then a symbol (`ffffffff8108a3c5 __schedule+0x2b5
/// ([kernel.kallsyms])`).
pub(super) fn is_stack_frame(line: &str) -> bool {
    let mut parts = line.split_whitespace();
    let Some(addr) = parts.next() else {
        return false;
    };
    !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit())
}
