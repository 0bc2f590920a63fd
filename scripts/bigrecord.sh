#!/usr/bin/env bash
# bigrecord.sh OUTDIR SECONDS [-g] records OUTDIR/big.data: a system-wide
# perf record at 25 kHz (with callchains when -g is given, as perf record
# -g) while two CPUs are kept busy for
# SECONDS (one shell lists /usr over and over, one counts), for timing
# kbench report against perf report on a large recording (make perf-bench).
# At about 40k samples a second on two CPUs, 8 seconds give >= 300k
# samples. Needs root (system-wide recording) and perf.
#
# BIGRECORD_WORKLOAD=compile keeps the two CPUs compiling instead (gcc
# -O2 and -O1 of a generated C file, and a short python3 loop, over and
# over: needs gcc and python3). Debian's cc1 is built without frame
# pointers, so that a -g recording's chains are full of addresses
# outside every map: a children table of hundreds of thousands of rows,
# the shape where kbench's lead over perf is least.
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
case ${BIGRECORD_WORKLOAD:-ls} in
ls) ;;
compile)
	for tool in gcc python3; do
		command -v $tool >/dev/null || { echo "$0: BIGRECORD_WORKLOAD=compile needs $tool" >&2; exit 1; }
	done
	# 400 small functions: about 2 s of cc1 -O2 here.
	src=$out/compile.c
	for i in $(seq 0 399); do
		printf 'int f%d(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) { s += a[i] * %d ^ (s >> 3); if (s > %d) s -= a[(i * 7) %% n]; } return s; }\n' "$i" $((i % 97 + 1)) $((i * 37 % 9900 + 100))
	done >"$src"
	workload='
end=$(( $(date +%s) + $1 ))
( while [ "$(date +%s)" -lt "$end" ]; do gcc -O2 -c -o /dev/null "$2"; done ) &
( while [ "$(date +%s)" -lt "$end" ]; do gcc -O1 -c -o /dev/null "$2"; python3 -c "sum(i * i for i in range(200000))"; done ) &
wait
'
	;;
*)
	echo "$0: BIGRECORD_WORKLOAD is ls or compile, not $BIGRECORD_WORKLOAD" >&2
	exit 2
	;;
esac
perf record -F "${PERF_FREQ:-25000}" -a "${callchains[@]}" -m 1024 -o "$out/big.data" -- sh -c "$workload" sh "$secs" "${src:-}"
ls -l "$out/big.data"
