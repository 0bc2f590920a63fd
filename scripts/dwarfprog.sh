#!/usr/bin/env bash
# dwarfprog.sh DIR [ROUNDS] writes DIR/big.data: perf record --call-graph
# dwarf -F 10000 of one C program built with gcc -O2 -g
# -fomit-frame-pointer, which sorts random integers with libc's qsort and
# formats them with snprintf ROUNDS (3) times: a single process whose
# stacks run through libc (its debug file, when installed, gives the
# inline frames perf prints). 3 rounds made 34,142 samples and 288 MB on
# this machine. scripts/perfbench.sh DIR RUNS KBENCH times it. Needs root,
# perf and gcc.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 DIR [ROUNDS]" >&2
	exit 2
fi
dir=$1 rounds=${2:-3}
mkdir -p "$dir"
cat >"$dir/prog.c" <<C
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
__attribute__((noinline)) long work(int n) {
	int *v = malloc(n * sizeof *v);
	long s = 0;
	for (int r = 0; r < 40; r++) {
		for (int i = 0; i < n; i++) v[i] = rand();
		qsort(v, n, sizeof *v, cmp);
		char buf[256];
		snprintf(buf, sizeof buf, "%d", v[n / 2]);
		s += strlen(buf);
	}
	free(v);
	return s;
}
__attribute__((noinline)) long level2(int n) { return work(n) + 1; }
__attribute__((noinline)) long level1(int n) { return level2(n) * 2; }
int main(void) {
	long s = 0;
	for (int i = 0; i < $rounds; i++) s += level1(100000);
	printf("%ld\n", s);
	return 0;
}
C
gcc -O2 -g -fomit-frame-pointer -o "$dir/prog" "$dir/prog.c"
perf record -q --call-graph dwarf -F 10000 -o "$dir/big.data" -- "$dir/prog" >/dev/null
ls -l "$dir/big.data"
