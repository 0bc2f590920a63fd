package attrib

import (
	"slices"
	"sync"
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
	evText    // perf stat record's counters as perf script prints them, and warnings (time 0)
)

// event is a record copied out of the reader (whose buffers are reused)
// with only what attribution needs, kept to a cache line: samples are
// most of them, the decoder writes them on one core and the attributor
// reads them on the other (when they were 80 bytes, padding them to 96
// and 128 made the -a table 7 and 14 % slower). Its time is its order
// key's (orderKey.time), which the attributor is given with it.
type event struct {
	ip       uint64    // SAMPLE; FORK: the parent's tid (ptid)
	period   uint64    // SAMPLE; FORK and COMM: the record's misc (miscOf)
	addrs    []uint64  // the callchain; in branch mode the branch stack, (to, from) per entry
	side     *sideband // MMAP, KSYMBOL, COMM, KMOD_SEC_MAP
	pid, tid uint32
	ppid     uint32 // FORK; a SAMPLE's CPU (cpu), sharing the space
	attr     uint16 // SAMPLE: the index of its event's attr
	// kf is the event's kind (kind) and, above kindBits, a SAMPLE's
	// flags (sampleLBR, sampleKnownMarkers).
	kf      uint8
	cpumode uint8
}

// kindBits are the bits of event.kf that hold its kind.
const kindBits = 0x0f

// kind returns what e carries.
func (e *event) kind() eventKind { return eventKind(e.kf & kindBits) }

// has reports whether a SAMPLE event has flag (sampleLBR,
// sampleKnownMarkers).
func (e *event) has(flag uint8) bool { return e.kf&flag != 0 }

// miscOf returns the record misc a FORK or COMM event keeps in period.
func (e *event) miscOf() uint16 { return uint16(e.period) }

// sideband holds the payload of the rarer records: MMAP and COMM here,
// the rarest behind rare (a recording can have tens of thousands of
// MMAPs, and one struct for all took 224 bytes each).
type sideband struct {
	off     int64 // the record's file offset, for warnings
	mmap    machine.Mmap
	buildID []byte // an MMAP2's, when it carries one (perf record --buildid-mmap)
	comm    string // COMM
	rare    *rareSideband
	// reads are a SAMPLE's PERF_SAMPLE_READ counters, when its event
	// has them: perf delivers the sample once per counter (readValue).
	reads []readValue
}

// rareSideband is the payload of KSYMBOL, KMOD_SEC_MAP and
// HEADER_BUILD_ID records.
type rareSideband struct {
	ksym    machine.Ksymbol
	sec     index.Map // KMOD_SEC_MAP
	secPath string    // its module file
	buildID []byte    // HEADER_BUILD_ID: the build id of file bidPath
	bidPath string
	text    string   // evText's lines
	warns   []string // evText's warnings
}

