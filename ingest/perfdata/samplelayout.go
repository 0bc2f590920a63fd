package perfdata

import "encoding/binary"

// sampleLayout is where the SAMPLE bodies of one sample type hold the
// fixed-size fields that precede READ and CALLCHAIN, as byte offsets.
// Reader.addAttr computes it once per attr, so the fast decoders
// (decodeSampleFast, NextFixedSample) read each field at its offset
// instead of walking the sample type for every record: the one owner of
// the fields' order.
type sampleLayout struct {
	fast  bool // only fixed-size fields, and maybe a callchain
	chain bool // a callchain follows the fixed fields
	size  int  // bytes of the fixed fields; the callchain's nr follows

	// Byte offsets of the fields, -1 for those the type does not have.
	identifier, ip, tid, time, addr, id, streamID, cpu, period int
}

// slowLayout is the layout of a type the fast decoders do not take.
var slowLayout = sampleLayout{}

// newSampleLayout returns the layout of sample type t.
func newSampleLayout(t SampleFormat) sampleLayout {
	l := sampleLayout{
		fast:  t&^(fixedSampleFields|SampleFormatCallchain) == 0,
		chain: t&SampleFormatCallchain != 0,
	}
	at := func(f SampleFormat) int {
		if t&f == 0 {
			return -1
		}
		l.size += 8
		return l.size - 8
	}
	// The order of the body in perf_event_open(2), fixedSampleFields.
	l.identifier = at(SampleFormatIdentifier)
	l.ip = at(SampleFormatIP)
	l.tid = at(SampleFormatTID)
	l.time = at(SampleFormatTime)
	l.addr = at(SampleFormatAddr)
	l.id = at(SampleFormatID)
	l.streamID = at(SampleFormatStreamID)
	l.cpu = at(SampleFormatCPU)
	l.period = at(SampleFormatPeriod)
	return l
}

// fits reports whether the fast decoders take b, a body of layout l:
// the layout is fast and b holds its fixed fields.
func (l *sampleLayout) fits(b []byte) bool { return l.fast && len(b) >= l.size }

// chainLen returns the callchain's length (nr) in b, a body of layout l
// whose fixed fields fit: false when l has no callchain, or nr and the
// words it counts do not fit in b.
func (l *sampleLayout) chainLen(b []byte) (int, bool) {
	if !l.chain || len(b)-l.size < 8 {
		return 0, false
	}
	nr := binary.LittleEndian.Uint64(b[l.size:])
	if nr > uint64(len(b)-l.size-8)/8 {
		return 0, false
	}
	return int(nr), true
}

// word returns the little-endian word of b at offset off, 0 for -1.
func word(b []byte, off int) uint64 {
	if off < 0 {
		return 0
	}
	return binary.LittleEndian.Uint64(b[off:])
}

// layout returns the layout of a, one of r's attrs (addAttr keeps the
// two in step), or slowLayout for an attr that is not.
func (r *Reader) layout(a *Attr) *sampleLayout {
	if a.Index < len(r.layouts) && r.attrs[a.Index] == a {
		return &r.layouts[a.Index]
	}
	return &slowLayout
}
