//! Turning command-line words into machines, traces and knobs, with errors that name the input.

use crate::failure::Failure;
use anyhow::anyhow;
use hybridland_policy::CpuId;
use hybridland_sim::import::rt_app::{self, MAX_RT_APP_BYTES, RtAppOptions, RtAppSource};
use hybridland_sim::trace::MAX_TRACE_BYTES;
use hybridland_sim::{Knobs, Machine, Trace, input_file, load_topology_file, presets};
use std::path::{Component, Path};

/// The topology used when neither `--topology` nor anything else says: seed 004's laptop.
pub(crate) const DEFAULT_TOPOLOGY: &str = "i7-13800h";

/// A preset name or a machine file. What the machine says that contradicts itself
/// ([`machine_warnings`]) is printed on stderr whatever the log level.
pub(crate) fn machine(name_or_file: &str) -> Result<Machine, Failure> {
    let path = Path::new(name_or_file);
    if looks_like_file(name_or_file) {
        return machine_file(path);
    }
    presets::lookup(name_or_file).ok_or_else(|| {
        let known = preset_names();
        Failure::Input(anyhow!(
            "unknown topology `{name_or_file}`{}: give a preset ({}) or a .toml machine file",
            did_you_mean(name_or_file, &known),
            known.join(", ")
        ))
    })
}

fn preset_names() -> Vec<&'static str> {
    presets::list().iter().map(|p| p.name).collect()
}

/// ` (did you mean `NAME`?)` for the name of `known` nearest `name`, if one is near enough to
/// be a slip (at most a third of its letters, or two, changed); else nothing.
pub(crate) fn did_you_mean(name: &str, known: &[&str]) -> String {
    let limit = (name.chars().count() / 3).max(2);
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map_or_else(String::new, |(_, k)| format!(" (did you mean `{k}`?)"))
}

/// Levenshtein distance: the fewest letters inserted, removed or replaced to turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// A machine file, what it left out and its contradictions printed as warnings.
pub(crate) fn machine_file(path: &Path) -> Result<Machine, Failure> {
    let machine = load_topology_file(path).map_err(|e| Failure::Input(e.into()))?;
    warn_contradictions(&machine, path);
    Ok(machine)
}

/// A file `validate` found to be neither JSON nor rt-app's: a machine file, or else something
/// that needs an importer.
pub(crate) fn machine_file_or_unknown(path: &Path) -> Result<Machine, Failure> {
    let machine = load_topology_file(path).map_err(|e| {
        let e = anyhow::Error::from(e);
        if path.extension().is_some_and(|x| x == "toml") {
            Failure::Input(e)
        } else {
            Failure::Input(e.context(format!(
                "{}: not a trace or an rt-app file (no JSON), nor a machine file (TOML); a \
                 scheduler recording is read with `hybrid-sim import ftrace`",
                path.display()
            )))
        }
    })?;
    warn_contradictions(&machine, path);
    Ok(machine)
}

fn warn_contradictions(machine: &Machine, path: &Path) {
    for w in &machine.warnings {
        eprintln!("hybrid-sim: warning: {w}");
    }
    for w in machine_warnings(machine, &path.display().to_string()) {
        eprintln!("hybrid-sim: warning: {w}");
    }
}

/// What a file handed to `validate` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A trace (docs/trace-format.md).
    Trace,
    /// An rt-app workload file, imported into a trace.
    RtApp,
    /// A machine file (TOML, docs/machine-model.md).
    Machine,
}

/// Tells a file's kind by its shape: JSON is a trace or an rt-app file (rt-app's keys decide),
/// anything else a machine file.
pub(crate) fn file_kind(path: &Path) -> Result<FileKind, Failure> {
    if path.extension().is_some_and(|e| e == "toml") {
        return Ok(FileKind::Machine);
    }
    let text = read(path, MAX_TRACE_BYTES, "trace")?;
    if rt_app::is_rt_app(&text) {
        return Ok(FileKind::RtApp);
    }
    let json =
        path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with(['{', '[']);
    Ok(if json {
        FileKind::Trace
    } else {
        FileKind::Machine
    })
}

