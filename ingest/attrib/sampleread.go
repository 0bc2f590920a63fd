package attrib

import (
	"fmt"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// readValue is one PERF_SAMPLE_READ counter of a sample, with the event
// its id belongs to. perf 6.1 delivers a sample whose event reads
// counters (evlist__deliver_sample, util/session.c) not as itself but
// once per counter — every member of a group with PERF_FORMAT_GROUP, as
// leader sampling ("{cycles,instructions}:S") records — as a sample of
// the counter's event whose period is the counter's growth since the
// last sample that read it (deliver_sample_value).
type readValue struct {
	value, id uint64
	attr      uint16 // the index of the attr with this id
	known     bool   // some attr has the id (evlist__id2sid)
}

// readValuesOf returns a sample's counters with their events, found by
// id as the reader found the sample's own (perf's id hash,
// evlist__id2sid).
func readValuesOf(r *perfdata.Reader, vs []perfdata.ReadValue) []readValue {
	out := make([]readValue, len(vs))
	for i, v := range vs {
		a, ok := r.AttrByID(v.ID)
		out[i] = readValue{value: v.Value, id: v.ID, attr: attrIndex(r, a), known: ok}
	}
	return out
}

// sampleReads delivers a sample with counters as perf does (eachRead).
func (a *attributor) sampleReads(e *event) error { return a.eachRead(e, a.sample) }

// eachRead calls deliver once per counter of e whose id is known and
// whose value grew since the id's last sample, with e as a sample of the
// counter's event and the growth as its period. Unknown ids are counted
// (Result.UnknownIDs). A group of no counters is an error, as in perf
// 6.1, whose deliver_sample_group returns -EINVAL for it (and perf
// report stops: "failed to process sample").
func (a *attributor) eachRead(e *event, deliver func(*event) error) error {
	if len(e.side.reads) == 0 {
		return fmt.Errorf("attrib: the sample at file offset %#x reads a group of no counters (perf 6.1 stops there: deliver_sample_group's -EINVAL)", e.side.off)
	}
	if a.readPeriods == nil {
		a.readPeriods = make(map[uint64]uint64)
	}
	for _, v := range e.side.reads {
		if !v.known {
			a.res.UnknownIDs++
			continue
		}
		period := v.value - a.readPeriods[v.id]
		a.readPeriods[v.id] = v.value
		if period == 0 {
			continue // "There's no reason to deliver sample for zero period"
		}
		e.attr, e.period = v.attr, period
		if err := deliver(e); err != nil {
			return err
		}
	}
	return nil
}
