#!/usr/bin/env bash
# sortbench.sh FILE RUNS KBENCH KEYS times kbench report -no-children
# -sort KEYS against perf report --stdio --sort KEYS --no-children -g none
# -n on the perf.data FILE, runs interleaved, both with --kallsyms
# /proc/kallsyms (with SORTBENCH_CHILDREN=1, -children against
# --children). It prints the medians (GNU time: wall, user+sys CPU, peak
# RSS), perf/kbench ratios, and whether the last runs' rows agree (in
# order, after whitespace). Needs perf and GNU time at /usr/bin/time.
set -euo pipefail
if [ $# -ne 4 ]; then
	echo "usage: $0 FILE RUNS KBENCH KEYS" >&2
	exit 2
fi
f=$1 runs=$2 kb=$3 keys=$4
children=no-children
if [ "${SORTBENCH_CHILDREN:-}" = 1 ]; then
	children=children
fi
ks=/proc/kallsyms
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
	/usr/bin/time -a -o "$out/times" -f "kbench %e %U %S %M" "$kb" report -progress never -$children -sort "$keys" -kallsyms $ks "$f" >"$out/kbench"
	/usr/bin/time -a -o "$out/times" -f "perf %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort "$keys" --$children -g none -n >"$out/perf" 2>/dev/null
done
awk -v keys="$keys" -f "$(dirname "$0")/medians.awk" -f <(cat <<'AWK'
END {
	printf "--sort %s median wall: kbench %.2f s, perf %.2f s = %.2fx; CPU %.2f s vs %.2f s = %.2fx; peak RSS %d KB vs %d KB; kbench CPU/wall %.2f\n", \
		keys, wall("kbench"), wall("perf"), wall("perf") / wall("kbench"), cpu("kbench"), cpu("perf"), cpu("perf") / cpu("kbench"), rss("kbench"), rss("perf"), cpu("kbench") / wall("kbench")
}
AWK
) "$out/times"
rows() { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | sed 's/^[[:space:]]*//; s/[[:space:]][[:space:]]*/ /g; s/ $//'; }
if cmp -s <(rows "$out/kbench") <(rows "$out/perf"); then
	echo "rows: every row equal to perf report"
else
	echo "rows: $(diff <(rows "$out/kbench") <(rows "$out/perf") | grep -c '^<') of $(rows "$out/perf" | wc -l) differ from perf report"
fi
