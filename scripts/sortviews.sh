#!/usr/bin/env bash
# sortviews.sh DIR [KBENCH] compares kbench report's tables by sort keys
# with perf report's on every recording in DIR (perf.data.* and
# *.perf.data, as foreign.sh): --sort comm,dso,sym, pid,sym, dso, sym and
# cpu,dso, and for a recording with callchains the --children table, all
# with --kallsyms /proc/kallsyms. It prints one line per view whose rows
# differ from perf's (in order, after whitespace), then "sortviews: N
# views of M recordings compared, D differ". SORTVIEWS, when set, lists
# the views instead (space separated; "children" is the children table,
# "children:KEYS" the children table by KEYS), e.g. SORTVIEWS="comm,sym
# sym,pid cpu,sym children:comm,dso,sym". Needs perf.
set -uo pipefail
. "$(dirname "$0")/dirargs.sh"
. "$(dirname "$0")/callchains.sh"
views=0 files=0 differ=0
for f in $(printf '%s\n' "$dir"/perf.data.* "$dir"/*.perf.data | sort -u); do
	[ -f "$f" ] || continue
	case $f in *.pb_data | *.pb_text | *.buildids) continue ;; esac
	files=$((files + 1))
	chains=0
	has_callchains "$f" && chains=1
	for view in ${SORTVIEWS:-children comm,dso,sym pid,sym dso sym cpu,dso}; do
		if [ "$view" = children ]; then
			[ $chains = 1 ] || continue
			a=$(perf report -i "$f" --kallsyms /proc/kallsyms --stdio --sort dso,sym --children -g none -n 2>/dev/null | rows)
			b=$("$kb" report -progress never -children -kallsyms /proc/kallsyms "$f" 2>/dev/null | rows)
		elif [ "${view#children:}" != "$view" ]; then
			[ $chains = 1 ] || continue
			a=$(perf report -i "$f" --kallsyms /proc/kallsyms --stdio --sort "${view#children:}" --children -g none -n 2>/dev/null | rows)
			b=$("$kb" report -progress never -children -sort "${view#children:}" -kallsyms /proc/kallsyms "$f" 2>/dev/null | rows)
		else
			a=$(perf report -i "$f" --kallsyms /proc/kallsyms --stdio --sort "$view" --no-children -g none -n 2>/dev/null | rows)
			b=$("$kb" report -progress never -no-children -sort "$view" -kallsyms /proc/kallsyms "$f" 2>/dev/null | rows)
		fi
		views=$((views + 1))
		n=$(printf '%s' "$a" | grep -c .)
		d=$(diff <(printf '%s\n' "$a") <(printf '%s\n' "$b") | grep -c '^<')
		if [ "$d" != 0 ]; then
			differ=$((differ + 1))
			echo "$(basename "$f") $view: $d of $n rows differ"
		fi
	done
done
echo "sortviews: $views views of $files recordings compared, $differ differ"
