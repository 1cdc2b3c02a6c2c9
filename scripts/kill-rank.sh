#!/bin/bash
# kill-rank.sh: examples/tp's killed-peer test. WORLD ranks (2 unless the
# WORLD variable says more, one GPU each) of a process-a-GPU
# tensor-parallel soak start; after SECONDS one is killed with SIGKILL; the
# script prints how long each other rank took to exit, which issue 33
# bounds at 10 s. Runs rotate which rank dies. Needs WORLD GPUs and the tp
# binary that `make gpu` put beside it. Arguments after LOGDIR go to every
# rank: -launch split soaks with an eager all-reduce a request, on blocking
# communicators (nccl.WithInlineLaunch), where the default captures it.
#
#   .gpu/kill-rank.sh [RUNS] [SECONDS] [LOGDIR] [TP FLAGS...]     e.g. .gpu/kill-rank.sh 12 9 "$OUT" -launch split
#   WORLD=4 .gpu/kill-rank.sh 4 9 "$OUT"
set -u
dir=$(cd "$(dirname "$0")" && pwd)
runs=${1:-4}
wait_s=${2:-9}
logs=${3:-$dir/logs}
shift $(($# < 3 ? $# : 3))
world=${WORLD:-2}
rc=0
for i in $(seq 1 "$runs"); do
	victim=$((i % world))
	port=$((29600 + i))
	out=$logs/kill-rank-$i
	mkdir -p "$out"
	pids=()
	for r in $(seq 0 $((world - 1))); do
		WORLD_SIZE=$world RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			timeout -s QUIT 60 "$dir/tp" -batches 1 -requests 100 -modes tp -soak 100000000 "$@" \
			>"$out/rank$r.out" 2>"$out/rank$r.err" &
		pids[r]=$!
	done
	sleep "$wait_s"
	# timeout's child is the rank: kill the rank itself, not timeout.
	kill -9 "$(pgrep -P "${pids[victim]}")"
	t0=$(date +%s%N)
	line="run $i: rank $victim killed after ${wait_s}s;"
	for r in $(seq 0 $((world - 1))); do
		[ "$r" -eq "$victim" ] && continue
		wait "${pids[r]}"
		code=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		verdict=ok
		# 124 or 131: timeout's QUIT ended a rank that did not end itself.
		if [ "$ms" -gt 10000 ] || [ "$code" -eq 0 ] || [ "$code" -eq 124 ] || [ "$code" -eq 131 ]; then
			verdict=FAIL
			rc=1
		fi
		line="$line rank $r exited $code after $ms ms: $verdict;"
	done
	wait
	echo "$line"
done
exit $rc
