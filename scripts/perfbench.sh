#!/usr/bin/env bash
# perfbench.sh DIR RUNS KBENCH times kbench report against perf on
# DIR/big.data, runs interleaved: -format table against perf report
# --stdio --sort dso,sym --no-children -g none -n, and -format script
# against perf script -F ip,sym,dso, both with --kallsyms /proc/kallsyms;
# for a recording with callchains also -children against perf report
# --children.
# It prints every run (wall s, user s, sys s, peak RSS KB, from GNU
# time), the medians, perf/kbench ratios of wall time, CPU time and peak
# RSS, kbench's CPU/wall, and whether the outputs agree (script: every
# line; table: every row). Needs perf and GNU time at /usr/bin/time.
# PERFBENCH_VIEWS lists the views to time (default "table script
# children"): "script" alone for a large --call-graph dwarf recording,
# where perf takes minutes.
set -euo pipefail
. "$(dirname "$0")/callchains.sh"
if [ $# -ne 3 ]; then
	echo "usage: $0 DIR RUNS KBENCH" >&2
	exit 2
fi
dir=$1 runs=$2 kb=$3
f=$dir/big.data
ks=/proc/kallsyms
times=$dir/times
: >"$times"
chains=0
if has_callchains "$f"; then
	chains=1
fi
# warm reads the recording before each timed command: this machine's
# memory manager evicts pages it deems cold (a 56 MB recording once took
# kbench 3.4 s instead of 0.3 s, read from disk), and whichever tool ran
# first after that paid for it.
warm() { cat "$f" >/dev/null; }
views=" ${PERFBENCH_VIEWS:-table script children} "
want() { [[ $views == *" $1 "* ]]; }
for v in table script children; do
	want $v && rm -f "$dir/kbench.$v" "$dir/perf.$v" # no stale outputs to compare
done
for i in $(seq "$runs"); do
	if want table; then
		warm
		/usr/bin/time -a -o "$times" -f "kbench-table %e %U %S %M" "$kb" report -progress never -format table -kallsyms $ks "$f" >"$dir/kbench.table"
		warm
		/usr/bin/time -a -o "$times" -f "perf-table %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort dso,sym --no-children -g none -n >"$dir/perf.table" 2>/dev/null
	fi
	if want script; then
		warm
		/usr/bin/time -a -o "$times" -f "kbench-script %e %U %S %M" "$kb" report -progress never -format script -kallsyms $ks "$f" >"$dir/kbench.script"
		warm
		/usr/bin/time -a -o "$times" -f "perf-script %e %U %S %M" perf script -i "$f" --kallsyms $ks -F ip,sym,dso >"$dir/perf.script" 2>/dev/null
	fi
	if [ $chains = 1 ] && want children; then
		warm
		/usr/bin/time -a -o "$times" -f "kbench-children %e %U %S %M" "$kb" report -progress never -format table -children -kallsyms $ks "$f" >"$dir/kbench.children"
		warm
		/usr/bin/time -a -o "$times" -f "perf-children %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort dso,sym --children -g none -n >"$dir/perf.children" 2>/dev/null
	fi
done
cat "$times"
"$kb" report -progress never -format json -kallsyms $ks "$f" >"$dir/kbench.json"
samples=$(awk -F'[:,]' '/"samples"/ {gsub(/ /, "", $2); print $2; exit}' "$dir/kbench.json")
echo "recording: $f ($(du -hL "$f" | cut -f1), $samples samples), $runs runs"
awk -f "$(dirname "$0")/medians.awk" -f <(cat <<'AWK'
END {
	split("table script children", fmts, " ")
	for (x = 1; x <= 3; x++) {
		f = fmts[x]
		kb = "kbench-" f
		pf = "perf-" f
		if (!(kb in n)) continue
		printf "%-6s median wall: kbench %.2f s, perf %.2f s = %.1fx; CPU %.2f s vs %.2f s = %.1fx; peak RSS %d KB vs %d KB = %.2fx; kbench CPU/wall %.2f\n", \
			f, wall(kb), wall(pf), wall(pf) / wall(kb), cpu(kb), cpu(pf), cpu(pf) / cpu(kb), rss(kb), rss(pf), rss(pf) / rss(kb), cpu(kb) / wall(kb)
	}
}
AWK
) "$times"
if ! want script; then
	:
elif cmp -s <(sed 's/[[:space:]]*$//' "$dir/kbench.script") <(sed 's/[[:space:]]*$//' "$dir/perf.script"); then
	echo "script: every line equal to perf script"
else
	echo "script: DIFFERS from perf script (first difference below)"
	diff <(sed 's/[[:space:]]*$//' "$dir/kbench.script") <(sed 's/[[:space:]]*$//' "$dir/perf.script") | head -4
fi
rows() { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | sed 's/[[:space:]]*$//'; }
for t in table children; do
	want $t && [ -f "$dir/perf.$t" ] || continue
	if cmp -s <(rows "$dir/kbench.$t") <(rows "$dir/perf.$t"); then
		echo "$t: every row equal to perf report"
	else
		echo "$t: $(diff <(rows "$dir/kbench.$t") <(rows "$dir/perf.$t") | grep -c '^<') of $(rows "$dir/perf.$t" | wc -l) rows differ from perf report"
	fi
done
