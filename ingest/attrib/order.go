package attrib

import (
	"slices"
	"unsafe"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
)

// eventKind says what an event carries.
type eventKind uint8

const (
	evSample eventKind = iota
	evMmap
	evFork
	evExit
	evKsymbol
	evSectionMap
	evHalfFlush // the orderer delivered half its queue at the bound
	evComm
	evBuildID // HEADER_BUILD_ID, delivered as it is read (time 0)
)

// event is a record copied out of the reader (whose buffers are reused)
// with only what attribution needs, kept small: samples are most of them,
// and the orderer moves events around.
type event struct {
	time     uint64
	ip       uint64
	period   uint64
	addrs    []uint64  // the callchain; in branch mode the branch stack, (to, from) per entry
	side     *sideband // MMAP, KSYMBOL, COMM, KMOD_SEC_MAP
	pid, tid uint32
	ppid     uint32 // FORK; a SAMPLE's CPU (cpu), sharing the space
	ptid     uint32 // FORK
	misc     uint16 // FORK: the record's misc (machine.MiscForkExec)
	attr     uint16 // SAMPLE: the index of its event's attr
	kind     eventKind
	cpumode  uint8
}

// sideband holds the payload of the rarer records.
type sideband struct {
	off     int64 // the record's file offset, for warnings
	mmap    machine.Mmap
	ksym    machine.Ksymbol
	comm    string    // COMM
	sec     index.Map // KMOD_SEC_MAP
	secPath string    // its module file
	buildID []byte    // HEADER_BUILD_ID: the build id of file bidPath
	bidPath string
}

// orderer reproduces perf's ordered_events (util/ordered-events.c) as perf
// script and perf report use it: events with a timestamp are queued and
// delivered in time order (stable: equal times keep file order); a
// FINISHED_ROUND record delivers every queued event up to the highest
// timestamp seen before the previous round and remembers the current
// highest; the end of the file delivers the rest. Events without a
// timestamp (0, or no PERF_SAMPLE_TIME) are delivered at once.
type orderer struct {
	queue     []event
	bytes     int     // the queue's size, events and their callchains
	last      uint64  // the time of the event queued last (perf's oe->last)
	onHalf    func()  // called when the queue bound flushes half
	spare     []event // the other buffer of queue
	keys      []orderKey
	tmp       []orderKey // merge buffer
	maxTime   uint64
	nextFlush uint64
	deliver   func(*event)
}

// push queues a copy of *e (the caller's batch is reused), or delivers it
// at once.
func (o *orderer) push(e *event) {
	if e.time == 0 || e.time == ^uint64(0) {
		o.deliver(e)
		return
	}
	o.queue = append(o.queue, *e)
	o.maxTime = max(o.maxTime, e.time)
	o.last = e.time
	o.bytes += eventSize + 8*len(e.addrs)
	if o.bytes > queueBound {
		// perf's queue at its size limit (ordered_events__queue with
		// OE_FLUSH__HALF): deliver up to the middle between the oldest
		// queued time and the last one queued.
		first := o.queue[0].time
		for i := range o.queue {
			first = min(first, o.queue[i].time)
		}
		limit := first
		if o.last > first {
			limit += (o.last - first) / 2
		}
		if o.onHalf != nil {
			o.onHalf()
		}
		o.flush(limit)
	}
}

// eventSize is an event's size in the queue; maxQueueBytes bounds the
// queue between rounds (a stream without FINISHED_ROUND would otherwise
// keep every event).
const (
	eventSize     = int(unsafe.Sizeof(event{}))
	maxQueueBytes = 48 << 20
)

// queueBound is the bound in force: maxQueueBytes, lowered by tests.
var queueBound = maxQueueBytes

// round handles FINISHED_ROUND.
func (o *orderer) round() {
	o.flush(o.nextFlush)
	o.nextFlush = o.maxTime
}

// flush delivers queued events with time <= limit, in time order. It
// sorts small (time, position) keys rather than the events themselves.
func (o *orderer) flush(limit uint64) {
	if len(o.queue) == 0 {
		return
	}
	o.keys = o.keys[:0]
	for i := range o.queue {
		o.keys = append(o.keys, orderKey{o.queue[i].time, int32(i)})
	}
	o.keys, o.tmp = sortKeys(o.keys, o.tmp)
	n := 0
	for n < len(o.keys) && o.keys[n].time <= limit {
		o.deliver(&o.queue[o.keys[n].pos])
		n++
	}
	if n == len(o.queue) {
		clear(o.queue)
		o.queue = o.queue[:0]
		o.bytes = 0
		return
	}
	rest := o.spare[:0]
	o.bytes = 0
	for _, k := range o.keys[n:] {
		rest = append(rest, o.queue[k.pos])
		o.bytes += eventSize + 8*len(o.queue[k.pos].addrs)
	}
	clear(o.queue)
	o.queue, o.spare = rest, o.queue[:0]
}

// orderKey is an event's timestamp and position in the queue.
type orderKey struct {
	time uint64
	pos  int32
}

// sortKeys sorts keys by time, equal times keeping their order (the
// positions ascend), and returns the sorted slice and the spare buffer.
// The queue between two rounds is a few ascending runs (one per CPU
// buffer perf flushed), so it merges runs bottom-up: O(n log runs).
func sortKeys(keys, tmp []orderKey) ([]orderKey, []orderKey) {
	// Run boundaries.
	var bounds []int
	bounds = append(bounds, 0)
	for i := 1; i < len(keys); i++ {
		if keys[i].time < keys[i-1].time {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(keys))
	if len(bounds) <= 2 {
		return keys, tmp
	}
	tmp = slices.Grow(tmp[:0], len(keys))[:len(keys)]
	for len(bounds) > 2 {
		next := bounds[:1]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			hi := mid
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			mergeKeys(tmp[lo:hi], keys[lo:mid], keys[mid:hi])
			next = append(next, hi)
		}
		bounds = next
		keys, tmp = tmp, keys
	}
	return keys, tmp
}

// mergeKeys merges the sorted a and b into dst, a first on equal times.
func mergeKeys(dst, a, b []orderKey) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].time < a[i].time {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// finish delivers everything left.
func (o *orderer) finish() { o.flush(^uint64(0)) }

// cpu returns a SAMPLE's CPU, kept in ppid: the event stays 80 bytes.
func (e *event) cpu() uint32 { return e.ppid }
