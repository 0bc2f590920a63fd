#!/usr/bin/env bash
# scriptbench.sh FILE RUNS KBENCH... times perf script against kbench
# builds on FILE, the script view only (large --call-graph dwarf
# recordings, where perf script takes minutes and perfbench.sh's other
# views add nothing): kbench report -format script against perf script
# -F ip,sym,dso, both with --kallsyms /proc/kallsyms and writing to
# /dev/null, each build then perf in turn, RUNS times, the recording read
# before each command. It prints each one's medians (GNU time: wall,
# user+sys CPU, peak RSS) and perf/kbench for each build. Needs perf and
# GNU time at /usr/bin/time.
set -euo pipefail
if [ $# -lt 3 ]; then
	echo "usage: $0 FILE RUNS KBENCH..." >&2
	exit 2
fi
f=$1 runs=$2
shift 2
times=$(mktemp)
trap 'rm -f "$times"' EXIT
for _ in $(seq "$runs"); do
	for b in "$@"; do
		cat "$f" >/dev/null
		/usr/bin/time -a -o "$times" -f "$b %e %U %S %M" "$b" report -progress never -format script -kallsyms /proc/kallsyms "$f" >/dev/null 2>&1
	done
	cat "$f" >/dev/null
	/usr/bin/time -a -o "$times" -f "perf %e %U %S %M" perf script -i "$f" --kallsyms /proc/kallsyms -F ip,sym,dso >/dev/null 2>&1
done
awk -f "$(dirname "$0")/medians.awk" -f <(cat <<'AWK'
END {
	for (x = 1; x <= nnames; x++) {
		k = names[x]
		printf "%s: wall %.3f s, CPU %.3f s, peak RSS %d KB (medians of %d)", k, wall(k), cpu(k), rss(k), n[k]
		if (k != "perf" && ("perf" in n)) printf "; perf/kbench %.1fx", wall("perf") / wall(k)
		printf "\n"
	}
}
AWK
) "$times"
