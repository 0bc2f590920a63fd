#!/bin/sh
# Regenerates the real perf recordings and perf's own dumps of them (the
# goldens). Needs root and perf (6.1 was used); see README.md.
set -eu
cd "$(dirname "$0")"
rm -f ./*.data ./*.data.old
LOOP='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
rec() { # name, perf record arguments...
	name=$1
	shift
	perf record "$@" 2>"$name.record.log"
	rm -f "$name.record.log"
}
rec sleep     -e cpu-clock -o sleep.data -- sleep 0.05
rec busy      -e cpu-clock -o busy.data -- sh -c "$LOOP"
rec system    -a -e cpu-clock -o system.data -- sleep 0.1
rec callchain -g -e cpu-clock -o callchain.data -- sh -c "$LOOP"
rec samplecpu --sample-cpu -e cpu-clock -o samplecpu.data -- sh -c "$LOOP"
rec hifreq    -F 10000 -e cpu-clock -o hifreq.data -- sh -c "$LOOP"
rec multi     -e cpu-clock -e task-clock -o multi.data -- sh -c "$LOOP"
rec zstd      -z -e cpu-clock -o zstd.data -- sh -c "$LOOP"
perf record -e cpu-clock -o - -- sh -c "$LOOP" >pipe.data 2>/dev/null
perf record -z -g -e cpu-clock -o - -- sh -c "$LOOP" >pipezstd.data 2>/dev/null
(cd bpfload && go build -o ../bpfload.bin .)
rec ksym      -a -e cpu-clock -o ksym.data -- ./bpfload.bin
rm -f bpfload.bin
chmod 644 ./*.data
for f in *.data; do
	n=${f%.data}
	# Every sample as perf script prints it (time-ordered).
	# (cpu only when the samples have it: perf script refuses otherwise).
	perf script -i "$f" --ns -F pid,tid,time,ip,cpu --hide-call-graph >"$n.script" 2>/dev/null ||
		perf script -i "$f" --ns -F pid,tid,time,ip --hide-call-graph >"$n.script"
	# perf's raw dump, reduced to record lines and callchains.
	perf report -D -i "$f" 2>/dev/null |
		grep -E '0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_|^\.\.\. FP chain|^\.\.\.\.\. +[0-9]+: ' >"$n.dump" || true
done
