//! A sysfs tree in memory, built from a fuzz input: up to past [`MAX_CPUS`] CPU directories,
//! each with the topology, cache, capacity and frequency files the detection reads, whose
//! contents are either lists and numbers a kernel would write (grouped by sizes the input
//! picks) or arbitrary text. Per-CPU files follow a few templates taken in turn, so a
//! 1,024-CPU machine takes a few dozen input bytes.

use arbitrary::{Arbitrary, Unstructured};
use hybridland_machine::sysfs::SysfsFiles;
use hybridland_policy::MAX_CPUS;
use std::path::Path;

/// Where the tree is rooted (a path only: nothing is read from the disk).
pub const ROOT: &str = "/fuzz/sys";

/// CPU list text: none (the file is missing), the group of the CPU of `size` CPUs, or raw text.
#[derive(Clone, Debug, Arbitrary)]
pub enum ListIn {
    Missing,
    /// The aligned group of this many CPUs that holds the CPU (its SMT core, its L2, ...).
    Group(u8),
    /// The group, written as the kernel does with a newline and the NUL bytes some
    /// firmware leaves.
    GroupWithEndings(u8),
    /// Every CPU of the tree.
    All,
    Raw(String),
}

/// A number file: none, a value, or raw text.
#[derive(Clone, Debug, Arbitrary)]
pub enum NumIn {
    Missing,
    /// A value that depends on the CPU's kind: `big` for CPUs past `split`, else `little`.
    Tiered {
        little: u32,
        big: u32,
    },
    Value(u32),
    Raw(String),
}

#[derive(Clone, Debug, Arbitrary)]
pub struct CacheIn {
    level: NumIn,
    /// 0: Data, 1: Unified, 2: Instruction, 3: missing.
    kind: u8,
    shared: ListIn,
}

/// The files of one CPU directory, as a template.
#[derive(Clone, Debug, Arbitrary)]
pub struct CpuIn {
    online: NumIn,
    thread_siblings: ListIn,
    core_cpus: ListIn,
    cluster: ListIn,
    caches: Vec<CacheIn>,
    capacity: NumIn,
    cppc_highest_perf: NumIn,
    amd_prefcore_ranking: NumIn,
    amd_highest_perf: NumIn,
    max_freq_khz: NumIn,
}

impl CpuIn {
    /// The caches the tree has: up to 6.
    fn caches(&self) -> &[CacheIn] {
        &self.caches[..self.caches.len().min(6)]
    }
}

/// A whole tree.
#[derive(Clone, Debug, Arbitrary)]
pub struct SysfsIn {
    /// CPU count: mostly up to 32, up to past [`MAX_CPUS`] when `size` is 255 and the input
    /// is one in [`LARGE_ONE_IN`] (see [`SysfsIn::from_bytes`]); 255, not 0, so an input cut
    /// short does not ask for a large machine.
    size: u8,
    cpus: u16,
    /// CPUs below `split` are the little ones for [`NumIn::Tiered`] and the Intel lists.
    split: u16,
    online: ListIn,
    templates: Vec<CpuIn>,
    intel: Option<(ListIn, ListIn)>,
    nodes: Vec<ListIn>,
    /// Entries with odd names beside the CPU directories (`cpufreq`, `cpu12x`, `cpu-1`).
    junk: Vec<String>,
}

/// The tree of one input, answered on demand: a read parses the path it is asked for and
/// writes that one file. Building the whole tree up front (SipHash maps of path strings, a
/// walk up the parents per file) was about 40% of an execution. Its files and listings are
/// those the input describes (see [`SysfsIn::tree`]).
#[derive(Clone, Copy, Debug)]
pub struct Tree<'a> {
    input: &'a SysfsIn,
    /// [`SysfsIn::nr_cpus`], computed once.
    n: usize,
}

