#!/usr/bin/env bash
# pgoprofile.sh OUT KBENCH RECORDING... writes OUT, the CPU profile the
# Go toolchain optimizes kbench with (profile-guided optimization: the
# build reads cmd/kbench/default.pgo). For each RECORDING it profiles
# KBENCH's report views, each PGO_RUNS times (default 2): the flat table
# and the script, and for a recording with callchains the children table
# too; then it merges the profiles (go tool pprof -proto). The views are
# weighted by their CPU time, so that recordings of similar sizes give
# each view its share. make pgo runs it on fresh recordings.
set -euo pipefail
. "$(dirname "$0")/callchains.sh"
if [ $# -lt 3 ]; then
	echo "usage: $0 OUT KBENCH RECORDING..." >&2
	exit 2
fi
out=$1 kb=$2
shift 2
runs=${PGO_RUNS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for f in "$@"; do
	views=("-format table" "-format script")
	if has_callchains "$f"; then
		views+=("-format table -children")
	fi
	for v in "${views[@]}"; do
		for _ in $(seq "$runs"); do
			n=$((n + 1))
			# shellcheck disable=SC2086 # the view's flags are words
			"$kb" report -progress never $v -cpuprofile "$tmp/$n.prof" "$f" >/dev/null
		done
	done
done
go tool pprof -proto "$tmp"/*.prof >"$out"
echo "$out: $n profiles of $# recordings, $(wc -c <"$out") bytes"
