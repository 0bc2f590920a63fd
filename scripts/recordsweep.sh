#!/usr/bin/env bash
# recordsweep.sh KBENCH [DIR [SETS]] records a shell loop of short
# processes with each perf record option set below (or each line of the
# file SETS) and compares KBENCH's output with perf's six ways
# (scripts/perfviews.sh: script, script -G, the flat table, the children
# table, --sort sym and --sort pid,sym). It prints one line per option
# set, "ok(N)" for N equal lines or rows and "DIFF(n/N)" for n differing,
# and keeps both outputs of a difference in DIR (default: a new temporary
# directory). Needs perf
# and permission to record (root, or perf_event_paranoid <= 1 for what
# does not use -a or tracepoints).
set -uo pipefail
if [ $# -lt 1 ]; then
	echo "usage: $0 KBENCH [DIR [SETS]]" >&2
	exit 2
fi
kb=$(realpath "$1")
views=$(realpath "$(dirname "$0")/perfviews.sh")
dir=${2:-$(mktemp -d)}
setsfile=${3:+$(realpath "$3")}
mkdir -p "$dir" && cd "$dir" || exit 1
sets=$(
	if [ -z "$setsfile" ]; then
		cat <<'EOF'
-e cpu-clock -F 4999 -g
-e task-clock -c 100000 --call-graph dwarf,1024
-e cpu-clock,task-clock -F 2999 -g
-e {cpu-clock,task-clock}:S -F 1999
-e cpu-clock -F 3999 -a -g --sample-cpu
-e sched:sched_switch -a -g
-e page-faults -c 1 -g
-e cpu-clock -F 999 --call-graph dwarf -a --threads
-e cpu-clock -F 4999 -g -z
-e cpu-clock -F 2999 -g -s
-e cpu-clock -F 4999 --call-graph fp,16
-e cpu-clock -F 3999 -g -d --data-page-size --code-page-size
-e cpu-clock -F 3999 --call-graph dwarf --user-regs=ip,sp,bp
-e cpu-clock/period=50000/ -g --sample-identifier
EOF
	else
		cat "$setsfile"
	fi
)
work='for i in $(seq 150); do ls / >/dev/null; cat /proc/self/maps >/dev/null; done'
i=0
while IFS= read -r opts; do
	[ -z "$opts" ] && continue
	i=$((i + 1))
	f=r$i.data
	rm -rf "$f"
	# shellcheck disable=SC2086 # the option set is split on purpose
	if ! perf record -q -o "$f" $opts -- sh -c "$work" >/dev/null 2>"r$i.err"; then
		echo "[$i] $opts: perf record failed: $(tail -1 "r$i.err")"
		continue
	fi
	res=$("$views" "$kb" "$f")
	res=${res#"$f:"}
	echo "[$i] $opts:$res"
done <<<"$sets"
echo "outputs that differ are in $dir"
