//! The control files: values written and read back, the watcher, planted links and FIFOs,
//! a policy's own knobs.

use super::*;
use crate::safe_file::testing::scratch;

#[test]
fn written_values_are_picked_up_and_bad_ones_rejected() {
    let tmp = scratch();
    let dir = tmp.path().join("run");
    let mut f = ControlFile::create(&dir, ClusterBalance::Auto).unwrap();
    assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "auto\n");
    assert_eq!(f.poll(ClusterBalance::Auto), KnobChange::None);
    // mtime granularity: make sure the write is seen as new.
    std::thread::sleep(core::time::Duration::from_millis(20));
    std::fs::write(f.path(), "off\n").unwrap();
    f.file.modified = None;
    assert_eq!(
        f.poll(ClusterBalance::Auto),
        KnobChange::Set(ClusterBalance::Off)
    );
    assert_eq!(f.poll(ClusterBalance::Off), KnobChange::None);
    std::fs::write(f.path(), "sideways\n").unwrap();
    f.file.modified = None;
    assert_eq!(f.poll(ClusterBalance::Off), KnobChange::Rejected);
    assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "off\n");
    drop(f);
    assert!(!dir.exists());
}

/// The watcher hands a written value to the loop, rejects a bad one, and removes the file
/// and the directory when dropped.
#[test]
fn the_watcher_hands_changes_over_and_cleans_up() {
    let tmp = scratch();
    let dir = tmp.path().join("run");
    let f = ControlFile::create(&dir, ClusterBalance::Auto).unwrap();
    let w = Watcher::spawn(f, ClusterBalance::Auto).unwrap();
    let wait = |w: &Watcher| {
        // Liveness only: generous for a loaded machine, never a speed claim.
        for _ in 0..1000 {
            if let Some(c) = w.try_change() {
                return c;
            }
            std::thread::sleep(core::time::Duration::from_millis(10));
        }
        panic!("no change seen in 10 s");
    };
    std::thread::sleep(core::time::Duration::from_millis(20));
    std::fs::write(w.path(), "off\n").unwrap();
    assert_eq!(wait(&w), KnobChange::Set(ClusterBalance::Off));
    w.applied(ClusterBalance::Off);
    std::thread::sleep(core::time::Duration::from_millis(20));
    std::fs::write(w.path(), "sideways\n").unwrap();
    assert_eq!(wait(&w), KnobChange::Rejected);
    drop(w);
    assert!(!dir.exists());
}

/// The watcher sleeps on the directory's inotify events: while the file is unchanged it
/// looks no more (at the interval it falls back to, it would have looked about five times in
/// the pause), and a write still reaches the loop.
#[test]
fn an_unchanged_file_wakes_the_watcher_no_more() {
    use core::sync::atomic::Ordering;
    let tmp = scratch();
    let dir = tmp.path().join("run");
    let f = ControlFile::create(&dir, ClusterBalance::Auto).unwrap();
    let w = Watcher::spawn(f, ClusterBalance::Auto).unwrap();
    assert!(w.event_driven, "no inotify watch on {}", dir.display());
    // Liveness only: the first look, at start.
    for _ in 0..1000 {
        if w.looks.load(Ordering::Relaxed) > 0 {
            break;
        }
        std::thread::sleep(core::time::Duration::from_millis(10));
    }
    std::thread::sleep(core::time::Duration::from_nanos(5 * POLL_NS));
    assert_eq!(
        w.looks.load(Ordering::Relaxed),
        1,
        "looked with nothing changed"
    );
    std::fs::write(w.path(), "on\n").unwrap();
    let mut seen = None;
    for _ in 0..1000 {
        seen = w.try_change();
        if seen.is_some() {
            break;
        }
        std::thread::sleep(core::time::Duration::from_millis(10));
    }
    assert_eq!(seen, Some(KnobChange::Set(ClusterBalance::On)));
    drop(w);
    assert!(!dir.exists());
}