// orderer reproduces perf's ordered_events (util/ordered-events.c) as perf
// script and perf report use it: events with a timestamp are queued and
// delivered in time order (stable: equal times keep file order); a
// FINISHED_ROUND record delivers every queued event up to the highest
// timestamp seen before the previous round and remembers the current
// highest; the end of the file delivers the rest. Events without a
// timestamp (0, or no PERF_SAMPLE_TIME) are delivered at once.
//
// Events are copied once, into segments, and stay there: a delivery is a
// list of pointers into them in delivery order, with the segments none of
// whose events are queued any more (the consumer recycles those once it
// has delivered the list). Between rounds only the order is computed,
// on keys: the new events' keys arrive as a few ascending runs, one per
// CPU buffer, and are kept as those runs (flush). Deliveries gather at
// least minDelivery events (rounds can be a few events each), except the
// last.
type orderer struct {
	cur       *segment   // receives pushed events
	segs      []*segment // every segment not yet handed back, oldest first, cur last
	rounds    uint64     // FINISHED_ROUNDs so far: events pushed now are of interval rounds
	rest      []keyRun   // queued keys left by the last flush: sorted runs, oldest first, none empty
	fresh     []orderKey // keys queued since the last flush, in push order, in freshBuf
	freshBuf  *keyBuf
	viewed    []*keyBuf // the buffers rest's runs view
	spare     []*keyBuf // buffers no run views
	merges    [2]mergeScratch
	runs      []keyRun     // flush's, kept for their memory
	bounds    []int        // flush's, kept for their memory
	parts     [][]orderKey // flush's, kept for their memory
	immCur    *segment     // receives the events delivered at once
	batch     delivery     // what the next delivery holds so far
	tmp       []orderKey   // merge buffer
	bytes     int          // queued events and their callchains
	sized     int          // queued events with a callchain or payload: the others' size is eventSize
	last      uint64       // the time of the event queued last (perf's oe->last)
	lastFlush uint64       // the time of the event delivered last (perf's oe->last_flush)
	unordered uint64       // events queued before it (perf's nr_unordered_events, which perf report warns of)
	maxTime   uint64
	nextFlush uint64
	onHalf    func() // called when the queue bound flushes half
	// send hands a delivery to the consumer: keys in delivery order and
	// the segments it may recycle once it has delivered them.
	send func(d delivery)
	// segment returns an empty segment (a recycled one or a new one).
	segment func() *segment
	// keyBuf returns an empty key slice for a delivery.
	keyBuf func() []orderKey
	// doneBuf returns an empty list of segments for a delivery to hand
	// back.
	doneBuf func() []*segment
	// block returns a recycled chain block, or nil for a new one.
	block func() []uint64
}

// A delivery carries at least minDelivery events or deliveryBytes bytes
// (of events, callchains and user stacks), but for the last.
const (
	minDelivery   = 2048
	deliveryBytes = 1 << 20
)

// segment holds events. Its array never grows: keys point into it. last
// is the interval (orderer.rounds) of its last queued event. chains
// holds the callchains push copied for its events (copyChain), in
// blocks that never grow either, taken from and given back to the
// pools' blocks: recycled, they are filled again, where fresh memory
// for each chain had to be zeroed and collected (on the -a -g children
// table, 5.9 M frames, with their context words 55-60 MB a run). Kept by
// the segment that filled them, each of the pooled segments held the
// most blocks it ever needed: 11 MB of the same table's 62 MB heap at
// its end.
type segment struct {
	events []event
	last   uint64
	chains [][]uint64
	used   int // words of block full in use
	full   int // the block being filled; those before it are full
}

// chainBlockWords is the size of a segment's chain blocks.
const chainBlockWords = 1 << 13

// chain returns n words of sg's chain storage (len = cap = n), taking a
// new block from block (nil: a fresh one) when those it has are full.
func (sg *segment) chain(n int, block func() []uint64) []uint64 {
	if n > chainBlockWords {
		return make([]uint64, n) // a chain longer than a block: its own
	}
	if len(sg.chains) == 0 || sg.used+n > chainBlockWords {
		if len(sg.chains) > 0 {
			sg.full++
		}
		if sg.full >= len(sg.chains) {
			b := []uint64(nil)
			if block != nil {
				b = block()
			}
			if b == nil {
				b = make([]uint64, chainBlockWords)
			}
			sg.chains = append(sg.chains, b)
		}
		sg.used = 0
	}
	b := sg.chains[sg.full][sg.used : sg.used+n : sg.used+n]
	sg.used += n
	return b
}

// release gives sg's chain blocks to give, for other segments to fill:
// its events' callchains are void from then on.
func (sg *segment) release(give func([]uint64)) {
	for _, b := range sg.chains {
		give(b)
	}
	clear(sg.chains)
	sg.chains = sg.chains[:0]
	sg.used, sg.full = 0, 0
}

// clearEvents empties sg's events, dropping their side bands' memory.
func (sg *segment) clearEvents() {
	clear(sg.events)
	sg.events = sg.events[:0]
}

// segmentEvents is a segment's capacity; the first segments a run makes
// are smaller, firstSegmentEvents doubling up to it (segmentSize), so
// that a small recording does not pay for a large one's: a full segment
// is 320 KiB, and a 53-sample report made several for its 60 events.
const (
	segmentEvents      = 4096
	firstSegmentEvents = 256
)

