#!/bin/sh
# The workload the fixtures in this directory recorded, on a 2-CPU machine: a CPU burner, a
# pipe ping-pong between two shells (named through /proc/PID/comm, one name holding a space)
# and a small hackbench (rt-tests) run, at once.
#   workload.sh [BURNER_LOOPS [PING_PONG_ROUNDS [HACKBENCH_LOOPS]]]
# Defaults (about 0.55 s): 700000 150 30, as recorded for trace-cmd.
set -e
burn=${1:-700000}
rounds=${2:-150}
loops=${3:-30}
dir=$(mktemp -d)
mkfifo "$dir/a" "$dir/b"
sh -c 'printf "cpu burner" > /proc/self/comm; i=0; while [ $i -lt $1 ]; do i=$((i+1)); done' burner "$burn" &
burner=$!
sh -c 'printf "pong" > /proc/self/comm; exec 3<"$1/a" 4>"$1/b"; while read x <&3; do echo "$x" >&4; done' pong "$dir" &
pong=$!
sh -c 'printf "ping ping" > /proc/self/comm; exec 3>"$1/a" 4<"$1/b"; i=0; while [ $i -lt $2 ]; do echo $i >&3; read x <&4; i=$((i+1)); done' ping "$dir" "$rounds" &
ping=$!
hackbench -p -g 1 -f 2 -l "$loops" > /dev/null
wait $ping $pong $burner
rm -r "$dir"
