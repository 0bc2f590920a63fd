// Package perfevent opens perf events with perf_event_open on every CPU or
// for a process (or a command it starts), reads their ring buffers, and
// synthesizes the side-band records perf record writes for what already
// runs: the kernel and module MMAPs, and COMM, FORK and MMAP2 records for
// running processes, read from /proc and /sys (or a fake root).
//
// It is the sampling half of kbench record and of a live profiler: Open a
// Session, Synthesize the side band, Start, then Run with a callback that
// receives every record as it arrives, decoded (perfdata.Sample, Mmap,
// Comm, Fork, Exit, Lost, ...) and raw. The events are perf record's
// default software event, cpu-clock sampled by frequency, with the
// attribute bits perf 6.1 sets (see Options.Attr).
//
// Opening events needs perf_event_paranoid to allow it (or CAP_PERFMON);
// errors for a kernel that refuses wrap ErrNotPermitted. Perf events are
// Linux's: on other systems Open always fails with such an error, while
// Synthesize and the readers of a root's /proc and /sys still work.
package perfevent