/// `prefix<N>` with N as `format!` writes it (no sign, no leading zero), or `None`: the tree
/// names its directories that way, so `cpu05` or `cpu+5` is none of them.
fn numbered(name: &str, prefix: &str) -> Option<usize> {
    let digits = name.strip_prefix(prefix)?;
    let canonical =
        digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

impl Tree<'_> {
    /// The template of CPU directory `cpu<i>` when it is one of the tree's numbered ones.
    fn template(&self, name: &str) -> Option<(usize, Option<&CpuIn>)> {
        let i = numbered(name, "cpu").filter(|i| *i < self.n)?;
        let templates = self.input.templates();
        let t = (!templates.is_empty()).then(|| &templates[i % templates.len()]);
        Some((i, t))
    }

    /// A file under `devices/system/cpu/`.
    fn cpu_file(&self, rest: &str) -> Option<String> {
        let input = self.input;
        if rest == "online" {
            return input.list(&input.online, 0, self.n);
        }
        let (name, file) = rest.split_once('/')?;
        // An odd entry's `online` file is written after the CPU directories' files.
        if file == "online" && input.junk_names().any(|j| j == name) {
            return Some("1\n".into());
        }
        let (cpu, t) = self.template(name)?;
        if file == "uevent" {
            return Some(String::new());
        }
        let t = t?;
        let n = self.n;
        match file {
            "online" => input.num(&t.online, cpu),
            "topology/thread_siblings_list" => input.list(&t.thread_siblings, cpu, n),
            "topology/core_cpus_list" => input.list(&t.core_cpus, cpu, n),
            "topology/cluster_cpus_list" => input.list(&t.cluster, cpu, n),
            "cpu_capacity" => input.num(&t.capacity, cpu),
            "acpi_cppc/highest_perf" => input.num(&t.cppc_highest_perf, cpu),
            "cpufreq/amd_pstate_prefcore_ranking" => input.num(&t.amd_prefcore_ranking, cpu),
            "cpufreq/amd_pstate_highest_perf" => input.num(&t.amd_highest_perf, cpu),
            "cpufreq/cpuinfo_max_freq" => input.num(&t.max_freq_khz, cpu),
            _ => {
                let (index, leaf) = file.strip_prefix("cache/")?.split_once('/')?;
                let c = t.caches().get(numbered(index, "index")?)?;
                input.cache_file(c, leaf, cpu, n)
            }
        }
    }

    /// The entries of `devices/system/cpu`: `online`, the CPU directories and the odd
    /// entries, each name once.
    fn cpu_entries(&self) -> Vec<String> {
        let input = self.input;
        let mut names: Vec<String> = Vec::with_capacity(self.n + 5);
        let online = !matches!(input.online, ListIn::Missing);
        if online {
            names.push("online".into());
        }
        names.extend((0..self.n).map(|i| format!("cpu{i}")));
        let known = names.len();
        for j in input.junk_names() {
            let taken = (online && j == "online")
                || self.template(j).is_some()
                || names[known..].iter().any(|k| k == j);
            if !taken {
                names.push(j.to_owned());
            }
        }
        names
    }

    /// The `index<N>` entries of a CPU directory's `cache`: those with a file.
    fn cache_entries(&self, name: &str) -> Vec<String> {
        let Some((_, Some(t))) = self.template(name) else {
            return Vec::new();
        };
        (0..t.caches().len())
            .filter(|i| {
                let c = &t.caches()[*i];
                !matches!(c.level, NumIn::Missing)
                    || c.kind % 4 != 3
                    || !matches!(c.shared, ListIn::Missing)
            })
            .map(|i| format!("index{i}"))
            .collect()
    }

    /// The `node<N>` entries of `devices/system/node`: those with a `cpulist`.
    fn node_entries(&self) -> Vec<String> {
        (0..self.input.nodes().len())
            .filter(|i| !matches!(self.input.nodes()[*i], ListIn::Missing))
            .map(|i| format!("node{i}"))
            .collect()
    }
}

/// What is under the root, or `None` for a path elsewhere.
fn under_root(path: &Path) -> Option<&str> {
    path.to_str()?.strip_prefix(ROOT)?.strip_prefix('/')
}

impl SysfsFiles for Tree<'_> {
    fn read(&self, path: &Path) -> Option<String> {
        let rel = under_root(path)?;
        if let Some(rest) = rel.strip_prefix("devices/system/cpu/") {
            return self.cpu_file(rest);
        }
        if let Some(rest) = rel.strip_prefix("devices/system/node/") {
            let i = numbered(rest.strip_suffix("/cpulist")?, "node")?;
            let node = self.input.nodes().get(i)?;
            return self.input.list(node, i * self.n / 8, self.n);
        }
        match rel {
            "devices/cpu_core/cpus" => self.input.intel_lists(self.n).0,
            "devices/cpu_atom/cpus" => self.input.intel_lists(self.n).1,
            _ => None,
        }
    }

    /// The directories the reader lists; any other lists nothing.
    fn entries(&self, dir: &Path) -> Vec<String> {
        let Some(rel) = under_root(dir) else {
            return Vec::new();
        };
        match rel {
            "devices/system/cpu" => self.cpu_entries(),
            "devices/system/node" => self.node_entries(),
            _ => rel
                .strip_prefix("devices/system/cpu/")
                .and_then(|r| r.strip_suffix("/cache"))
                .map(|name| self.cache_entries(name))
                .unwrap_or_default(),
        }
    }
}

fn range(lo: usize, hi: usize) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

/// How often an input whose `size` asks for a large tree gets one. With coverage
/// instrumentation a tree of hundreds of CPUs takes milliseconds (about 5 ms at 500), one of
/// up to 32 about 0.2 ms. Asked for by the `size` byte alone, large trees became most of the
/// corpus (their CPU ids reach new code) and so most of what ran: about 250 inputs a second.
/// Chosen by a hash of all the bytes ([`one_in`](crate::one_in)), a large input's children
/// are small but one time in this many, which keeps the limits in reach (over ten thousand
/// large trees in a campaign of 10^7) while the small ones set the pace. The seeds
/// `seed-large-*` are inputs the hash picks: they change with this value or the salt.
pub const LARGE_ONE_IN: u64 = 256;