// newSegment makes a segment of n events.
func newSegment(n int) *segment { return &segment{events: make([]event, 0, n)} }

// segmentSize is the capacity of the segment that follows made others.
func segmentSize(made int) int {
	if made < 4 {
		return firstSegmentEvents << made
	}
	return segmentEvents
}

// delivery is what the orderer sends: events in delivery order, then
// segments to recycle.
type delivery struct {
	keys  []orderKey
	done  []*segment
	bytes int // the memory its events hold (deliveredSize)
}

// deliveredSize is the memory e holds until it is delivered: itself, its
// callchain and the user stack behind it, or the recording's pages its
// stack lies in (which the attributor faults in again when they were
// released meanwhile).
func deliveredSize(e *event) int { return eventSize + 8*cap(e.addrs) + mappedStackSize(e) }

// orderPools recycle segments and key slices between the orderer and
// the consumer of its deliveries; beyond what they hold, new ones are
// made (the deliveries channel bounds what is in flight).
type orderPools struct {
	segs   chan *segment
	keyc   chan []orderKey
	donec  chan []*segment // deliveries' lists of segments to hand back
	blocks chan []uint64   // chain blocks (segment.chains)
	made   int             // segments made (by the orderer's goroutine)
}

func newOrderPools() *orderPools {
	return &orderPools{segs: make(chan *segment, 64), keyc: make(chan []orderKey, poolLists), donec: make(chan []*segment, poolLists), blocks: make(chan []uint64, poolBlocks)}
}

// deliveriesQueued is how many deliveries the channel from the decoder
// to the attributor holds.
const deliveriesQueued = 64

// poolLists is how many key slices and segment lists the pools keep:
// as many as there can be deliveries at once (those queued, the one
// being gathered and the one being delivered). A pool that kept fewer
// dropped some when the attributor caught up, to make them again when
// the decoder ran ahead: in a steady state, allocations that went on
// with the samples (TestAttributionAllocatesNothingPerSample).
const poolLists = deliveriesQueued + 2

// poolBlocks bounds the chain blocks the pools keep idle (4 MiB).
const poolBlocks = 64

// block returns a recycled chain block, or nil.
func (p *orderPools) block() []uint64 {
	select {
	case b := <-p.blocks:
		return b
	default:
		return nil
	}
}

// giveBlock keeps b for block, unless enough are kept.
func (p *orderPools) giveBlock(b []uint64) {
	select {
	case p.blocks <- b:
	default:
	}
}

func (p *orderPools) segment() *segment {
	select {
	case sg := <-p.segs:
		sg.clearEvents() // here, on the orderer's core (see recycle)
		return sg
	default:
		p.made++
		return newSegment(segmentSize(p.made - 1))
	}
}

// done returns an empty list for a delivery's segments to hand back:
// recycled, or nil for append to make. (Made for each delivery, it was
// an allocation every 2-3 k samples: 110-120 more on the 330 k more
// samples of TestAttributionAllocatesNothingPerSample.)
func (p *orderPools) done() []*segment {
	select {
	case d := <-p.donec:
		return d
	default:
		return nil
	}
}

func (p *orderPools) keys() []orderKey {
	select {
	case k := <-p.keyc:
		return k
	default:
		return make([]orderKey, 0, segmentEvents)
	}
}

// recycle takes back d's memory once its events were delivered.
//
// The segments' events are cleared when the orderer takes them again
// (segment): clearing them here, on the attributor's goroutine, which
// sets a children table's pace, took 14 ms of its 0.7 s on the -a -g
// recording. A pooled segment keeps its events' side bands until then.
func (p *orderPools) recycle(d delivery) {
	for _, sg := range d.done {
		sg.release(p.giveBlock)
		select {
		case p.segs <- sg:
		default:
		}
	}
	if cap(d.keys) > 0 {
		select {
		case p.keyc <- d.keys[:0]:
		default:
		}
	}
	if cap(d.done) > 0 {
		clear(d.done) // the segments go on without it
		select {
		case p.donec <- d.done[:0]:
		default:
		}
	}
}

