//! Command-line flags, in the style of the scx schedulers.

#![forbid(unsafe_code)]

use clap::Parser;
use hybridland_policy::{ClusterBalance, PrimaryDomain};
use std::path::PathBuf;

/// scx_hybridland: a sched_ext scheduler for hybrid CPUs (P-cores with SMT, E-core clusters,
/// big.LITTLE). Wake-ups go to a fully idle P-core first, then an idle E-core (spread across
/// L2 clusters), then an idle SMT sibling of a busy core; the policy is the `hybridland-policy`
/// crate, fed the kernel's real idle masks.
///
/// Stop it with Ctrl-C, SIGINT or SIGTERM; if it dies the kernel falls back to its default
/// scheduler. Change cluster balance while it runs with
/// `echo off > /run/scx_hybridland/cluster_balance` (off, on or auto).
#[derive(Debug, Parser)]
#[command(name = "scx_hybridland", version, verbatim_doc_comment)]
pub(crate) struct Opts {
    /// Where tasks go first: `performance` (P-cores), `powersave` (E-cores), `all`, a CPU list
    /// (`0-5,12`) or a hex mask (`0xff000`). Other CPUs are used only when none of these is
    /// idle.
    #[arg(short = 'm', long, default_value = "all")]
    pub(crate) primary_domain: PrimaryDomain,

    /// Spread work across L2 clusters: `off`, `on`, or `auto` (only at moderate load). Can be
    /// changed at run time through the control file.
    #[arg(long, default_value = "auto")]
    pub(crate) cluster_balance: ClusterBalance,

    /// `auto` cluster balance stops once this percentage of CPUs is busy.
    #[arg(long, default_value_t = 75, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub(crate) auto_high_busy_pct: u8,

    /// A task fits a CPU when its utilisation is at most this percentage of the CPU's capacity.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub(crate) fit_margin_pct: u8,

    /// Maximum time slice in microseconds; shortened when many tasks wait.
    #[arg(short = 's', long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub(crate) slice_us: u64,

    /// Read the machine from this TOML file instead of sysfs (see the crate README).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,

    /// Root of the sysfs tree to detect the topology from and to check for sched_ext [default:
    /// `$SCX_SYSFS_PREFIX/sys` when that is set, as scx_utils reads it, else `/sys`].
    #[arg(long, value_name = "DIR")]
    pub(crate) sysfs_root: Option<PathBuf>,

    /// Print statistics every SECS seconds (0: never).
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub(crate) stats: f64,

    /// Directory of the run-time control file `cluster_balance`.
    #[arg(long, default_value = "/run/scx_hybridland", value_name = "DIR")]
    pub(crate) control_dir: PathBuf,

    /// Print the detected topology, the knobs and the idle order, then exit without loading
    /// anything (no root needed).
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Benchmark baseline: no policy. Every queued task goes to the shared queue in arrival
    /// order with the full slice (`--slice-us`) and runs on the first CPU that frees up, with no
    /// idle snapshot and no nudges: the framework's minimal scheduler (scx_rlfifo style), to
    /// measure what the policy path costs (scripts/vm-bench.sh).
    #[arg(long)]
    pub(crate) fifo: bool,

    /// Size of the kernel's exit dump buffer, in bytes (0: none).
    #[arg(long, default_value_t = 0)]
    pub(crate) exit_dump_len: u32,

    /// Log more: -v for each decision's summary, -vv for everything.
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
}

impl Opts {
    /// The sysfs root in force: `--sysfs-root`, else `$SCX_SYSFS_PREFIX/sys`, else `/sys`.
    pub(crate) fn sysfs_root(&self) -> PathBuf {
        sysfs_root(
            self.sysfs_root.as_deref(),
            std::env::var_os("SCX_SYSFS_PREFIX").as_deref(),
        )
    }
}

fn sysfs_root(flag: Option<&std::path::Path>, prefix: Option<&std::ffi::OsStr>) -> PathBuf {
    match (flag, prefix) {
        (Some(root), _) => root.to_owned(),
        (None, Some(prefix)) if !prefix.is_empty() => PathBuf::from(prefix).join("sys"),
        (None, _) => PathBuf::from("/sys"),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn flags_parse_in_scx_style() {
        let o = Opts::try_parse_from([
            "scx_hybridland",
            "-m",
            "powersave",
            "--cluster-balance",
            "off",
            "--slice-us",
            "2000",
            "--stats",
            "1",
            "-vv",
            "--dry-run",
        ])
        .unwrap();
        assert_eq!(o.primary_domain, PrimaryDomain::Powersave);
        assert_eq!(o.cluster_balance, ClusterBalance::Off);
        assert_eq!(o.slice_us, 2000);
        assert_eq!(o.verbose, 2);
        assert!(o.dry_run);
        assert!(!o.fifo);
        assert!(Opts::try_parse_from(["x", "--fifo"]).unwrap().fifo);
        let mask = Opts::try_parse_from(["x", "--primary-domain", "0xf0"]).unwrap();
        assert_eq!(mask.primary_domain.to_string(), "4-7");
        assert!(Opts::try_parse_from(["x", "--cluster-balance", "sometimes"]).is_err());
        assert!(Opts::try_parse_from(["x", "--slice-us", "5"]).is_err());
        assert!(Opts::try_parse_from(["x", "-m", "3-1"]).is_err());
    }

    #[test]
    fn sysfs_root_from_the_flag_then_scx_sysfs_prefix() {
        use std::ffi::OsStr;
        use std::path::Path;
        let flag = Path::new("/tmp/fake");
        let prefix = OsStr::new("/srv/dump");
        assert_eq!(sysfs_root(Some(flag), Some(prefix)), flag);
        assert_eq!(sysfs_root(None, Some(prefix)), Path::new("/srv/dump/sys"));
        assert_eq!(sysfs_root(None, Some(OsStr::new(""))), Path::new("/sys"));
        assert_eq!(sysfs_root(None, None), Path::new("/sys"));
    }
}
