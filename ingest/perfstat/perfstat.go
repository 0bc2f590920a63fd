// Package perfstat replays the counter records of perf stat record
// (THREAD_MAP, CPU_MAP, STAT_CONFIG, STAT, STAT_ROUND and EVENT_UPDATE) as
// perf 6.1's perf script does: at each STAT_ROUND it prints every
// counter's value, enabled and running time for each of its CPUs and
// threads (builtin-script.c's __process_stat), after perf's processing of
// the round (util/stat.c's perf_stat_process_counter: in the per-CPU and
// per-thread aggregation modes, each value becomes its change since the
// previous round, scaled by enabled/running when the recording asked).
//
// # Layouts (tools/lib/perf/include/perf/event.h), after the 8-byte header
//
//	THREAD_MAP   u64 nr; nr × {u64 pid; char comm[16]}
//	CPU_MAP      u16 type; then type 0: u16 nr, nr × u16 cpu;
//	             type 1: u16 nr, u16 long_size, then nr masks of
//	             long_size bytes (4: at once; 8: after 4 bytes of padding);
//	             type 2: u8 any_cpu, u8 pad, u16 start_cpu, u16 end_cpu
//	STAT_CONFIG  u64 nr; nr × {u64 tag; u64 val}
//	STAT         u64 id; u32 cpu; u32 thread; u64 val, ena, run
//	STAT_ROUND   u64 type; u64 time
//	EVENT_UPDATE u64 type; u64 id; then a name (type 2) or a CPU_MAP's
//	             data (type 3); the unit (0) and scale (1) change nothing
//	             printed here
//
// Hand-written: no Go library reads these records.
package perfstat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// IsRecord reports whether records of type t are Counters'.
func IsRecord(t perfdata.RecordType) bool {
	switch t {
	case perfdata.RecordThreadMap, perfdata.RecordCPUMap, perfdata.RecordStatConfig,
		perfdata.RecordStat, perfdata.RecordStatRound, perfdata.RecordEventUpdate:
		return true
	}
	return false
}

// Error is a record Counters cannot use: perf script stops there too.
type Error struct {
	Off  int64 // the record's file offset
	Type perfdata.RecordType
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("perfstat: %s record at file offset %#x: %s", e.Type, e.Off, e.Msg)
}

// Counters holds perf script's state of a perf stat recording.
type Counters struct {
	evsels  []counter
	names   func() []string
	evsel   func(id uint64) (int, bool)
	threads []int32 // the first THREAD_MAP's pids
	cpus    []int32 // the first CPU_MAP's CPUs
	haveThr bool
	haveCPU bool
	set     bool // counts allocated: both maps came (perf script's set_maps)
	// aggrMode and scale are the STAT_CONFIG's (perf script starts from
	// a zeroed stat_config: AGGR_NONE, no scaling).
	aggrMode uint64
	scale    bool
	header   bool // the table's header line was printed
	warnings []string
}

type counter struct {
	name    string
	ownCPUs []int32 // an EVENT_UPDATE's (nil: none)
	cpus    []int32 // its CPUs once the maps are set
	counts  []values
	prev    []values // prev_raw_counts
}

// values are perf_counts_values.
type values struct{ val, ena, run uint64 }

// New returns the state of a recording whose attrs, in file order, are
// named names() (evsel__name; a pipe-mode recording's grow as its
// HEADER_ATTR records come); evsel maps a sample id to its attr's index.
func New(names func() []string, evsel func(id uint64) (int, bool)) *Counters {
	return &Counters{names: names, evsel: evsel}
}

// grow adds the events that came since the last record.
func (c *Counters) grow() {
	names := c.names()
	for _, n := range names[min(len(c.evsels), len(names)):] {
		c.evsels = append(c.evsels, counter{name: n})
		if c.set {
			c.allocate(&c.evsels[len(c.evsels)-1])
		}
	}
}

// Warnings returns and forgets the warnings perf would print since the
// last call (an unknown STAT_CONFIG term, a second map).
func (c *Counters) Warnings() []string {
	w := c.warnings
	c.warnings = nil
	return w
}