// The deliveries in flight hold at most a 16th of the recording's data
// (flowLimitFor), between minFlowBytes and flowBytes. 4 MiB held 3.4 MB
// more than 1 MiB at the peak of a 76k-sample report, above perf's peak
// there, but with callchains (200+ bytes an event) 1 MiB left the
// decoder and the attributor waiting on each other: the -a -g table of
// 1.15 M samples (133 MB) took 0.36 s against 0.27-0.31 s at 4 MiB
// (scripts/abbench.sh, 7 runs; 8 MiB no faster, 16 MiB slower).
const (
	minFlowBytes = 1 << 20
	flowBytes    = 4 << 20
)

// flowLimitFor returns the flow limit for a recording of size bytes of
// data (0: unknown, as in a pipe).
func flowLimitFor(size uint64) int {
	if size == 0 {
		return flowBytes
	}
	return int(min(max(size/16, minFlowBytes), flowBytes))
}

// flowLimit bounds the memory of the deliveries sent and not yet
// delivered: the decoder waits for room before it sends (a delivery
// larger than the bound goes alone).
type flowLimit struct {
	mu       sync.Mutex
	room     sync.Cond
	inflight int
	limit    int
}

func newFlowLimit(limit int) *flowLimit {
	f := &flowLimit{limit: limit}
	f.room.L = &f.mu
	return f
}

func (f *flowLimit) acquire(n int) {
	f.mu.Lock()
	for f.inflight > 0 && f.inflight+n > f.limit {
		f.room.Wait()
	}
	f.inflight += n
	f.mu.Unlock()
}

func (f *flowLimit) release(n int) {
	f.mu.Lock()
	f.inflight -= n
	f.room.Broadcast()
	f.mu.Unlock()
}

// orderKey is a queued event and its timestamp.
type orderKey struct {
	time uint64
	e    *event
}

// slot copies *e into the segment *cur, or a new one (appended to segs
// for a queued event, to the next delivery's for one delivered at once)
// when it is full, and returns the copy; with copyChain, its callchain
// too, into the segment's chain storage (the caller's goes on being
// reused).
func (o *orderer) slot(cur **segment, queued bool, e *event, copyChain bool) *event {
	c := o.reserve(cur, queued)
	*c = *e
	if copyChain && len(e.addrs) > 0 {
		c.addrs = (*cur).chain(len(e.addrs), o.block)
		copy(c.addrs, e.addrs)
	}
	return c
}

// reserve returns the next event of the segment *cur (as slot takes
// it), zeroed, for the caller to fill: segments come zeroed (newSegment,
// orderPools.segment) and reserve hands each event out once.
func (o *orderer) reserve(cur **segment, queued bool) *event {
	if *cur == nil || len((*cur).events) == cap((*cur).events) {
		*cur = o.newSegment()
		if queued {
			o.segs = append(o.segs, *cur)
		} else {
			o.handBack(*cur)
		}
	}
	sg := *cur
	sg.events = sg.events[:len(sg.events)+1]
	sg.last = o.rounds
	return &sg.events[len(sg.events)-1]
}

func (o *orderer) newSegment() *segment {
	if o.segment != nil {
		return o.segment()
	}
	return newSegment(segmentEvents)
}

func (o *orderer) newKeys() []orderKey {
	if o.keyBuf != nil {
		return o.keyBuf()
	}
	return nil
}

// push queues a copy of *e (the caller reuses *e) at time t, or delivers
// it at once; with copyChain, of its callchain too (a view of the
// reader's buffer).
func (o *orderer) push(e *event, t uint64, copyChain bool) {
	if !queuedAt(t) {
		o.deliverNow(e, t, copyChain)
		return
	}
	o.queued(o.slot(&o.cur, true, e, copyChain), t)
}

// queuedAt reports whether an event of time t is queued; one without a
// timestamp (0, or all ones) is delivered at once.
func queuedAt(t uint64) bool { return t != 0 && t != ^uint64(0) }

