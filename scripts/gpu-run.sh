#!/bin/sh
# gpu-run.sh: run every test binary that `make gpu` put beside this script on
# real CUDA, one log each, and print a line per binary with its PASS, FAIL
# and SKIP counts. Exit 1 if any binary failed.
#
#   .gpu/run.sh [LOGDIR] [go test flags...]     e.g. .gpu/run.sh "$OUT" -test.short
#
# The GPUs used are those CUDA_VISIBLE_DEVICES leaves visible: on a host with
# two or more, run it once with CUDA_VISIBLE_DEVICES=0 and once with all of
# them (CONTRIBUTING.md says when each is needed).
set -u
dir=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$dir/logs}
[ $# -gt 0 ] && shift
mkdir -p "$logs"
export CUDAPOOL_RUNTIME=${CUDAPOOL_RUNTIME:-cuda}
rc=0
printf '%-14s %6s %6s %6s %6s\n' binary PASS FAIL SKIP exit
for t in "$dir"/*.test; do
	name=$(basename "$t" .test)
	# Each binary runs in its own directory so that it finds testdata/ as
	# `go test` would give it.
	(cd "$dir" && "$t" -test.v "$@") >"$logs/$name.log" 2>&1
	code=$?
	p=$(grep -c -- '--- PASS' "$logs/$name.log")
	f=$(grep -c -- '--- FAIL' "$logs/$name.log")
	s=$(grep -c -- '--- SKIP' "$logs/$name.log")
	printf '%-14s %6s %6s %6s %6s\n' "$name" "$p" "$f" "$s" "$code"
	[ "$code" -ne 0 ] && rc=1
done
exit $rc
