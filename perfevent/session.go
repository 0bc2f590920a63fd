package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// DefaultFreq is perf record's default sampling frequency (Hz).
const DefaultFreq = 4000

// DefaultPages is the number of ring-buffer data pages per CPU: 128 pages
// of 4 KiB, perf record's 512 KiB default for a privileged user.
const DefaultPages = 128

// Options say what a Session samples.
type Options struct {
	// Freq is the sampling frequency in Hz (sample_freq with freq = 1);
	// 0 means DefaultFreq.
	Freq uint64
	// Callchain adds PERF_SAMPLE_CALLCHAIN (frame-pointer call chains,
	// perf record -g).
	Callchain bool
	// SystemWide samples every task on every CPU of CPUs (perf record -a).
	// It is the default when there is neither Pid nor Command.
	SystemWide bool
	// Pid samples the threads of a running process (perf record -p):
	// one event per thread and CPU, inherited by the children they start.
	Pid int
	// Command is a command to run and sample (perf record -- CMD). Open
	// starts it held before its exec; Start lets it exec. Without
	// SystemWide its events are enabled by the kernel at that exec
	// (enable_on_exec), so the samples begin with the command itself.
	Command []string
	// Stdin, Stdout and Stderr are the command's (default: none, the
	// caller's stdout and stderr).
	Stdin          *os.File
	Stdout, Stderr *os.File
	// CPUs are the CPUs to open events on; default, every online CPU
	// (/sys/devices/system/cpu/online).
	CPUs []int
	// Pages is the number of ring-buffer data pages per CPU, a power of
	// two; 0 means DefaultPages.
	Pages int
	// Root is the file system root Synthesize reads proc/, sys/ and
	// lib/modules/ below ("/" when empty). The events themselves are
	// always the running machine's: Pid's threads and the CPUs come
	// from /proc and /sys.
	Root string
	// RawOnly delivers the kernel's records undecoded (Event.Record nil),
	// for a caller that only copies them, as perf record does; Stats
	// still count samples and lost records, from the record headers.
	RawOnly bool
}

// Event is one record read from a ring buffer.
type Event struct {
	// CPU is the CPU of the ring buffer the record came from.
	CPU int
	// Raw is the record as the kernel wrote it (header included,
	// little-endian on little-endian machines), valid only during the
	// callback. It is what perf record copies into perf.data.
	Raw []byte
	// Record is Raw decoded (a *perfdata.Sample, *Mmap, *Comm, *Fork,
	// *Exit, *Lost, ...; nil with Options.RawOnly), valid only during the
	// callback. At the end of
	// each pass over the ring buffers that read anything, Run and
	// ReadRound deliver an Event whose Record is a *perfdata.FinishedRound
	// and whose Raw is nil, where perf record writes
	// PERF_RECORD_FINISHED_ROUND.
	Record perfdata.Record
}

// Stats count what a Session has read.
type Stats struct {
	Records     uint64 // kernel records read
	Samples     uint64 // PERF_RECORD_SAMPLE records
	LostRecords uint64 // PERF_RECORD_LOST records
	Lost        uint64 // samples they say were lost
	Rounds      uint64 // passes that read something
	Wakeups     uint64 // polls that returned ready buffers
}

// Attribute flags of the events, as perf 6.1's evsel__config sets them
// for perf record -e cpu-clock.
const (
	trackingFlags     = perfdata.AttrMmap | perfdata.AttrComm | perfdata.AttrTask | perfdata.AttrMmap2 | perfdata.AttrCommExec | perfdata.AttrKsymbol | perfdata.AttrBPFEvent
	baseFlags         = perfdata.AttrDisabled | perfdata.AttrInherit | perfdata.AttrFreq | perfdata.AttrSampleIDAll | perfdata.AttrExcludeGuest
	baseSampleType    = perfdata.SampleFormatIP | perfdata.SampleFormatTID | perfdata.SampleFormatTime | perfdata.SampleFormatPeriod
	perfTypeSoftware  = 1 // PERF_TYPE_SOFTWARE
	perfCountCPUClock = 0 // PERF_COUNT_SW_CPU_CLOCK
)

// Attr returns the perf_event_attr the events are opened with for opts,
// as perf 6.1 sets it for perf record -e cpu-clock (the default event
// where there is no hardware PMU, as in most VMs): sample_freq = Freq,
// sample_type IP|TID|TIME|PERIOD (CPU with SystemWide, CALLCHAIN with
// Callchain), read_format ID|LOST, disabled, inherit, freq, sample_id_all,
// exclude_guest, and the tracking bits (mmap, mmap2, comm, comm_exec,
// task, ksymbol, bpf_event); enable_on_exec for a command alone.
//
// One difference from perf: with SystemWide perf 6.1 moves the tracking
// bits to a second, dummy event; a Session tracks on its sampling event,
// so that the recording has one attr.
func (o *Options) Attr() perfdata.Attr {
	freq := o.Freq
	if freq == 0 {
		freq = DefaultFreq
	}
	st := baseSampleType
	if o.Callchain {
		st |= perfdata.SampleFormatCallchain
	}
	flags := baseFlags | trackingFlags
	if o.systemWide() {
		st |= perfdata.SampleFormatCPU
	} else if o.Pid == 0 && len(o.Command) > 0 {
		flags |= perfdata.AttrEnableOnExec
	}
	return perfdata.Attr{
		Type:         perfTypeSoftware,
		Size:         128, // PERF_ATTR_SIZE_VER7, as perf 6.1 writes
		Config:       perfCountCPUClock,
		SamplePeriod: freq,
		SampleType:   st,
		ReadFormat:   perfdata.ReadID | perfdata.ReadLost,
		Flags:        flags,
	}
}

func (o *Options) systemWide() bool {
	return o.SystemWide || (o.Pid == 0 && len(o.Command) == 0)
}

// ErrNotPermitted wraps the error of perf_event_open when the kernel does
// not let this process sample (EACCES, EPERM: perf_event_paranoid or
// missing CAP_PERFMON) or has no perf events (ENOENT, ENOSYS, EOPNOTSUPP).
var ErrNotPermitted = errors.New("perf_event_open not permitted or not supported")

// LostCount is one event's count of lost samples (read_format LOST).
type LostCount struct {
	CPU  int    // the event's CPU
	Tid  int    // its thread (-1 system-wide)
	ID   uint64 // its sample id
	Lost uint64
}

// Threads returns the thread ids of process pid below root
// (root/proc/PID/task), in numeric order.
func Threads(root string, pid int) ([]int, error) {
	s := &synth{root: root}
	if s.root == "" {
		s.root = "/"
	}
	tids, err := s.numericDir(fmt.Sprintf("proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("perfevent: threads of pid %d: %w", pid, err)
	}
	if len(tids) == 0 {
		return nil, fmt.Errorf("perfevent: pid %d has no threads", pid)
	}
	return tids, nil
}

// OnlineCPUs returns the online CPUs listed in
// root/sys/devices/system/cpu/online ("0-3,6").
func OnlineCPUs(root string) ([]int, error) {
	if root == "" {
		root = "/"
	}
	name := filepath.Join(root, "sys/devices/system/cpu/online")
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("perfevent: online CPUs: %w", err)
	}
	cpus, err := ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("perfevent: %s: %w", name, err)
	}
	return cpus, nil
}

// ParseCPUList parses a kernel CPU list such as "0-3,6".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("empty CPU list %q", s)
	}
	return cpus, nil
}
