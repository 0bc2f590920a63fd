#!/usr/bin/env bash
# sortbench.sh FILE RUNS KBENCH KEYS times kbench report -no-children
# -sort KEYS against perf report --stdio --sort KEYS --no-children -g none
# -n on the perf.data FILE, runs interleaved, both with --kallsyms
# /proc/kallsyms. It prints the medians (GNU time: wall, user+sys CPU,
# peak RSS), perf/kbench ratios, and whether the last runs' rows agree
# (in order, after whitespace). Needs perf and GNU time at /usr/bin/time.
set -euo pipefail
if [ $# -ne 4 ]; then
	echo "usage: $0 FILE RUNS KBENCH KEYS" >&2
	exit 2
fi
f=$1 runs=$2 kb=$3 keys=$4
ks=/proc/kallsyms
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
	/usr/bin/time -a -o "$out/times" -f "kbench %e %U %S %M" "$kb" report -progress never -no-children -sort "$keys" -kallsyms $ks "$f" >"$out/kbench"
	/usr/bin/time -a -o "$out/times" -f "perf %e %U %S %M" perf report -i "$f" --kallsyms $ks --stdio --sort "$keys" --no-children -g none -n >"$out/perf" 2>/dev/null
done
awk -v keys="$keys" '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1; n[k]++; w[k, n[k]] = $2; c[k, n[k]] = $3 + $4; m[k, n[k]] = $5 }
END {
	split("kbench perf", ks, " ")
	for (t = 1; t <= 2; t++) {
		k = ks[t]
		for (i = 1; i <= n[k]; i++) { ww[i] = w[k, i]; cc[i] = c[k, i]; mm[i] = m[k, i] }
		W[t] = median(ww, n[k]); C[t] = median(cc, n[k]); M[t] = median(mm, n[k])
	}
	printf "--sort %s median wall: kbench %.2f s, perf %.2f s = %.2fx; CPU %.2f s vs %.2f s = %.2fx; peak RSS %d KB vs %d KB; kbench CPU/wall %.2f\n", \
		keys, W[1], W[2], W[2] / W[1], C[1], C[2], C[2] / C[1], M[1], M[2], C[1] / W[1]
}' "$out/times"
rows() { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | sed 's/^[[:space:]]*//; s/[[:space:]][[:space:]]*/ /g; s/ $//'; }
if cmp -s <(rows "$out/kbench") <(rows "$out/perf"); then
	echo "rows: every row equal to perf report"
else
	echo "rows: $(diff <(rows "$out/kbench") <(rows "$out/perf") | grep -c '^<') of $(rows "$out/perf" | wc -l) differ from perf report"
fi
