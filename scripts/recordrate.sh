#!/usr/bin/env bash
# recordrate.sh KBENCH [SECONDS] [RUNS] records every CPU at the highest
# rate the kernel allows (kernel.perf_event_max_sample_rate) with perf
# record -e cpu-clock and with kbench record, runs interleaved, and prints
# per run and as medians: samples written, samples lost (both counted by
# perf report from the file), and the recorder's CPU time (user + system,
# GNU time). A busy loop runs on every CPU meanwhile: cpu-clock does not
# tick on an idle CPU, so without it the recorder's own CPU use would
# decide how many samples there are. Needs root (or perf_event_paranoid
# <= 0), perf and /usr/bin/time.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	echo "usage: $0 KBENCH [SECONDS] [RUNS]" >&2
	exit 2
fi
kb=$1 secs=${2:-3} runs=${3:-3}
hz=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
dir=$(mktemp -d)
export HOME=$dir # no build-id cache writes into the caller's home
count() { # count FILE: "samples lost" as perf report counts them
	perf report -i "$1" --stdio --sort dso -g none 2>&1 |
		awk '/^# Samples: / { s = $3 } /^# Total Lost Samples: / { l = $5 } END {
			if (s ~ /K$/) s = substr(s, 1, length(s) - 1) * 1000; else if (s ~ /M$/) s = substr(s, 1, length(s) - 1) * 1000000
			printf "%d %d\n", s, l }'
}
busy=()
for _ in $(seq "$(nproc)"); do
	sh -c 'while :; do :; done' &
	busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
echo "rate $hz Hz on every CPU ($(nproc) CPUs, each running a busy loop), $secs s per run, $runs runs"
printf '%-8s %-4s %12s %10s %8s\n' tool run samples lost cpu_s
for i in $(seq "$runs"); do
	/usr/bin/time -o "$dir/t" -f "%U %S" perf record -q -e cpu-clock -F "$hz" -a -o "$dir/perf.data" -- sleep "$secs" >/dev/null 2>&1
	read -r s l < <(count "$dir/perf.data")
	printf '%-8s %-4s %12d %10d %8.2f\n' perf "$i" "$s" "$l" "$(awk '{print $1 + $2}' "$dir/t")"
	/usr/bin/time -o "$dir/t" -f "%U %S" "$kb" record -F "$hz" -a -d "$secs" -o "$dir/kbench.data" >/dev/null 2>&1
	read -r s l < <(count "$dir/kbench.data")
	printf '%-8s %-4s %12d %10d %8.2f\n' kbench "$i" "$s" "$l" "$(awk '{print $1 + $2}' "$dir/t")"
done | tee "$dir/runs"
awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1; n[k]++; s[k, n[k]] = $3; l[k, n[k]] = $4; c[k, n[k]] = $5 }
END {
	for (t = 1; t <= 2; t++) {
		k = t == 1 ? "perf" : "kbench"
		for (i = 1; i <= n[k]; i++) { ss[i] = s[k, i]; ll[i] = l[k, i]; cc[i] = c[k, i] }
		S[t] = median(ss, n[k]); L[t] = median(ll, n[k]); C[t] = median(cc, n[k])
	}
	printf "medians: samples perf %d, kbench %d (kbench/perf %.2f); lost perf %d, kbench %d; CPU perf %.2f s, kbench %.2f s (kbench/perf %.2f)\n", \
		S[1], S[2], S[2] / S[1], L[1], L[2], C[1], C[2], C[2] / C[1]
}' "$dir/runs"
