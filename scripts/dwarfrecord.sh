#!/usr/bin/env bash
# dwarfrecord.sh DIR [FUNCS] writes DIR/big.data: perf record
# --call-graph dwarf of gcc -O2 compiling a generated C file of FUNCS
# (3000) functions, each calling the one before: a multi-process
# workload (gcc, cc1, as) with deep stacks in a large binary, the DWARF
# recording BENCHMARKS.md times (92,674 samples, 391 MB with 3000 on this
# machine; perf script takes minutes on it). scripts/perfbench.sh DIR
# RUNS KBENCH times it. DWARF_FREQ sets the sampling rate (default
# 1999 Hz; 2600 with 1000 FUNCS gave 22 k samples here). Needs root,
# perf and gcc.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 DIR [FUNCS]" >&2
	exit 2
fi
dir=$1 funcs=${2:-3000}
mkdir -p "$dir"
awk -v n="$funcs" 'BEGIN {
	srand(1)
	for (i = 0; i < n; i++) {
		prev = i > 0 ? i - 1 : 0
		printf "int f%d(int x){int s=0; for(int i=0;i<x;i++){s+=i*%d^(s>>3);} if(x>%d) return f%d(x-1)+s; return s;}\n", i, 1 + int(rand() * 99), 1 + int(rand() * 50), prev
	}
	printf "int main(){return f%d(5);}\n", n - 1
}' >"$dir/big.c"
perf record -q --call-graph dwarf -F "${DWARF_FREQ:-1999}" -o "$dir/big.data" -- gcc -O2 -c "$dir/big.c" -o /dev/null
ls -l "$dir/big.data"
