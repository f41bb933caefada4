#!/bin/sh
# Records a shorter run of workload.sh with perf on every CPU and writes the two
# `perf script` forms. Run as root from an empty directory:
#   sh record-perf.sh /path/to/workload.sh
# The call chains are printed at most 6 frames deep (--max-stack 6) to keep the fixture
# near 300 KB: perf's full chains (up to 127 frames) made it 650 KB.
set -e
w=${1:?workload script}
perf record -a -g -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new \
    -e sched:sched_migrate_task -e sched:sched_process_exit -o perf.data -- "$w" 250000 40 10
perf script -i perf.data --max-stack 6 > perf-script-callchain.txt
perf script -i perf.data -G > perf-script.txt
