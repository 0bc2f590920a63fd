#!/usr/bin/env bash
# recordsets.sh SEED N prints N random perf record option sets, one a
# line, for scripts/recordsweep.sh's SETS file: events this VM can
# sample (software events and tracepoints), alone, several, or in a
# group (read with :S or sampled each), with or without per-event
# periods and modifiers, call graphs (frame pointers, DWARF), and
# options that change the records' layout (-a, --sample-cpu, -d,
# --sample-identifier, -T, -P, --switch-events, --no-inherit, -s, -z).
# The same SEED gives the same sets (bash's RANDOM).
# Example: scripts/recordsets.sh 1 40 >sets && scripts/recordsweep.sh KBENCH DIR sets
set -euo pipefail
if [ $# -ne 2 ] || ! [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]]; then
	echo "usage: $0 SEED N" >&2
	exit 2
fi
RANDOM=$1
n=$2
# Each event with a period that gives a few hundred samples of the
# sweep's shell loop.
events=(cpu-clock task-clock page-faults minor-faults context-switches raw_syscalls:sys_enter sched:sched_switch)
periods=(100000 200000 3 2 1)
pick() { echo $((RANDOM % $1)); }
# event I [PERIOD] prints event I, with a period term when PERIOD is 1
# (not for a tracepoint, whose period is 1 and takes no term), and now
# and then a privilege modifier (after the terms, without a colon).
event() {
	local e=${events[$1]} mod=""
	case $(pick 8) in
	0) mod=u ;;
	1) mod=k ;;
	esac
	if [ "${2:-}" = 1 ] && [[ $e != *:* ]]; then
		echo "$e/period=${periods[$1]}/$mod"
	else
		echo "$e${mod:+:$mod}"
	fi
}
# distinct K prints K distinct event indexes.
distinct() {
	local k=$1 out=() i
	while [ ${#out[@]} -lt "$k" ]; do
		i=$(pick ${#events[@]})
		[[ " ${out[*]} " == *" $i "* ]] || out+=("$i")
	done
	echo "${out[@]}"
}
for _ in $(seq "$n"); do
	periodic=$(pick 2)
	k=$((1 + $(pick 3)))
	read -ra idx <<<"$(distinct $k)"
	evs=()
	for i in "${idx[@]}"; do
		evs+=("$(event "$i" "$periodic")")
	done
	opts=()
	case $(pick 10) in
	0 | 1 | 2 | 3) spec=$(IFS=,; echo "${evs[*]}") ;; # separate events
	4 | 5 | 6) spec="{$(IFS=,; echo "${evs[*]}")}" ;;  # a group, each sampled
	*) spec="{$(IFS=,; echo "${evs[*]}")}:S" ;;        # a group read by its leader
	esac
	opts+=(-e "$spec")
	[ "$periodic" = 1 ] || opts+=(-F "$(echo 997 2999 4999 | cut -d' ' -f$((1 + $(pick 3))))")
	case $(pick 10) in
	0 | 1 | 2) ;;
	3 | 4 | 5) opts+=(-g) ;;
	6) opts+=(--call-graph "fp,$((2 + $(pick 30)))") ;;
	7 | 8) opts+=(--call-graph "dwarf,$(echo 1024 4096 | cut -d' ' -f$((1 + $(pick 2))))") ;;
	9) opts+=(-g --user-callchains) ;;
	esac
	[ "$(pick 5)" != 0 ] || opts+=(-a)
	[ "$(pick 5)" != 0 ] || opts+=(--sample-cpu)
	[ "$(pick 8)" != 0 ] || opts+=(-d)
	[ "$(pick 6)" != 0 ] || opts+=(--sample-identifier)
	[ "$(pick 8)" != 0 ] || opts+=(-T)
	[ "$(pick 8)" != 0 ] || opts+=(-P)
	[ "$(pick 8)" != 0 ] || opts+=(--switch-events)
	[ "$(pick 10)" != 0 ] || opts+=(--no-inherit)
	[ "$(pick 10)" != 0 ] || opts+=(-s)
	[ "$(pick 8)" != 0 ] || opts+=(-z)
	printf "%s\n" "${opts[*]}"
done