impl SysfsIn {
    /// The input these bytes decode to, as `fuzz_target!` would decode it (`None` for what it
    /// would skip), with the large tree kept for one input in [`LARGE_ONE_IN`] of those that
    /// ask for it: the others get up to 32 CPUs.
    pub fn from_bytes(data: &[u8]) -> Option<Self> {
        if data.len() < Self::size_hint(0).0 {
            return None;
        }
        let mut input = Self::arbitrary_take_rest(Unstructured::new(data)).ok()?;
        if input.size == u8::MAX && !crate::one_in(data, LARGE_ONE_IN, 0x5f5) {
            input.size = 0;
        }
        Some(input)
    }

    /// How many CPU directories the tree has.
    pub fn nr_cpus(&self) -> usize {
        let n = usize::from(self.cpus);
        if self.size == u8::MAX {
            1 + n % (MAX_CPUS + 8)
        } else {
            1 + n % 32
        }
    }

    /// The odd entries beside the CPU directories (each a directory with an `online` file).
    pub fn junk_names(&self) -> impl Iterator<Item = &str> {
        self.junk
            .iter()
            .take(4)
            .map(String::as_str)
            .filter(|name| !name.is_empty() && !name.contains('/') && *name != "." && *name != "..")
    }

    fn list(&self, l: &ListIn, cpu: usize, n: usize) -> Option<String> {
        let group = |size: u8| {
            let size = usize::from(size.max(1));
            let lo = cpu / size * size;
            range(lo, (lo + size - 1).min(n - 1))
        };
        match l {
            ListIn::Missing => None,
            ListIn::Group(size) => Some(group(*size) + "\n"),
            ListIn::GroupWithEndings(size) => Some(group(*size) + " \n\0\0"),
            ListIn::All => Some(range(0, n - 1) + "\n"),
            ListIn::Raw(s) => Some(s.clone()),
        }
    }

    fn num(&self, v: &NumIn, cpu: usize) -> Option<String> {
        match v {
            NumIn::Missing => None,
            NumIn::Tiered { little, big } => {
                let v = if cpu < usize::from(self.split) {
                    little
                } else {
                    big
                };
                Some(format!("{v}\n"))
            }
            NumIn::Value(v) => Some(format!("{v}\n")),
            NumIn::Raw(s) => Some(s.clone()),
        }
    }

    /// The tree this input describes: `devices/system/cpu/online`; per CPU directory
    /// `cpu<i>` a `uevent` (so it shows when it has no other file) and, from template
    /// `i % templates`, `online`, `topology/{thread_siblings,core_cpus,cluster_cpus}_list`,
    /// `cache/index<k>/{level,type,shared_cpu_list}` for up to 6 caches, `cpu_capacity`,
    /// `acpi_cppc/highest_perf` and `cpufreq/{amd_pstate_prefcore_ranking,
    /// amd_pstate_highest_perf,cpuinfo_max_freq}`, each missing when the template says so; an
    /// `online` of `1` in each odd entry (over a CPU's own); `devices/cpu_{core,atom}/cpus`;
    /// `devices/system/node/node<i>/cpulist` for up to 8 nodes.
    pub fn tree(&self) -> Tree<'_> {
        Tree {
            input: self,
            n: self.nr_cpus(),
        }
    }

    fn templates(&self) -> &[CpuIn] {
        &self.templates[..self.templates.len().min(8)]
    }

    fn nodes(&self) -> &[ListIn] {
        &self.nodes[..self.nodes.len().min(8)]
    }

    /// A file of a cache directory.
    fn cache_file(&self, c: &CacheIn, leaf: &str, cpu: usize, n: usize) -> Option<String> {
        match leaf {
            "level" => self.num(&c.level, cpu),
            "type" => ["Data", "Unified", "Instruction"]
                .get(usize::from(c.kind % 4))
                .map(|k| format!("{k}\n")),
            "shared_cpu_list" => self.list(&c.shared, cpu, n),
            _ => None,
        }
    }

    /// `devices/cpu_core/cpus` and `devices/cpu_atom/cpus`.
    fn intel_lists(&self, n: usize) -> (Option<String>, Option<String>) {
        let Some((core, atom)) = &self.intel else {
            return (None, None);
        };
        let split = usize::from(self.split).min(n);
        // The P list covers the CPUs below the split, the E list the rest, when they are
        // groups; raw text goes in as it is.
        let p = match core {
            ListIn::Group(_) | ListIn::GroupWithEndings(_) if split > 0 => {
                Some(range(0, split - 1) + "\n")
            }
            other => self.list(other, 0, n),
        };
        let e = match atom {
            ListIn::Group(_) | ListIn::GroupWithEndings(_) if split < n => {
                Some(range(split, n - 1) + "\n")
            }
            other => self.list(other, n - 1, n),
        };
        (p, e)
    }
}
