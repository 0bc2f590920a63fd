package attrib

import (
	"slices"

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
)

// event is a record copied out of the reader (whose buffers are reused)
// with only what attribution needs.
type event struct {
	kind eventKind
	time uint64
	// sample
	cpumode   uint8
	pid, tid  uint32
	ip        uint64
	period    uint64
	callchain []uint64
	// side band
	misc       uint16 // FORK: the record's misc (machine.MiscForkExec)
	mmap       machine.Mmap
	ppid, ptid uint32
	ksym       machine.Ksymbol
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
	maxTime   uint64
	nextFlush uint64
	deliver   func(*event) error
}

func (o *orderer) push(e event) error {
	if e.time == 0 || e.time == ^uint64(0) {
		return o.deliver(&e)
	}
	o.queue = append(o.queue, e)
	o.maxTime = max(o.maxTime, e.time)
	return nil
}

// round handles FINISHED_ROUND.
func (o *orderer) round() error {
	err := o.flush(o.nextFlush)
	o.nextFlush = o.maxTime
	return err
}

// flush delivers queued events with time <= limit, in time order.
func (o *orderer) flush(limit uint64) error {
	if len(o.queue) == 0 {
		return nil
	}
	slices.SortStableFunc(o.queue, func(a, b event) int {
		switch {
		case a.time < b.time:
			return -1
		case a.time > b.time:
			return 1
		}
		return 0
	})
	n := 0
	for n < len(o.queue) && o.queue[n].time <= limit {
		if err := o.deliver(&o.queue[n]); err != nil {
			return err
		}
		n++
	}
	rest := copy(o.queue, o.queue[n:])
	clear(o.queue[rest:])
	o.queue = o.queue[:rest]
	return nil
}

// finish delivers everything left.
func (o *orderer) finish() error { return o.flush(^uint64(0)) }
