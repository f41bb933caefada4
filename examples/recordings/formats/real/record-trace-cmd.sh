#!/bin/sh
# Records workload.sh with the kernel's sched events and writes trace.dat with
# `trace-cmd extract`, then the three `trace-cmd report` forms. Run as root from an empty
# directory: sh record-trace-cmd.sh /path/to/workload.sh
#
# `trace-cmd record` and `trace-cmd start` could not be used on the recording host: both
# died (SIGSEGV) after the kernel refused access to the function tracer's set_ftrace_pid
# (a kernel without function-tracer permissions), so the events are enabled through tracefs
# directly (what `trace-cmd start -e` writes) and trace-cmd reads the ring buffer.
set -e
w=${1:?workload script}
T=/sys/kernel/tracing
echo 0 > $T/tracing_on
echo > $T/trace
for e in sched_switch sched_wakeup sched_wakeup_new sched_waking sched_migrate_task \
    sched_process_fork sched_process_exit; do
    echo "sched:$e" >> $T/set_event
done
echo 1 > $T/tracing_on
"$w"
echo 0 > $T/tracing_on
grep -H overrun $T/per_cpu/cpu*/stats
trace-cmd extract -o trace.dat
trace-cmd report -i trace.dat > trace-cmd-report.txt
trace-cmd report -N -i trace.dat > trace-cmd-report-N.txt
trace-cmd report -R -i trace.dat > trace-cmd-report-R.txt
