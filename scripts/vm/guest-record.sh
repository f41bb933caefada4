# Runs inside the VM (see scripts/vm-record.sh): records the scheduler's events in tracefs
# while a small workload runs, and prints the trace between markers on the host's stdout.
# The workload is busybox only: a periodic task (a short burst every 10 ms, 30 times) and two
# CPU-bound workers started 50 ms apart.
T=/sys/kernel/tracing
[ -d $T/events/sched ] || { echo "record: no tracefs sched events"; exit 1; }
echo 0 > $T/tracing_on
echo > $T/trace
echo 4096 > $T/buffer_size_kb
echo 1 > $T/options/record-tgid
for e in sched_switch sched_wakeup sched_wakeup_new sched_waking sched_migrate_task sched_process_exit; do
  echo 1 > $T/events/sched/$e/enable
done
echo 1 > $T/tracing_on
(
  i=0
  while [ $i -lt 30 ]; do
    j=0; while [ $j -lt 300 ]; do j=$((j + 1)); done
    usleep 10000
    i=$((i + 1))
  done
) &
( k=0; while [ $k -lt 6000 ]; do k=$((k + 1)); done ) &
usleep 50000
( k=0; while [ $k -lt 6000 ]; do k=$((k + 1)); done ) &
wait
echo 0 > $T/tracing_on
echo "=== record: trace begins ==="
cat $T/trace
echo "=== record: trace ends ==="