// The aggregation modes of perf 6.1's enum aggr_mode (util/stat.h) that
// process_counter_values turns into changes since the last round; a newer
// perf's numbers mean what they mean to perf 6.1.
const (
	aggrNone   = 0
	aggrSocket = 2
	aggrDie    = 3
	aggrCore   = 4
	aggrThread = 5
	aggrNode   = 7
)

// The STAT_CONFIG terms perf 6.1 knows.
const (
	termAggrMode = 0
	termInterval = 1
	termScale    = 2
)

// Record applies rec, a whole record (header included) in byte order bo
// at file offset off. For a STAT_ROUND it appends the lines perf script
// prints to out, and returns out.
func (c *Counters) Record(out, rec []byte, bo binary.ByteOrder, off int64) ([]byte, error) {
	if len(rec) < 8 {
		return out, &Error{off, 0, "shorter than its header"}
	}
	t := perfdata.RecordType(bo.Uint32(rec))
	d := decoder{rec: rec, bo: bo, off: off, t: t}
	c.grow()
	switch t {
	case perfdata.RecordThreadMap:
		nr := d.u64(8)
		if d.err == nil && (nr > uint64(len(rec)) || len(rec) < 16+24*int(nr)) {
			return out, d.fail("%d entries do not fit its %d bytes", nr, len(rec))
		}
		if d.err != nil {
			return out, d.err
		}
		if c.haveThr {
			c.warnings = append(c.warnings, "Extra thread map event, ignoring.")
			return out, nil
		}
		c.threads = make([]int32, nr)
		for i := range c.threads {
			c.threads[i] = int32(d.u64(16 + 24*i)) // (pid_t)
		}
		c.haveThr = true
		if err := c.setMaps(); err != nil {
			return out, d.fail("%v", err)
		}
	case perfdata.RecordCPUMap:
		cpus, err := d.cpuMap(8)
		if err != nil {
			return out, err
		}
		if c.haveCPU {
			c.warnings = append(c.warnings, "Extra cpu map event, ignoring.")
			return out, nil
		}
		c.cpus, c.haveCPU = cpus, true
		if err := c.setMaps(); err != nil {
			return out, d.fail("%v", err)
		}
	case perfdata.RecordStatConfig:
		nr := d.u64(8)
		if d.err == nil && (nr > uint64(len(rec)) || len(rec) < 16+16*int(nr)) {
			return out, d.fail("%d terms do not fit its %d bytes", nr, len(rec))
		}
		for i := 0; d.err == nil && i < int(nr); i++ {
			tag, val := d.u64(16+16*i), d.u64(24+16*i)
			switch tag {
			case termAggrMode:
				c.aggrMode = val
			case termScale:
				c.scale = val != 0
			case termInterval:
			default:
				c.warnings = append(c.warnings, "unknown stat config term "+strconv.FormatUint(tag, 10))
			}
		}
		return out, d.err
	case perfdata.RecordStat:
		id, cpu, thread := d.u64(8), int32(d.u32(16)), d.u32(20)
		v := values{d.u64(24), d.u64(32), d.u64(40)}
		if d.err != nil {
			return out, d.err
		}
		i, ok := c.evsel(id)
		if !ok || i >= len(c.evsels) {
			return out, d.fail("no event has id %d", id)
		}
		ev := &c.evsels[i]
		if !c.set {
			return out, d.fail("came before the thread and cpu maps")
		}
		idx := cpuIndex(ev.cpus, cpu)
		if idx < 0 {
			return out, d.fail("invalid CPU %d for event %s", cpu, ev.name)
		}
		if uint64(thread) >= uint64(len(c.threads)) {
			return out, d.fail("no count for CPU %d thread %d of event %s", cpu, thread, ev.name)
		}
		ev.counts[int(thread)*len(ev.cpus)+idx] = v
	case perfdata.RecordStatRound:
		time := d.u64(16)
		if d.err != nil {
			return out, d.err
		}
		if !c.set {
			return out, d.fail("came before the thread and cpu maps")
		}
		for i := range c.evsels {
			c.process(&c.evsels[i])
			out = c.print(out, &c.evsels[i], time)
		}
	case perfdata.RecordEventUpdate:
		typ, id := d.u64(8), d.u64(16)
		if d.err != nil {
			return out, d.err
		}
		i, ok := c.evsel(id)
		if !ok || i >= len(c.evsels) {
			return out, d.fail("no event has id %d", id)
		}
		switch typ {
		case 2: // PERF_EVENT_UPDATE__NAME
			name := rec[24:]
			if n := bytes.IndexByte(name, 0); n >= 0 {
				name = name[:n]
			}
			c.evsels[i].name = string(name)
		case 3: // PERF_EVENT_UPDATE__CPUS
			cpus, err := d.cpuMap(24)
			if err != nil {
				return out, err
			}
			c.evsels[i].ownCPUs = cpus
		}
	}
	return out, nil
}