// queued queues e, in its segment already, at time t.
func (o *orderer) queued(e *event, t uint64) {
	if len(o.fresh) == cap(o.fresh) {
		// Doubling: append grows a large slice by a quarter, which for
		// the 56k keys of a stream without FINISHED_ROUND allocated
		// 4.1 MB on the way to 0.9.
		o.fresh = slices.Grow(o.fresh, max(len(o.fresh), 256))
	}
	o.fresh = append(o.fresh, orderKey{t, e})
	if cap(e.addrs) > 0 {
		o.sized++
	}
	if t < o.lastFlush {
		o.unordered++
	}
	o.maxTime = max(o.maxTime, t)
	o.last = t
	o.bytes += eventSize + 8*len(e.addrs)
	if o.bytes > queueBound {
		// perf's queue at its size limit (ordered_events__queue with
		// OE_FLUSH__HALF): deliver up to the middle between the oldest
		// queued time and the last one queued.
		first := o.last
		for _, r := range o.rest {
			first = min(first, r.keys[0].time)
		}
		for _, k := range o.fresh {
			first = min(first, k.time)
		}
		limit := first
		if o.last > first {
			limit += (o.last - first) / 2
		}
		if o.onHalf != nil {
			o.onHalf()
		}
		o.flush(limit)
		o.compact()
	}
}

// deliverNow delivers a copy of *e, of time t, ahead of every queued event. Such
// events have segments of their own, handed back with the delivery that
// carries them.
func (o *orderer) deliverNow(e *event, t uint64, copyChain bool) {
	k := orderKey{t, o.slot(&o.immCur, false, e, copyChain)}
	o.emit(k)
	o.batch.bytes += deliveredSize(k.e)
	o.sendBatch()
}

// handBack adds segments to those the next delivery hands back.
func (o *orderer) handBack(segs ...*segment) {
	if o.batch.done == nil && o.doneBuf != nil {
		o.batch.done = o.doneBuf()
	}
	o.batch.done = append(o.batch.done, segs...)
}

// emit adds keys to the next delivery.
func (o *orderer) emit(keys ...orderKey) {
	if o.batch.keys == nil {
		o.batch.keys = o.newKeys()
	}
	o.batch.keys = append(o.batch.keys, keys...)
}

// sendBatch sends the delivery gathered so far once it holds enough
// events (minDelivery, deliveryBytes).
func (o *orderer) sendBatch() { o.sendIf(minDelivery) }

