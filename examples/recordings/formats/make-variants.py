#!/usr/bin/env python3
"""Rewrites ../vm-busybox.trace (tracefs text) in the other formats the importer reads.

Run from this directory: python3 make-variants.py. Each output holds the same events as the
recording, printed the way the named tool prints them (see README.md).
"""
import re

LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\(\s*(?P<tgid>[-\d]+)\)\s+\[(?P<cpu>\d+)\]\s+"
    r"(?P<flags>\S+)\s+(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s+(?P<fields>.*)$"
)
# The kernel's TASK_REPORT bits (include/linux/sched.h, since 4.14), and TASK_REPORT_MAX
# (256) for a preempted task.
STATE_NUM = {"R": 0, "R+": 256, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128}
FRAMES = {
    "sched_switch": ["__schedule+0x2f1", "schedule+0x4e", "do_nanosleep+0x8a", "hrtimer_nanosleep+0xd8"],
    "sched_wakeup": ["ttwu_do_activate+0x6d", "try_to_wake_up+0x22a", "hrtimer_wakeup+0x1e"],
    "sched_wakeup_new": ["wake_up_new_task+0x1b4", "kernel_clone+0xbd", "__do_sys_clone+0x60"],
    "sched_waking": ["try_to_wake_up+0x1c5", "wake_up_process+0x15"],
}


def kv(fields):
    out = {}
    for m in re.finditer(r"(\w+)=(.*?)(?=\s+\w+=|\s+==>|$)", fields):
        out[m.group(1)] = m.group(2)
    return out


def plugin(event, f):
    """trace-cmd's sched plugin (libtraceevent plugin_sched_switch.c) forms."""
    if event == "sched_switch":
        return "%s:%s [%s] %s ==> %s:%s [%s]" % (
            f["prev_comm"], f["prev_pid"], f["prev_prio"], f["prev_state"],
            f["next_comm"], f["next_pid"], f["next_prio"])
    if event == "sched_wakeup":
        return "%s:%s [%s] success=1 CPU:%03d" % (f["comm"], f["pid"], f["prio"], int(f["target_cpu"]))
    if event == "sched_wakeup_new":
        return "%s:%s [%s] CPU:%03d" % (f["comm"], f["pid"], f["prio"], int(f["target_cpu"]))
    return None


def main():
    events = []
    for raw in open("../vm-busybox.trace"):
        m = LINE.match(raw.rstrip("\n"))
        if m:
            events.append(m.groupdict())
    cpus = 8
    cur, old, rawf, perf = [], [], [], []
    cur += ["version = 7", "cpus=%d" % cpus, "CPU 1 is empty"]
    old += ["version = 6", "cpus=%d" % cpus]
    rawf += ["version = 7", "cpus=%d" % cpus]
    for e in events:
        f = kv(e["fields"])
        cpu, ts, ev = int(e["cpu"]), e["ts"], e["event"]
        head = "%16s-%-7s [%03d] %s: %-20s " % (e["comm"], e["pid"], cpu, ts, ev + ":")
        body = plugin(ev, f) or e["fields"]
        cur.append(head + body)
        oldf = e["fields"]
        if ev == "sched_wakeup":
            oldf = oldf.replace(" target_cpu=", " success=1 target_cpu=")
        old.append(head + oldf)
        if ev == "sched_switch":
            r = "prev_comm=%s prev_pid=%s prev_prio=%s prev_state=%d next_comm=%s next_pid=%s next_prio=%s" % (
                f["prev_comm"], f["prev_pid"], f["prev_prio"], STATE_NUM[f["prev_state"]],
                f["next_comm"], f["next_pid"], f["next_prio"])
        else:
            r = " ".join("%s=%s" % (k, v) for k, v in f.items())
        rawf.append(head + r)
        comm = "swapper" if e["comm"] == "<idle>" else e["comm"]
        perf.append("%16s %6s [%03d] %s: %30s %s" % (comm, e["pid"], cpu, ts, "sched:" + ev + ":", body))
        for frame in FRAMES.get(ev, ["do_exit+0x2f5"]):
            perf.append("\t    ffffffff81%06x %s ([kernel.kallsyms])" % (sum(map(ord, frame)) * 2654435761 % 0xFFFFFF, frame))
        perf.append("")
    for name, lines in [("trace-cmd-report.txt", cur), ("trace-cmd-report-old.txt", old),
                        ("trace-cmd-report-raw.txt", rawf), ("perf-script-callchain.txt", perf)]:
        with open(name, "w") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