// setMaps gives every event its CPUs and threads, and its counts, once
// both maps came, as perf_evlist__set_maps and evlist__alloc_stats do: an
// event keeps the CPUs an EVENT_UPDATE gave it unless the map's first CPU
// is -1 (perf_cpu_map__empty: a recording of threads).
func (c *Counters) setMaps() error {
	if !c.haveThr || !c.haveCPU || c.set {
		return nil
	}
	c.set = true
	total := 0
	for i := range c.evsels {
		total += len(c.cpusOf(&c.evsels[i])) * len(c.threads)
	}
	if total > maxCounts {
		return fmt.Errorf("%d events on their CPUs and %d threads make %d counts, more than %d", len(c.evsels), len(c.threads), total, maxCounts)
	}
	for i := range c.evsels {
		c.allocate(&c.evsels[i])
	}
	return nil
}

// cpusOf returns ev's CPUs once the maps are set.
func (c *Counters) cpusOf(ev *counter) []int32 {
	if ev.ownCPUs != nil && len(c.cpus) > 0 && c.cpus[0] != -1 {
		return ev.ownCPUs
	}
	return c.cpus
}

// allocate gives ev its CPUs and its counts.
func (c *Counters) allocate(ev *counter) {
	ev.cpus = c.cpusOf(ev)
	ev.counts = make([]values, len(ev.cpus)*len(c.threads))
	ev.prev = make([]values, len(ev.counts))
}

// maxCounts bounds the counts of a recording (48 bytes each, and a line
// of text each a round): a real one has events × CPUs × threads in the
// thousands, while a few bytes of maps can ask for billions.
var maxCounts = 1 << 20

// process is process_counter_values for each CPU and thread: in the
// per-CPU and per-thread modes a count becomes its change since the last
// round (evsel__compute_deltas: the raw count is kept for the next), then
// is scaled (perf_counts_values__scale).
func (c *Counters) process(ev *counter) {
	switch c.aggrMode {
	case aggrNone, aggrSocket, aggrDie, aggrCore, aggrThread, aggrNode:
	default:
		return // AGGR_GLOBAL sums into the aggregate, which is not printed
	}
	for k := range ev.counts {
		v := &ev.counts[k]
		tmp := ev.prev[k]
		ev.prev[k] = *v
		v.val -= tmp.val
		v.ena -= tmp.ena
		v.run -= tmp.run
		if c.scale {
			if v.run == 0 {
				v.val = 0
			} else if v.run < v.ena {
				v.val = uint64(float64(v.val) * float64(v.ena) / float64(v.run))
			}
		}
	}
}

// print appends __process_stat's lines for ev: a header before the
// first, then one per thread and CPU.
func (c *Counters) print(out []byte, ev *counter, time uint64) []byte {
	if !c.header {
		out = append(out, "CPU   THREAD             VAL             ENA             RUN            TIME EVENT\n"...)
		c.header = true
	}
	for t, pid := range c.threads {
		for i, cpu := range ev.cpus {
			v := ev.counts[t*len(ev.cpus)+i]
			out = pad(out, strconv.FormatInt(int64(cpu), 10), 3)
			out = pad(append(out, ' '), strconv.FormatInt(int64(pid), 10), 8)
			for _, n := range [...]uint64{v.val, v.ena, v.run, time} {
				out = pad(append(out, ' '), strconv.FormatUint(n, 10), 15)
			}
			out = append(append(append(out, ' '), ev.name...), '\n')
		}
	}
	return out
}

