#!/bin/sh
# Regenerates the perf stat recordings and perf script's text of them (the
# goldens). Needs root and perf (6.1 was used); see README.md.
set -eu
cd "$(dirname "$0")"
rm -f ./*.data ./*.script
LOOP='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
perf stat record -o thread.data -- sh -c "$LOOP" 2>/dev/null
perf stat record -a -o system.data -- sleep 0.1 2>/dev/null
perf stat record -I 50 -e task-clock,page-faults -o interval.data -- sh -c "$LOOP; $LOOP" 2>/dev/null
perf stat record -a -A -I 40 -e cpu-clock,task-clock -o percpu.data -- sleep 0.2 2>/dev/null
perf stat record -o - -- sh -c "$LOOP" 2>/dev/null >pipe.data
chmod 644 ./*.data
for f in *.data; do
	perf script -i "$f" >"${f%.data}.script"
done