/// A link or FIFO planted where the file goes is refused and left as it is, and so is a
/// link planted as the directory; a FIFO swapped in while running is never read.
#[test]
fn planted_links_and_fifos_are_refused_and_left_alone() {
    use crate::safe_file::testing::*;
    let s = scratch();
    let dir = s.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("cluster_balance");
    let victim = s.path().join("victim");
    plant_link(&file, &victim);
    let e = ControlFile::create(&dir, ClusterBalance::Auto)
        .err()
        .unwrap();
    assert!(e.to_string().contains("it is a symbolic link"), "{e}");
    assert_link_untouched(&file, &victim);
    std::fs::remove_file(&file).unwrap();

    plant_fifo(&file);
    let e = ControlFile::create(&dir, ClusterBalance::Auto)
        .err()
        .unwrap();
    assert!(e.to_string().contains("it is a FIFO"), "{e}");
    assert_fifo_untouched(&file);
    std::fs::remove_file(&file).unwrap();

    let linked_dir = s.path().join("linked-run");
    std::os::unix::fs::symlink(&dir, &linked_dir).unwrap();
    let e = ControlFile::create(&linked_dir, ClusterBalance::Auto)
        .err()
        .unwrap();
    assert!(e.to_string().contains("it is a symbolic link"), "{e}");
    assert_only(&dir, &[]);

    // Running, then the file becomes a FIFO: the poll neither blocks nor rewrites it.
    let mut f = ControlFile::create(&dir, ClusterBalance::On).unwrap();
    std::fs::remove_file(f.path()).unwrap();
    plant_fifo(f.path());
    f.file.modified = None;
    assert_eq!(f.poll(ClusterBalance::On), KnobChange::None);
    assert_fifo_untouched(f.path());
}

/// A policy's own knob gets a file holding its value; a written value in range is handed
/// over, one out of range is refused and the file rewritten; the files and the directory
/// go when the watcher does.
#[test]
fn a_policys_own_knobs_are_files_beside_it() {
    let tmp = scratch();
    let dir = tmp.path().join("run");
    let created = ensure_dir(&dir).unwrap();
    assert!(created);
    let specs = [
        KnobSpec::int("heavy_util", 0, 1024, 256, ""),
        KnobSpec::on_off("move_up", true, ""),
    ];
    let files: Vec<KnobFile> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| KnobFile::create(&dir, *s, i as u16, s.default).unwrap())
        .collect();
    assert_eq!(
        std::fs::read_to_string(dir.join("move_up")).unwrap(),
        "on\n"
    );
    let w = Watcher::spawn_all(None, files, &[256, 1], Some(dir.clone())).unwrap();
    let wait = |w: &Watcher| {
        // Liveness only: generous for a loaded machine, never a speed claim.
        for _ in 0..1000 {
            if let Some(c) = w.try_change() {
                return c;
            }
            std::thread::sleep(core::time::Duration::from_millis(10));
        }
        panic!("no change seen in 10 s");
    };
    std::thread::sleep(core::time::Duration::from_millis(20));
    std::fs::write(dir.join("heavy_util"), "300\n").unwrap();
    assert_eq!(
        wait(&w),
        KnobChange::Own {
            index: 0,
            value: 300
        }
    );
    w.applied_own(0, 300);
    std::thread::sleep(core::time::Duration::from_millis(20));
    std::fs::write(dir.join("heavy_util"), "5000\n").unwrap();
    assert_eq!(wait(&w), KnobChange::OwnRejected { index: 0 });
    // Rewritten with the value in force.
    for _ in 0..1000 {
        if std::fs::read_to_string(dir.join("heavy_util")).unwrap() == "300\n" {
            break;
        }
        std::thread::sleep(core::time::Duration::from_millis(10));
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("heavy_util")).unwrap(),
        "300\n"
    );
    std::fs::write(dir.join("move_up"), "off\n").unwrap();
    assert_eq!(wait(&w), KnobChange::Own { index: 1, value: 0 });
    drop(w);
    assert!(!dir.exists());
}