// sendIf sends the delivery gathered so far if it holds min events or
// deliveryBytes, or anything for min 0. The segment receiving immediate
// events goes with it, and a new one takes over.
func (o *orderer) sendIf(min int) {
	if len(o.batch.keys) < min && o.batch.bytes < deliveryBytes || len(o.batch.keys) == 0 && len(o.batch.done) == 0 {
		return
	}
	o.immCur = nil
	o.send(o.batch)
	o.batch = delivery{}
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

// round handles FINISHED_ROUND. Every event queued before the previous
// round has a time up to nextFlush, so this flush delivers them all: the
// segments whose last event came before it go back.
func (o *orderer) round() {
	o.flush(o.nextFlush)
	o.nextFlush = o.maxTime
	n := 0
	for n < len(o.segs) && (o.segs[n].last < o.rounds || len(o.rest) == 0) {
		n++
	}
	o.release(n)
	o.rounds++
	o.sendBatch()
}

// release hands the n oldest segments back with the next delivery.
func (o *orderer) release(n int) {
	if n == 0 {
		return
	}
	if n == len(o.segs) {
		o.cur = nil
	}
	o.handBack(o.segs[:n]...)
	o.segs = slices.Delete(o.segs, 0, n)
}

// compact copies the queued events into new segments and hands every
// old one back. A half flush (a stream without FINISHED_ROUND) may leave
// queued events anywhere, and a few of them would otherwise keep many
// segments.
func (o *orderer) compact() {
	old := o.segs
	o.segs, o.cur = nil, nil
	for _, r := range o.rest { // flush left nothing in fresh
		for i := range r.keys {
			// A chain in an old segment's storage moves with its event;
			// the others (in the recording, or with a user stack behind)
			// stay.
			e := r.keys[i].e
			r.keys[i].e = o.slot(&o.cur, true, e, cap(e.addrs) == len(e.addrs))
		}
	}
	o.handBack(old...)
	o.sendBatch()
}

// flush delivers queued events with time <= limit, in time order.
//
// The keys queued since the last flush are not sorted: they are a few
// ascending runs (one per CPU buffer perf flushed), which flush splits
// and keeps as runs beside those the last flush left (rest). What it
// delivers is a prefix of each run, found by binary search, merged
// straight into the deliveries; what is left of the runs is the new
// rest. A round delivers nearly all the runs of the round before it and
// a few keys of its own, so that on two CPUs each key moves once, from
// its run into a delivery. (Sorting the new keys when they came, merging
// them into the deliveries and moving what was left to the front of its
// buffer moved each three times: 45 ms of the -a table's 360 ms of CPU.)
// The keys of more than maxRestRuns CPUs are sorted into one run, and
// more than maxRestRuns runs left over merged into one, so that a flush
// merges few.
func (o *orderer) flush(limit uint64) {
	if len(o.fresh) == 0 && len(o.rest) == 0 {
		return
	}
	runs := append(o.runs[:0], o.rest...)
	if len(o.fresh) > 0 {
		if o.freshBuf == nil {
			o.freshBuf = o.spareBuf()
		}
		buf := o.freshBuf
		bounds := runBounds(o.bounds[:0], o.fresh)
		if len(bounds)-1 > maxRestRuns {
			// Many CPUs' runs: sorted into one, so that the flushes
			// merge few.
			buf.keys, o.tmp = mergeRuns(o.fresh, o.tmp, bounds)
			runs = append(runs, keyRun{buf.keys, buf})
		} else {
			buf.keys = o.fresh
			for i := 1; i < len(bounds); i++ {
				lo, hi := bounds[i-1], bounds[i]
				runs = append(runs, keyRun{buf.keys[lo:hi:hi], buf})
			}
		}
		o.bounds = bounds
		o.viewed = append(o.viewed, buf)
		o.fresh, o.freshBuf = nil, nil
	}
	parts := o.parts[:0]
	for i := range runs {
		n := keysUpTo(runs[i].keys, limit)
		if n > 0 {
			parts = append(parts, runs[i].keys[:n])
		}
		runs[i].keys = runs[i].keys[n:]
	}
	o.deliverParts(parts)
	rest := o.rest[:0]
	for _, r := range runs {
		if len(r.keys) > 0 {
			rest = append(rest, r)
		}
	}
	if len(rest) > maxRestRuns {
		rest = o.consolidate(rest)
	}
	o.rest = rest
	o.recycleBuffers()
	clear(parts)
	o.runs, o.parts = runs[:0], parts[:0]
	o.freshBuf = o.spareBuf()
	o.fresh = o.freshBuf.keys[:0]
}

// maxRestRuns is how many runs a flush leaves: the keys of two CPUs stay
// two runs, more are merged into one.
const maxRestRuns = 2

// keyRun is a run of queued keys sorted by time (equal times in the
// order they were queued), a view into buf's keys.
type keyRun struct {
	keys []orderKey
	buf  *keyBuf
}

// keyBuf holds the keys of one flush's new runs, or of merged ones.
type keyBuf struct{ keys []orderKey }

// spareBuf returns a buffer no run views: a spare one, or a new one.
func (o *orderer) spareBuf() *keyBuf {
	if n := len(o.spare); n > 0 {
		buf := o.spare[n-1]
		o.spare = o.spare[:n-1]
		return buf
	}
	return &keyBuf{}
}

// runBounds appends to bounds where keys' ascending runs begin and
// len(keys): 0, the start of each run after the first, len(keys).
func runBounds(bounds []int, keys []orderKey) []int {
	bounds = append(bounds, 0)
	for i := 1; i < len(keys); i++ {
		if keys[i].time < keys[i-1].time {
			bounds = append(bounds, i)
		}
	}
	return append(bounds, len(keys))
}

// keysUpTo returns how many of the sorted keys have a time up to limit.
func keysUpTo(keys []orderKey, limit uint64) int {
	i, _ := slices.BinarySearchFunc(keys, limit, func(k orderKey, t uint64) int {
		if k.time <= t {
			return -1
		}
		return 1
	})
	return i
}

// deliverParts delivers the sorted parts merged, an earlier part's key
// first on equal times.
func (o *orderer) deliverParts(parts [][]orderKey) {
	switch len(parts) {
	case 0:
	case 1:
		o.deliverMerged(parts[0], nil)
	case 2:
		o.deliverMerged(parts[0], parts[1])
	default:
		a, b, newer := parts[0], parts[1], parts[2:]
		n := 0
		for _, p := range newer {
			n += len(p)
		}
		if n <= (len(a)+len(b))/4 {
			// The last round's runs and the first keys of this one's.
			o.deliverAmong(a, b, o.merges[0].of(newer))
			return
		}
		h := len(parts) / 2
		o.deliverMerged(o.merges[0].of(parts[:h]), o.merges[1].of(parts[h:]))
	}
}

// deliverAmong delivers the sorted a, b and newer merged: a's key first
// on equal times, then b's, then newer's. newer holds few keys.
func (o *orderer) deliverAmong(a, b, newer []orderKey) {
	for len(newer) > 0 {
		t := newer[0].time
		i, j := keysUpTo(a, t), keysUpTo(b, t)
		o.deliverMerged(a[:i], b[:j])
		a, b = a[i:], b[j:]
		next := ^uint64(0)
		if len(a) > 0 {
			next = a[0].time
		}
		if len(b) > 0 {
			next = min(next, b[0].time)
		}
		k := 1
		for k < len(newer) && newer[k].time < next {
			k++
		}
		o.deliverMerged(newer[:k], nil)
		newer = newer[k:]
	}
	o.deliverMerged(a, b)
}

// deliverMerged delivers the sorted a and b merged (a's key first on
// equal times) in deliveries of a key slice's capacity at most: a
// stream without FINISHED_ROUND flushes all its events at its end, and
// one delivery of them grew its keys (a MB for 56k samples) twice over.
func (o *orderer) deliverMerged(a, b []orderKey) {
	for len(a)+len(b) > 0 {
		if o.batch.keys == nil {
			o.batch.keys = o.newKeys()
		}
		keys := o.batch.keys
		from := len(keys)
		n := min(max(segmentEvents-from, 1), len(a)+len(b))
		keys = slices.Grow(keys, n)[:from+n]
		i, j := mergeSome(keys[from:], a, b)
		a, b = a[i:], b[j:]
		o.batch.keys = keys
		o.lastFlush = keys[len(keys)-1].time
		if o.sized == 0 {
			// Every queued event is eventSize: no need to read them.
			o.bytes -= n * eventSize
			o.batch.bytes += n * eventSize
		} else {
			for _, k := range keys[from:] {
				if cap(k.e.addrs) > 0 {
					o.sized--
				}
				o.bytes -= eventSize + 8*len(k.e.addrs)
				o.batch.bytes += deliveredSize(k.e)
			}
		}
		o.sendIf(segmentEvents)
	}
}

// consolidate merges runs into one, in a buffer of its own. (It is
// seldom called: a flush's limit leaves the runs of one round at most.)
func (o *orderer) consolidate(runs []keyRun) []keyRun {
	buf := o.spareBuf()
	parts := make([][]orderKey, len(runs))
	for i, r := range runs {
		parts[i] = r.keys
	}
	buf.keys, o.tmp = concatSorted(buf.keys, o.tmp, parts)
	o.viewed = append(o.viewed, buf)
	clear(runs[1:])
	return append(runs[:0], keyRun{buf.keys, buf})
}

// recycleBuffers makes the buffers no run of rest views spare.
func (o *orderer) recycleBuffers() {
	kept := o.viewed[:0]
	for _, buf := range o.viewed {
		if slices.ContainsFunc(o.rest, func(r keyRun) bool { return r.buf == buf }) {
			kept = append(kept, buf)
		} else {
			o.spare = append(o.spare, buf)
		}
	}
	clear(o.viewed[len(kept):])
	o.viewed = kept
}

// mergeScratch merges sorted parts into one, in buffers it keeps.
type mergeScratch struct{ keys, tmp []orderKey }

// of returns parts merged (an earlier part's key first on equal times),
// valid until its next use: the part itself when there is one.
func (m *mergeScratch) of(parts [][]orderKey) []orderKey {
	if len(parts) == 1 {
		return parts[0]
	}
	m.keys, m.tmp = concatSorted(m.keys, m.tmp, parts)
	return m.keys
}

// concatSorted puts parts, each sorted, one after the other in keys
// (grown as need be) and sorts them there (sortKeys): an earlier part's
// key first on equal times. It returns the sorted keys and the spare
// buffer, tmp's or keys's.
func concatSorted(keys, tmp []orderKey, parts [][]orderKey) (sorted, spare []orderKey) {
	keys = keys[:0]
	for _, p := range parts {
		keys = append(keys, p...)
	}
	return sortKeys(keys, tmp)
}

// sortKeys sorts keys by time, equal times keeping their order, and
// returns the sorted slice and the spare buffer. The keys between two
// rounds are a few ascending runs (one per CPU buffer perf flushed), so
// it merges runs bottom-up: O(n log runs).
func sortKeys(keys, tmp []orderKey) ([]orderKey, []orderKey) {
	return mergeRuns(keys, tmp, runBounds(nil, keys))
}

// mergeRuns is sortKeys of keys whose runs begin at bounds (runBounds),
// which it overwrites.
func mergeRuns(keys, tmp []orderKey, bounds []int) ([]orderKey, []orderKey) {
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
func mergeKeys(dst, a, b []orderKey) { mergeSome(dst[:len(a)+len(b)], a, b) }

// mergeSome fills dst from the sorted a and b, merged (a first on equal
// times), and returns how many of each it took; len(dst) must be at most
// len(a)+len(b). It does not branch on the comparison: two CPUs' samples
// interleave unpredictably, and a mispredicted branch a key was most of
// the merge (BenchmarkStageOrder: 25 → 20 ns a sample). It merges from
// both ends of what it takes at once: each end's next key waits on the
// comparison before it, and two ends overlap their waits (3.4 → 2.0 ns a
// key in cache).
func mergeSome(dst, a, b []orderKey) (i, j int) {
	n := len(dst)
	i = splitMerged(a, b, n)
	j = n - i
	a, b = a[:i], b[:j]
	// The front takes n/2 keys, the back the rest; each stops early
	// when one side is used up at its end.
	fa, fb, k := 0, 0, 0
	ba, bb, kb := len(a), len(b), n
	for ; k < n/2 && fa < len(a) && fb < len(b) && ba > 0 && bb > 0; k++ {
		x, y := a[fa], b[fb]
		t, e, fromB := x.time, x.e, 0
		if y.time < t {
			t, e, fromB = y.time, y.e, 1
		}
		dst[k] = orderKey{t, e}
		fb += fromB
		fa += 1 - fromB

		x, y = a[ba-1], b[bb-1]
		t, e, fromA := y.time, y.e, 0
		if x.time > t {
			t, e, fromA = x.time, x.e, 1
		}
		kb--
		dst[kb] = orderKey{t, e}
		ba -= fromA
		bb -= 1 - fromA
	}
	// The middle: few keys, or one side's only.
	for ; k < kb; k++ {
		if fa < ba && (fb == bb || a[fa].time <= b[fb].time) {
			dst[k] = a[fa]
			fa++
		} else {
			dst[k] = b[fb]
			fb++
		}
	}
	return i, j
}

// splitMerged returns how many of the first n keys of a and b merged (a
// first on equal times) are a's: the least i with a[i] after b[n-i-1].
func splitMerged(a, b []orderKey, n int) int {
	lo, hi := max(0, n-len(b)), min(n, len(a))
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		if j := n - i; j > 0 && a[i].time <= b[j-1].time {
			lo = i + 1
		} else {
			hi = i
		}
	}
	return lo
}

// finish delivers everything left and hands every segment back.
func (o *orderer) finish() {
	o.flush(^uint64(0))
	o.release(len(o.segs))
	o.sendIf(0)
}

// cpu returns a SAMPLE's CPU, kept in ppid: the event stays 80 bytes.
func (e *event) cpu() uint32 { return e.ppid }
