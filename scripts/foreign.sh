#!/usr/bin/env bash
# foreign.sh DIR [KBENCH] compares kbench report with perf 6.1 on every
# recording in DIR (for example google/perf_data_converter's
# src/quipper/testdata, perf.data.* files: recordings from other machines
# and perf versions). For each file and each kernel-symbol setting it
# prints how many lines of perf script -F ip,sym,dso kbench -format script
# equals, and how many rows of perf report --stdio --sort dso,sym
# --no-children -g none -n the table equals, in order. Settings: an empty
# kallsyms file, this machine's /proc/kallsyms (another boot: relocation),
# and each tool's default; for a recording with callchains also the
# children table (perf report --children). Needs perf. perf 6.1 refuses
# recordings whose attrs are larger than its own (perf 6.3 on): compare
# copies made by go run ./scripts/cutattrs IN OUT instead.
set -uo pipefail
. "$(dirname "$0")/dirargs.sh"
# perf stops after FOREIGN_TIMEOUT seconds (default 300): perf 6.1 loops
# without end on some tables whose chains hold stack words.
perf() { timeout "${FOREIGN_TIMEOUT:-300}" perf "$@"; } # timeout runs the program, not this function
. "$(dirname "$0")/callchains.sh"
empty=$(mktemp)
# equal A B prints M/N: M non-blank lines of A that B has in the same
# order (what diff keeps), N those of A plus the lines B has beyond them,
# so that extra output shows too.
equal() {
	local a=$1 b=$2 d na
	d=$(diff <(printf '%s\n' "$a") <(printf '%s\n' "$b"))
	na=$(printf '%s' "$a" | grep -c .)
	echo "$((na - $(grep -c '^< .' <<<"$d")))/$((na + $(grep -c '^>' <<<"$d")))"
}
printf '%-48s %-16s %-16s %-16s %-16s %s\n' file script:empty script:proc script:default table:proc children:proc
for f in $(printf '%s\n' "$dir"/perf.data.* "$dir"/*.perf.data | sort -u); do
	[ -f "$f" ] || continue # a name matching both patterns is listed once
	case $f in *.pb_data | *.pb_text | *.buildids) continue ;; esac
	out=()
	for ks in "$empty" /proc/kallsyms ""; do
		popt=() kopt=()
		[ -n "$ks" ] && popt=(--kallsyms "$ks") kopt=(-kallsyms "$ks")
		a=$(perf script -F ip,sym,dso -i "$f" "${popt[@]}" 2>/dev/null)
		b=$("$kb" report -progress never -format script "${kopt[@]}" "$f" 2>/dev/null)
		out+=("$(equal "$a" "$b")")
	done
	a=$(perf report -i "$f" --kallsyms /proc/kallsyms --stdio --sort dso,sym --no-children -g none -n 2>/dev/null | rows)
	b=$("$kb" report -progress never -format table -kallsyms /proc/kallsyms "$f" 2>/dev/null | rows)
	out+=("$(equal "$a" "$b")")
	# The children table, for a recording with callchains.
	children=-
	if has_callchains "$f"; then
		a=$(perf report -i "$f" --kallsyms /proc/kallsyms --stdio --sort dso,sym --children -g none -n 2>/dev/null | rows)
		b=$("$kb" report -progress never -format table -children -kallsyms /proc/kallsyms "$f" 2>/dev/null | rows)
		children=$(equal "$a" "$b")
	fi
	printf '%-48s %-16s %-16s %-16s %-16s %s\n' "$(basename "$f")" "${out[@]}" "$children"
done
rm -f "$empty"