/// The machine a trace's own `machine` field names: a preset, or a machine file beside the
/// trace (in its directory or below it). A trace is data someone else may have written, so the
/// field cannot make the simulator read any file it names: an absolute path, a `..`, or a
/// symbolic link that leads out of the trace's directory is an error naming the field.
pub(crate) fn trace_machine(named: &str, trace_path: &Path) -> Result<Machine, Failure> {
    let trace_name = trace_path.display().to_string();
    let refuse = |why: String| {
        Failure::Input(anyhow!(
            "{trace_name}: `machine` \"{named}\": {why}; a trace names a preset or a machine \
             file beside it (give another machine with --topology)"
        ))
    };
    if !looks_like_file(named) {
        return presets::lookup(named).ok_or_else(|| {
            let known = preset_names();
            refuse(format!(
                "no preset has this name{} (presets: {}; a machine file's name has an \
                 extension or a `/`)",
                did_you_mean(named, &known),
                known.join(", ")
            ))
        });
    }
    let path = Path::new(named);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(refuse(
            "is an absolute path or climbs out with `..`".to_owned(),
        ));
    }
    let dir = match trace_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let resolved = dir.join(path);
    let real_dir = std::fs::canonicalize(dir)
        .map_err(|e| refuse(format!("cannot resolve the trace's directory: {e}")))?;
    let real = std::fs::canonicalize(&resolved)
        .map_err(|e| refuse(format!("{}: cannot read: {e}", resolved.display())))?;
    if !real.starts_with(&real_dir) {
        return Err(refuse(format!(
            "{} leads to {}, outside the trace's directory",
            resolved.display(),
            real.display()
        )));
    }
    machine_file(&resolved)
}

/// A capacity and the CPU that has it.
type CapacityAt = (u16, CpuId);

/// What a machine says that is allowed but contradicts the kinds' meaning: a faster kind of
/// core (performance before efficiency before low-power efficiency) with a CPU of less
/// capacity than one of a slower kind. The policy trusts the kinds for its idle order and the
/// capacities for fit and speed, so such a file makes them pull apart.
pub(crate) fn machine_warnings(machine: &Machine, source: &str) -> Vec<String> {
    let topo = &machine.topology;
    // Per kind: the CPU of least and of most capacity.
    let mut extremes: [Option<(CapacityAt, CapacityAt)>; 3] = [None; 3];
    for cpu in topo.cpus().iter() {
        let Some(info) = topo.info(cpu) else { continue };
        let e = &mut extremes[info.kind.index()];
        let here = (info.capacity, cpu);
        *e = Some(match *e {
            None => (here, here),
            Some((lo, hi)) => (lo.min(here), hi.max(here)),
        });
    }
    let name = |i: usize| {
        topo.cpus()
            .iter()
            .find_map(|c| topo.info(c).filter(|x| x.kind.index() == i))
            .map_or("?", |x| x.kind.name())
    };
    let mut out = Vec::new();
    for fast in 0..extremes.len() {
        for slow in fast + 1..extremes.len() {
            let (Some(((low, low_cpu), _)), Some((_, (high, high_cpu)))) =
                (extremes[fast], extremes[slow])
            else {
                continue;
            };
            if low < high {
                out.push(format!(
                    "{source}: {} CPU {} has capacity {low}, less than {} CPU {}'s {high}; a \
                     {} core is meant to be the faster, so the idle order and the capacities \
                     disagree (check each CPU's `kind` and `capacity`)",
                    name(fast),
                    low_cpu.0,
                    name(slow),
                    high_cpu.0,
                    name(fast)
                ));
            }
        }
    }
    out
}

pub(crate) fn looks_like_file(name_or_file: &str) -> bool {
    Path::new(name_or_file).extension().is_some() || name_or_file.contains('/')
}

/// Reads and validates a trace file, or imports an rt-app file (told apart by shape); nothing
/// runs if it is bad. What an rt-app import drops or approximates is one warning, or with
/// `strict` an input error.
pub(crate) fn trace(path: &Path, strict: bool) -> Result<Trace, Failure> {
    let name = path.display().to_string();
    let text = read(path, MAX_TRACE_BYTES, "trace")?;
    if rt_app::is_rt_app(&text) {
        return rt_app_trace(&text, path, strict);
    }
    Trace::from_json_str(&text, &name).map_err(|e| Failure::Input(e.into()))
}

/// Imports an rt-app file into a trace named after the file. The file was read under the
/// trace's limit, since only its text tells it from a trace; an rt-app file has a lower one.
pub(crate) fn rt_app_trace(text: &str, path: &Path, strict: bool) -> Result<Trace, Failure> {
    let name = path.display().to_string();
    if text.len() > MAX_RT_APP_BYTES {
        return Err(Failure::Input(
            input_file::InputFileError::TooLarge {
                path: name,
                kind: "rt-app file",
                bytes: text.len() as u64,
                max: MAX_RT_APP_BYTES as u64,
            }
            .into(),
        ));
    }
    rt_app_sources(
        &[RtAppSource { name: &name, text }],
        path,
        strict,
        RtAppOptions::default(),
    )
}

