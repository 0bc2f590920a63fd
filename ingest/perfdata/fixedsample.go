package perfdata

import "encoding/binary"

// FixedSample is what a SAMPLE record of fixed-size fields holds for a
// flat profile, as NextFixedSample reads it: the fields of Sample its
// attr's sample type has, zero for the others.
type FixedSample struct {
	Attr          *Attr
	IP, Time      uint64
	Period        uint64
	Pid, Tid, CPU uint32
	Misc          uint16
}

// CPUMode returns the sample's cpumode (the record's misc bits).
func (s *FixedSample) CPUMode() CPUMode { return CPUMode(s.Misc & MiscCPUModeMask) }

// NextFixedSample reads the next record into s and reports true when it
// is a SAMPLE whose attr's sample type has only fixed-size fields (what
// perf record -a writes) or, with skipChain, those and a callchain,
// which it steps over. It reads nothing and reports false for any other
// record, a record not whole in the read buffer, a compressed, mapped,
// big-endian or multi-file reading, and a body that does not fit its
// sample type: Next then reads the record, with its errors.
//
// It is Next for the hot path of flat tables, which need none of a
// Sample's other fields: the fields go straight to s, not through a
// Sample, its reset and its Record interface (a third of the decoding
// goroutine's time on a 2.5 M-sample -a table). After it, Raw and Stats
// are as after Next; Record returns nil.
func (r *Reader) NextFixedSample(s *FixedSample, skipChain bool) bool {
	in := r.in
	if r.err != nil || r.eof || r.closed || r.m != nil || r.z != nil || r.streams != nil || r.big || in == nil || in.w-in.r < 8 {
		return false
	}
	buf := in.buf[in.r:in.w]
	size := int(binary.LittleEndian.Uint16(buf[6:]))
	if RecordType(binary.LittleEndian.Uint32(buf)) != RecordSample || size < 8 || size > len(buf) {
		return false
	}
	rec := buf[:size:size]
	off := r.pos
	b := rec[8:]
	a, l := r.fixedAttr(b, off)
	if a == nil || l.chain && !skipChain {
		return false
	}
	if !l.fits(b) {
		return false
	}
	if _, ok := l.chainLen(b); l.chain && !ok {
		return false
	}
	tid := word(b, l.tid)
	// Field by field: a composite literal is built on the stack and then
	// copied 16 bytes at a time, loads the 8-byte stores before them
	// cannot forward to (a third of this function's time).
	s.Attr, s.Misc = a, binary.LittleEndian.Uint16(rec[4:])
	s.IP, s.Time, s.Period = word(b, l.ip), word(b, l.time), word(b, l.period)
	s.Pid, s.Tid, s.CPU = uint32(tid), uint32(tid>>32), uint32(word(b, l.cpu))
	in.r += size
	r.pos += int64(size)
	r.rawData, r.rawOff, r.rawCompressed = rec, off, false
	r.rec = nil
	r.stats.Samples++
	r.stats.Records++
	r.byType[RecordSample]++
	return true
}

// fixedAttr returns the attr of the little-endian sample body b and its
// layout, nil for none (Next then reports the error), for the fast paths
// (NextFixedSample, nextSample). The last sample's answer is kept by its
// id: a CPU's samples come in runs, one id each, and the lookup
// (sampleAttr, layout) took a fifth of NextFixedSample's time on a
// 2.6 M-sample -a recording.
func (r *Reader) fixedAttr(b []byte, off int64) (*Attr, *sampleLayout) {
	var id uint64 // 0 for the one attr's samples
	if p := r.idPos0; len(r.attrs) > 1 && p >= 0 {
		if 8*(p+1) > len(b) {
			return nil, nil
		}
		id = binary.LittleEndian.Uint64(b[8*p:]) // the caller read little-endian
	}
	if r.lastFixed.attr != nil && r.lastFixed.id == id {
		return r.lastFixed.attr, r.lastFixed.layout
	}
	a, err := r.sampleAttr(b, off)
	if err != nil {
		return nil, nil
	}
	r.lastFixed = fixedAttrCache{id: id, attr: a, layout: r.layout(a)}
	return a, r.lastFixed.layout
}

// fixedAttrCache is fixedAttr's last answer: the attr and layout of
// sample id. addAttr and setID clear it.
type fixedAttrCache struct {
	id     uint64
	attr   *Attr
	layout *sampleLayout
}