// pad appends s right-aligned in width columns (printf's %*d).
func pad(out []byte, s string, width int) []byte {
	for range width - len(s) {
		out = append(out, ' ')
	}
	return append(out, s...)
}

// cpuIndex is perf_cpu_map__idx: a binary search, as perf's, of a map it
// assumes sorted.
func cpuIndex(cpus []int32, cpu int32) int {
	lo, hi := 0, len(cpus)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case cpus[mid] == cpu:
			return mid
		case cpus[mid] > cpu:
			hi = mid
		default:
			lo = mid + 1
		}
	}
	return -1
}

// decoder reads a record's fields; the first out-of-bounds read sets err
// and every later read returns 0.
type decoder struct {
	rec []byte
	bo  binary.ByteOrder
	off int64
	t   perfdata.RecordType
	err error
}

func (d *decoder) fail(format string, args ...any) error {
	if d.err == nil {
		d.err = &Error{d.off, d.t, fmt.Sprintf(format, args...)}
	}
	return d.err
}

func (d *decoder) fits(at, n int) bool {
	if d.err != nil {
		return false
	}
	if at+n > len(d.rec) {
		d.fail("%d bytes at byte %d of its %d", n, at, len(d.rec))
		return false
	}
	return true
}

func (d *decoder) u16(at int) uint16 {
	if !d.fits(at, 2) {
		return 0
	}
	return d.bo.Uint16(d.rec[at:])
}

func (d *decoder) u32(at int) uint32 {
	if !d.fits(at, 4) {
		return 0
	}
	return d.bo.Uint32(d.rec[at:])
}

func (d *decoder) u64(at int) uint64 {
	if !d.fits(at, 8) {
		return 0
	}
	return d.bo.Uint64(d.rec[at:])
}

// cpuMap decodes the perf_record_cpu_map_data at byte at, as perf 6.1's
// cpu_map__new_data does: a list (u16 -1 is CPU -1), a bitmask or a range
// (CPU -1 first when any_cpu).
func (d *decoder) cpuMap(at int) ([]int32, error) {
	typ := d.u16(at)
	switch typ {
	case 0:
		nr := int(d.u16(at + 2))
		if !d.fits(at+4, 2*nr) {
			return nil, d.err
		}
		cpus := make([]int32, nr)
		for i := range cpus {
			cpus[i] = int32(d.u16(at + 4 + 2*i))
			if cpus[i] == 0xffff {
				cpus[i] = -1
			}
		}
		return cpus, nil
	case 1:
		nr, long := int(d.u16(at+2)), int(d.u16(at+4))
		start := at + 6
		switch long {
		case 4:
		case 8:
			start += 4 // the legacy padding before 64-bit masks
		default:
			if d.err == nil {
				return nil, d.fail("a cpu mask of %d-byte words", long)
			}
		}
		if !d.fits(start, nr*long) {
			return nil, d.err
		}
		var cpus []int32
		for i := range nr {
			var w uint64
			if long == 4 {
				w = uint64(d.u32(start + 4*i))
			} else {
				w = d.u64(start + 8*i)
			}
			for w != 0 {
				b := bits.TrailingZeros64(w)
				cpus = append(cpus, int32(i*long*8+b))
				w &= w - 1
			}
		}
		return cpus, d.err
	case 2:
		if !d.fits(at+2, 6) {
			return nil, d.err
		}
		anyCPU, first, last := int(d.rec[at+2]), int(d.u16(at+4)), int(d.u16(at+6))
		n := last - first + 1 + anyCPU // perf_cpu_map__empty_new: every CPU -1 at first
		if n <= 0 {
			return nil, d.fail("cpu range %d-%d", first, last)
		}
		cpus := make([]int32, n)
		i := 0
		if anyCPU != 0 {
			cpus[i], i = -1, 1
		}
		for cpu := first; cpu <= last; cpu++ {
			cpus[i], i = int32(cpu), i+1
		}
		for ; i < n; i++ {
			cpus[i] = -1
		}
		return cpus, nil
	}
	if d.err != nil {
		return nil, d.err
	}
	return nil, d.fail("cpu map of unknown type %d", typ)
}
