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
set -euo pipefail
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
if perf report -i "$f" --header-only 2>/dev/null | grep -q 'sample_type = [A-Z|]*CALLCHAIN'; then
	chains=1
fi
for i in $(seq "$runs"); do
	/usr/bin/time -a -o "$times" -f "kbench-table %e %U %S %M" "$kb" report -progress never -format table -kallsyms $ks "$f" >"$dir/kbench.table"
	/usr/bin/time -a -o "$times" -f "perf-table %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort dso,sym --no-children -g none -n >"$dir/perf.table" 2>/dev/null
	/usr/bin/time -a -o "$times" -f "kbench-script %e %U %S %M" "$kb" report -progress never -format script -kallsyms $ks "$f" >"$dir/kbench.script"
	/usr/bin/time -a -o "$times" -f "perf-script %e %U %S %M" perf script -i "$f" --kallsyms $ks -F ip,sym,dso >"$dir/perf.script" 2>/dev/null
	if [ $chains = 1 ]; then
		/usr/bin/time -a -o "$times" -f "kbench-children %e %U %S %M" "$kb" report -progress never -format table -children -kallsyms $ks "$f" >"$dir/kbench.children"
		/usr/bin/time -a -o "$times" -f "perf-children %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort dso,sym --children -g none -n >"$dir/perf.children" 2>/dev/null
	fi
done
cat "$times"
"$kb" report -progress never -format json -kallsyms $ks "$f" >"$dir/kbench.json"
samples=$(awk -F'[:,]' '/"samples"/ {gsub(/ /, "", $2); print $2; exit}' "$dir/kbench.json")
echo "recording: $f ($(du -hL "$f" | cut -f1), $samples samples), $runs runs"
awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1; n[k]++; w[k, n[k]] = $2; c[k, n[k]] = $3 + $4; m[k, n[k]] = $5 }
END {
	split("table script children", fmts, " ")
	for (x = 1; x <= 3; x++) {
		f = fmts[x]
		if (!(("kbench-" f) in n)) continue
		for (t = 1; t <= 2; t++) {
			k = (t == 1 ? "kbench-" : "perf-") f
			for (i = 1; i <= n[k]; i++) { ww[i] = w[k, i]; cc[i] = c[k, i]; mm[i] = m[k, i] }
			W[t] = median(ww, n[k]); C[t] = median(cc, n[k]); M[t] = median(mm, n[k])
		}
		printf "%-6s median wall: kbench %.2f s, perf %.2f s = %.1fx; CPU %.2f s vs %.2f s = %.1fx; peak RSS %d KB vs %d KB = %.2fx; kbench CPU/wall %.2f\n", \
			f, W[1], W[2], W[2] / W[1], C[1], C[2], C[2] / C[1], M[1], M[2], M[2] / M[1], C[1] / W[1]
	}
}' "$times"
if cmp -s <(sed 's/[[:space:]]*$//' "$dir/kbench.script") <(sed 's/[[:space:]]*$//' "$dir/perf.script"); then
	echo "script: every line equal to perf script"
else
	echo "script: DIFFERS from perf script (first difference below)"
	diff <(sed 's/[[:space:]]*$//' "$dir/kbench.script") <(sed 's/[[:space:]]*$//' "$dir/perf.script") | head -4
fi
rows() { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | sed 's/[[:space:]]*$//'; }
for t in table children; do
	[ -f "$dir/perf.$t" ] || continue
	if cmp -s <(rows "$dir/kbench.$t") <(rows "$dir/perf.$t"); then
		echo "$t: every row equal to perf report"
	else
		echo "$t: $(diff <(rows "$dir/kbench.$t") <(rows "$dir/perf.$t") | grep -c '^<') of $(rows "$dir/perf.$t" | wc -l) rows differ from perf report"
	fi
done
