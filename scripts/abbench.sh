#!/usr/bin/env bash
# abbench.sh RUNS "ARGS" BIN... runs each kbench build BIN with ARGS
# (e.g. "report -format script FILE"), the builds alternating, RUNS times,
# and prints each build's medians (wall time by the nanosecond clock, so
# that small recordings' tens of milliseconds show; GNU time's user+sys
# CPU and peak RSS): how a change is measured against the build before it
# on a shared, drifting machine. Outputs go to /dev/null. Needs GNU time
# at /usr/bin/time.
set -euo pipefail
if [ $# -lt 3 ]; then
	echo "usage: $0 RUNS \"ARGS\" BIN..." >&2
	exit 2
fi
runs=$1 args=$2
shift 2
times=$(mktemp) run=$(mktemp)
trap 'rm -f "$times" "$run"' EXIT
for _ in $(seq "$runs"); do
	for b in "$@"; do
		start=$(date +%s%N)
		# shellcheck disable=SC2086 # ARGS are words
		/usr/bin/time -o "$run" -f "%U %S %M" "$b" $args >/dev/null 2>&1
		end=$(date +%s%N)
		# GNU time's wall clock counts hundredths of a second.
		printf '%s %d.%09d %s\n' "$b" $(((end - start) / 1000000000)) $(((end - start) % 1000000000)) "$(tail -n 1 "$run")" >>"$times"
	done
done
awk -f "$(dirname "$0")/medians.awk" -f <(cat <<'AWK'
END {
	for (x = 1; x <= nnames; x++) {
		k = names[x]
		printf "%s: wall %.4f s, CPU %.3f s, peak RSS %d KB (medians of %d)\n", k, wall(k), cpu(k), rss(k), n[k]
	}
}
AWK
) "$times"
