#!/usr/bin/env bash
# bigrecord.sh OUTDIR SECONDS [-g] records OUTDIR/big.data: a system-wide
# perf record at 25 kHz (with callchains when -g is given, as perf record
# -g) while two CPUs are kept busy for
# SECONDS (one shell lists /usr over and over, one counts), for timing
# kbench report against perf report on a large recording (make perf-bench).
# At about 40k samples a second on two CPUs, 8 seconds give >= 300k
# samples. Needs root (system-wide recording) and perf.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ] || ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -eq 0 ] || { [ $# -eq 3 ] && [ "$3" != -g ]; }; then
	echo "usage: $0 OUTDIR SECONDS [-g]" >&2
	exit 2
fi
out=$1
secs=$2
callchains=()
[ $# -eq 3 ] && callchains=(-g)
command -v perf >/dev/null || { echo "$0: perf is not installed" >&2; exit 1; }
mkdir -p "$out"

# The workload: two loops that stop by themselves at the deadline, so
# nothing is left running if perf is interrupted.
workload='
end=$(( $(date +%s) + $1 ))
( while [ "$(date +%s)" -lt "$end" ]; do ls -R /usr >/dev/null 2>&1; done ) &
( while [ "$(date +%s)" -lt "$end" ]; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done ) &
wait
'
perf record -F "${PERF_FREQ:-25000}" -a "${callchains[@]}" -m 1024 -o "$out/big.data" -- sh -c "$workload" sh "$secs"
ls -l "$out/big.data"
