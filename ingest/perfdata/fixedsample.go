package perfdata

import (
	"encoding/binary"
	"math/bits"
)

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
	le := binary.LittleEndian
	w := in.buf[in.r:in.w]
	size := int(le.Uint16(w[6:]))
	if RecordType(le.Uint32(w)) != RecordSample || size < 8 || size > len(w) {
		return false
	}
	rec := w[:size:size]
	off := r.pos
	a, err := r.sampleAttr(rec[8:], off)
	if err != nil {
		return false
	}
	t := a.SampleType
	if t&^(fixedSampleFields|SampleFormatCallchain) != 0 || t&SampleFormatCallchain != 0 && !skipChain {
		return false
	}
	b := rec[8:]
	n := 8 * bits.OnesCount64(uint64(t&fixedSampleFields))
	if len(b) < n {
		return false
	}
	if t&SampleFormatCallchain != 0 {
		if len(b)-n < 8 || le.Uint64(b[n:]) > uint64(len(b)-n-8)/8 {
			return false
		}
	}
	*s = FixedSample{Attr: a, Misc: le.Uint16(rec[4:])}
	p := 0
	if t&SampleFormatIdentifier != 0 {
		p += 8
	}
	if t&SampleFormatIP != 0 {
		s.IP = le.Uint64(b[p:])
		p += 8
	}
	if t&SampleFormatTID != 0 {
		s.Pid, s.Tid = le.Uint32(b[p:]), le.Uint32(b[p+4:])
		p += 8
	}
	if t&SampleFormatTime != 0 {
		s.Time = le.Uint64(b[p:])
		p += 8
	}
	if t&SampleFormatAddr != 0 {
		p += 8
	}
	if t&SampleFormatID != 0 {
		p += 8
	}
	if t&SampleFormatStreamID != 0 {
		p += 8
	}
	if t&SampleFormatCPU != 0 {
		s.CPU = le.Uint32(b[p:])
		p += 8
	}
	if t&SampleFormatPeriod != 0 {
		s.Period = le.Uint64(b[p:])
	}
	in.r += size
	r.pos += int64(size)
	r.rawData, r.rawOff, r.rawCompressed = rec, off, false
	r.rec = nil
	r.stats.Samples++
	r.stats.Records++
	r.byType[RecordSample]++
	return true
}
