#!/usr/bin/env bash
# rssbench.sh DIR [KBENCH] compares the peak RSS of
# kbench report with perf report's on every recording in DIR, runs
# interleaved, medians of 3: -format table against perf report --stdio
# --sort dso,sym --no-children -g none -n, each with its default kernel
# symbols and with --kallsyms /proc/kallsyms. It prints one line per
# file and setting, "over" where kbench's peak RSS is above perf's, and
# the count of those. FORMAT=script compares -format script with perf
# script -F ip,sym,dso instead, FORMAT=children -children with perf
# report --children. Needs perf and GNU time at /usr/bin/time.
set -uo pipefail
. "$(dirname "$0")/dirargs.sh"
format=${FORMAT:-table}
kargs=(-format table) pcmd=(perf report --stdio --sort dso,sym --no-children -g none -n)
case $format in
table) ;;
script) kargs=(-format script) pcmd=(perf script -F ip,sym,dso) ;;
children) kargs=(-format table -children) pcmd=(perf report --stdio --sort dso,sym --children -g none -n) ;;
*)
	echo "FORMAT is table, script or children" >&2
	exit 2
	;;
esac
times=$(mktemp)
trap 'rm -f "$times"' EXIT
over=0 total=0
printf '%-56s %-8s %12s %12s %7s\n' file kallsyms "kbench KB" "perf KB" perf/kb
for f in $(printf '%s\n' "$dir"/perf.data* "$dir"/*.data | sort -u); do
	[ -f "$f" ] || continue
	case $f in *.pb_data | *.pb_text | *.buildids) continue ;; esac
	perf report -i "$f" --header-only >/dev/null 2>&1 || continue # perf cannot read it
	for ks in default /proc/kallsyms; do
		popt=() kopt=()
		[ "$ks" != default ] && popt=(--kallsyms "$ks") kopt=(-kallsyms "$ks")
		: >"$times"
		for _ in 1 2 3; do
			/usr/bin/time -a -o "$times" -f "kbench %e %U %S %M" "$kb" report -progress never "${kargs[@]}" "${kopt[@]}" "$f" >/dev/null 2>&1
			/usr/bin/time -a -o "$times" -f "perf %e %U %S %M" "${pcmd[@]}" -i "$f" "${popt[@]}" >/dev/null 2>&1
		done
		line=$(awk -f "$(dirname "$0")/medians.awk" -f <(echo 'END { printf "%12d %12d %7.2f %s", rss("kbench"), rss("perf"), rss("perf") / rss("kbench"), (rss("kbench") > rss("perf") ? "over" : "") }') "$times")
		printf '%-56s %-8s %s\n' "$(basename "$f")" "${ks##*/}" "$line"
		total=$((total + 1))
		case $line in *over) over=$((over + 1)) ;; esac
	done
done
echo "$format: kbench's peak RSS above perf's: $over of $total"
