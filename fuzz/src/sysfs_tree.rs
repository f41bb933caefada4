//! A sysfs tree in memory, built from a fuzz input: up to past [`MAX_CPUS`] CPU directories,
//! each with the topology, cache, capacity and frequency files the detection reads, whose
//! contents are either lists and numbers a kernel would write (grouped by sizes the input
//! picks) or arbitrary text. Per-CPU files follow a few templates taken in turn, so a
//! 1,024-CPU machine takes a few dozen input bytes.

use arbitrary::Arbitrary;
use hybridland_machine::sysfs::SysfsFiles;
use hybridland_policy::MAX_CPUS;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

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

/// A whole tree.
#[derive(Clone, Debug, Arbitrary)]
pub struct SysfsIn {
    /// CPU count: mostly up to 32, up to past [`MAX_CPUS`] when `size` is 255 (those take
    /// tens of milliseconds with coverage instrumentation, the small ones microseconds; 255,
    /// not 0, so an input cut short does not ask for a large machine).
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

/// The tree: file path to contents, and each directory's entries. Hashed by the path's
/// text: the reader asks for a few dozen files per CPU, and comparing paths component by
/// component was most of an execution.
#[derive(Clone, Debug, Default)]
pub struct MemTree {
    pub files: HashMap<String, String>,
    pub dirs: HashMap<String, BTreeSet<String>>,
}

impl MemTree {
    fn insert(&mut self, path: &Path, text: String) {
        let mut child = path;
        while let (Some(parent), Some(name)) = (child.parent(), child.file_name()) {
            let entries = self
                .dirs
                .entry(parent.to_string_lossy().into_owned())
                .or_default();
            let fresh = entries.insert(name.to_string_lossy().into_owned());
            if !fresh {
                break;
            }
            child = parent;
        }
        self.files.insert(path.to_string_lossy().into_owned(), text);
    }
}

impl SysfsFiles for MemTree {
    fn read(&self, path: &Path) -> Option<String> {
        self.files.get(path.to_str()?).cloned()
    }

    fn entries(&self, dir: &Path) -> Vec<String> {
        dir.to_str()
            .and_then(|d| self.dirs.get(d))
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn range(lo: usize, hi: usize) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

impl SysfsIn {
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

    /// The tree this input describes.
    pub fn tree(&self) -> MemTree {
        let n = self.nr_cpus();
        let mut tree = MemTree::default();
        let root = Path::new(ROOT);
        let cpu_root = root.join("devices/system/cpu");
        let mut put = |path: PathBuf, text: Option<String>| {
            if let Some(text) = text {
                tree.insert(&path, text);
            }
        };
        put(cpu_root.join("online"), self.list(&self.online, 0, n));
        let templates = &self.templates[..self.templates.len().min(8)];
        for cpu in 0..n {
            let dir = cpu_root.join(format!("cpu{cpu}"));
            // A directory with no file of its own still shows in the listing.
            put(dir.join("uevent"), Some(String::new()));
            let Some(t) = (!templates.is_empty()).then(|| &templates[cpu % templates.len()]) else {
                continue;
            };
            put(dir.join("online"), self.num(&t.online, cpu));
            let topo = dir.join("topology");
            put(
                topo.join("thread_siblings_list"),
                self.list(&t.thread_siblings, cpu, n),
            );
            put(topo.join("core_cpus_list"), self.list(&t.core_cpus, cpu, n));
            put(
                topo.join("cluster_cpus_list"),
                self.list(&t.cluster, cpu, n),
            );
            for (i, c) in t.caches.iter().take(6).enumerate() {
                let index = dir.join(format!("cache/index{i}"));
                put(index.join("level"), self.num(&c.level, cpu));
                let kind = ["Data", "Unified", "Instruction"].get(usize::from(c.kind % 4));
                put(index.join("type"), kind.map(|k| format!("{k}\n")));
                put(index.join("shared_cpu_list"), self.list(&c.shared, cpu, n));
            }
            put(dir.join("cpu_capacity"), self.num(&t.capacity, cpu));
            put(
                dir.join("acpi_cppc/highest_perf"),
                self.num(&t.cppc_highest_perf, cpu),
            );
            put(
                dir.join("cpufreq/amd_pstate_prefcore_ranking"),
                self.num(&t.amd_prefcore_ranking, cpu),
            );
            put(
                dir.join("cpufreq/amd_pstate_highest_perf"),
                self.num(&t.amd_highest_perf, cpu),
            );
            put(
                dir.join("cpufreq/cpuinfo_max_freq"),
                self.num(&t.max_freq_khz, cpu),
            );
        }
        for name in self.junk_names() {
            put(cpu_root.join(name).join("online"), Some("1\n".into()));
        }
        if let Some((core, atom)) = &self.intel {
            let split = usize::from(self.split).min(n);
            // The P list covers the CPUs below the split, the E list the rest, when they
            // are groups; raw text goes in as it is.
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
            put(root.join("devices/cpu_core/cpus"), p);
            put(root.join("devices/cpu_atom/cpus"), e);
        }
        for (i, node) in self.nodes.iter().take(8).enumerate() {
            let dir = root.join(format!("devices/system/node/node{i}"));
            put(dir.join("cpulist"), self.list(node, i * n / 8, n));
        }
        tree
    }
}
