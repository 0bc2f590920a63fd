#!/usr/bin/env bash
# perfviews.sh KBENCH FILE... compares KBENCH report's output with perf's
# on each recording FILE, six ways: perf script -F ip,sym,dso with and
# without -G, the flat and the children table by dso,sym, and the flat
# table by sym and by pid,sym (--kallsyms /proc/kallsyms). It prints one
# line per file, "VIEW=ok(N)" for N equal lines or rows and
# "VIEW=DIFF(n/N)" for n differing, and keeps both outputs of a
# difference beside FILE (FILE.VIEW.perf, FILE.VIEW.kbench). Tables are
# compared row by row, in order, comments out and blanks squeezed; script
# lines with trailing blanks cut. PERFVIEWS chooses the views (default
# "script scriptG table children sym pidsym"); more: symcomm (the flat
# table by sym,comm), commdsosym (by comm,dso,sym) and childrensym (the
# children table by sym), the tables by keys whose rows perf orders
# by its trees of hist entries (an event group's too). Needs perf (as
# root for most recordings). A perf view that runs longer than
# PERFVIEWS_TIMEOUT seconds (default 300) is stopped and reported as
# VIEW=PERF-TIMEOUT.
set -uo pipefail
if [ $# -lt 2 ]; then
	echo "usage: $0 KBENCH FILE..." >&2
	exit 2
fi
kb=$(realpath "$1")
shift
# rows normalizes a table's rows (no comments, single spaces).
rows() { grep -v '^#' | grep -v '^$' | awk '{$1 = $1; print}'; }
lines() { grep -v '^$' | sed 's/[ \t]*$//'; }
for f in "$@"; do
	res=""
	for view in ${PERFVIEWS:-script scriptG table children sym pidsym}; do
		norm=rows
		case $view in
		script) p=(script -F ip,sym,dso) k=(-format script) norm=lines ;;
		scriptG) p=(script -F ip,sym,dso -G) k=(-format script -G) norm=lines ;;
		table) p=(report --stdio --sort dso,sym --no-children -g none -n) k=(-no-children) ;;
		children) p=(report --stdio --sort dso,sym --children -g none -n) k=(-children) ;;
		sym) p=(report --stdio --sort sym --no-children -g none -n) k=(-no-children -sort sym) ;;
		pidsym) p=(report --stdio --sort pid,sym --no-children -g none -n) k=(-no-children -sort pid,sym) ;;
		symcomm) p=(report --stdio --sort sym,comm --no-children -g none -n) k=(-no-children -sort sym,comm) ;;
		commdsosym) p=(report --stdio --sort comm,dso,sym --no-children -g none -n) k=(-no-children -sort comm,dso,sym) ;;
		childrensym) p=(report --stdio --sort sym --children -g none -n) k=(-children -sort sym) ;;
		*)
			echo "$0: unknown view $view" >&2
			exit 2
			;;
		esac
		# perf 6.1 can loop without end on a children table whose
		# chains hold stack words: such a view is reported, not waited on.
		st=0
		timeout "${PERFVIEWS_TIMEOUT:-300}" perf "${p[@]}" -i "$f" --kallsyms /proc/kallsyms 2>/dev/null >"$f.$view.perfraw" || st=$?
		if [ $st -eq 124 ]; then
			res="$res $view=PERF-TIMEOUT"
			rm -f "$f.$view.perfraw"
			continue
		fi
		$norm <"$f.$view.perfraw" >"$f.$view.perf"
		rm -f "$f.$view.perfraw"
		"$kb" report -progress never -kallsyms /proc/kallsyms "${k[@]}" "$f" 2>/dev/null | $norm >"$f.$view.kbench"
		n=$(wc -l <"$f.$view.perf")
		if cmp -s "$f.$view.perf" "$f.$view.kbench"; then
			res="$res $view=ok($n)"
			rm "$f.$view.perf" "$f.$view.kbench"
		else
			res="$res $view=DIFF($(diff "$f.$view.perf" "$f.$view.kbench" | grep -c '^<')/$n)"
		fi
	done
	echo "$f:$res"
done