/// Imports rt-app files merged into one workload (as rt-app's merge.py merges them), named
/// after the first. What the model drops or approximates is a summary on standard error, one
/// line per task, printed whatever the log level; with `strict` it is the error instead.
pub(crate) fn rt_app_sources(
    sources: &[RtAppSource<'_>],
    first: &Path,
    strict: bool,
    options: RtAppOptions,
) -> Result<Trace, Failure> {
    let stem = first
        .file_stem()
        .map_or_else(|| "rt-app".to_owned(), |s| s.to_string_lossy().into_owned());
    let imported =
        rt_app::import_files(sources, &stem, options).map_err(|e| Failure::Input(e.into()))?;
    if !imported.unmodelled.is_empty() {
        let lines = rt_app::summary_lines(&imported.unmodelled);
        if strict {
            let first = &imported.unmodelled[0];
            return Err(Failure::Input(anyhow!(
                "{}: task \"{}\": {} is not modelled exactly ({}), and --strict refuses it; \
                 everything the model cannot carry:\n  {}",
                first.source,
                first.task,
                first.feature,
                match &first.treatment {
                    rt_app::Treatment::Dropped(w) => format!("dropped: {w}"),
                    rt_app::Treatment::Approximated(w) => format!("approximated: {w}"),
                },
                lines.join("\n  ")
            )));
        }
        print_import_notes(
            "rt-app import: what the model cannot carry exactly, per task",
            &lines,
        );
    }
    Ok(imported.trace)
}

/// What an importer could not carry exactly, as `HEADING:` and one indented line per item, on
/// standard error. Not a log line: a reader of the import or the replay must see it whatever
/// RUST_LOG says. Nothing when there is nothing to say.
pub(crate) fn print_import_notes(heading: &str, lines: &[String]) {
    if !lines.is_empty() {
        eprintln!("{heading}:\n  {}", lines.join("\n  "));
    }
}

/// Reads the files of `import rt-app` (one workload, possibly split over several files).
pub(crate) fn rt_app_files(
    paths: &[std::path::PathBuf],
    strict: bool,
    options: RtAppOptions,
) -> Result<Trace, Failure> {
    let mut files = Vec::new();
    let mut total = 0usize;
    for path in paths {
        let text = read(path, MAX_RT_APP_BYTES, "rt-app file")?;
        // The files are merged as one tree, so the limit holds for them together; stopping at
        // the first file past it reads at most twice the limit.
        total = total.saturating_add(text.len());
        files.push((path.display().to_string(), text));
        if total > MAX_RT_APP_BYTES {
            let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
            return Err(Failure::Input(anyhow!(
                "{}: rt-app files of one workload are {total} bytes together, more than the \
                 {MAX_RT_APP_BYTES} accepted",
                names.join(", ")
            )));
        }
    }
    let sources: Vec<RtAppSource<'_>> = files
        .iter()
        .map(|(name, text)| RtAppSource { name, text })
        .collect();
    let first = paths.first().map_or(Path::new("rt-app"), |p| p.as_path());
    rt_app_sources(&sources, first, strict, options)
}

/// A user's input file as text: refused before reading when it is not a regular file (a
/// FIFO, a device, a directory) or is larger than `max` bytes (`kind` names the input in that
/// error), and never read past `max`, so a file that grows meanwhile is bounded too.
pub(crate) fn read(path: &Path, max: usize, kind: &'static str) -> Result<String, Failure> {
    input_file::read_bounded(path, max as u64, kind).map_err(|e| Failure::Input(e.into()))
}

/// `--set KEY=VALUE` items.
pub(crate) fn knobs(items: &[String]) -> Result<Knobs, Failure> {
    Knobs::parse(items).map_err(|e| Failure::Input(e.into()))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_nearest_name_is_offered_only_when_near() {
        assert_eq!(edit_distance("tc2", "tc2"), 0);
        assert_eq!(edit_distance("atom", "atom24"), 2);
        assert_eq!(edit_distance("adl_desktop", "adl-desktop"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        let known = ["i7-13800h", "tc2", "atom24"];
        assert_eq!(did_you_mean("tc3", &known), " (did you mean `tc2`?)");
        assert_eq!(did_you_mean("atom", &known), " (did you mean `atom24`?)");
        assert_eq!(
            did_you_mean("i7-12700h", &known),
            " (did you mean `i7-13800h`?)"
        );
        assert_eq!(did_you_mean("pentium-pro", &known), "");
        assert_eq!(did_you_mean("xyz", &known), "");
    }
}
