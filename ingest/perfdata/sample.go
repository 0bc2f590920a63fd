package perfdata

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// idPos returns the u64 index of the sample id in a SAMPLE body with sample
// type t, or -1 (perf's evsel__calc_id_pos).
func idPos(t SampleFormat) int {
	if t&SampleFormatIdentifier != 0 {
		return 0
	}
	if t&SampleFormatID == 0 {
		return -1
	}
	n := 0
	for _, b := range []SampleFormat{SampleFormatIP, SampleFormatTID, SampleFormatTime, SampleFormatAddr} {
		if t&b != 0 {
			n++
		}
	}
	return n
}

// isPos returns the u64 index, counted from the end, of the id in a
// sample_id trailer with sample type t, or -1 (perf's evsel__calc_is_pos).
func isPos(t SampleFormat) int {
	if t&SampleFormatIdentifier != 0 {
		return 1
	}
	if t&SampleFormatID == 0 {
		return -1
	}
	n := 1
	if t&SampleFormatCPU != 0 {
		n++
	}
	if t&SampleFormatStreamID != 0 {
		n++
	}
	return n
}

// sampleAttr finds the attr of a SAMPLE body b.
func (r *Reader) sampleAttr(b []byte, off int64) (*Attr, error) {
	switch len(r.attrs) {
	case 0:
		return nil, formatError(off, "SAMPLE at file offset %#x: no attr seen before the first sample", off)
	case 1:
		return r.attrs[0], nil
	}
	p := r.idPos0
	if p < 0 {
		return r.attrs[0], nil
	}
	if 8*(p+1) > len(b) {
		return nil, formatError(off, "SAMPLE at file offset %#x: %d-byte body has no room for the sample id at byte %d", off, len(b), 8*p)
	}
	return r.attrByID(r.u64(b[8*p:]), "SAMPLE", off)
}

func (r *Reader) attrByID(id uint64, what string, off int64) (*Attr, error) {
	if id == 0 { // synthesized records
		return r.attrs[0], nil
	}
	if i := id - r.idBase; i < uint64(len(r.idDense)) && r.idDense[i] != nil {
		return r.idDense[i], nil
	}
	if a, ok := r.idToAttr[id]; ok {
		return a, nil
	}
	return nil, formatError(off, "%s at file offset %#x: sample id %d belongs to no attr", what, off, id)
}

// decodeSample decodes the SAMPLE record rec (header included) into s.
func (r *Reader) decodeSample(rec []byte, off int64, s *Sample) error {
	body := rec[8:]
	a, err := r.sampleAttr(body, off)
	if err != nil {
		return err
	}
	l := r.layout(a)
	fast := r.bo == binary.LittleEndian && l.fast
	if fast && r.sampleClean {
		r.resetFast(s, a)
		if decodeSampleFast(body, l, s, &r.chainBuf) {
			return nil
		}
	}
	keep := *s // reuse slice storage
	*s = Sample{
		Attr:           a,
		Callchain:      r.chainBuf[:0], // not keep's: it may be the record's bytes
		Branches:       keep.Branches[:0],
		BranchCounters: keep.BranchCounters[:0],
		RegsUser:       keep.RegsUser[:0],
		RegsIntr:       keep.RegsIntr[:0],
		Read:           ReadValues{Values: keep.Read.Values[:0]},
	}
	if fast && decodeSampleFast(body, l, s, &r.chainBuf) {
		r.sampleClean = true
		return nil
	}
	r.sampleClean = false
	return r.decodeSampleBody(body, off, a, s)
}

// resetFast readies s, a clean Sample (Reader.sampleClean), for
// decodeSampleFast with attr a: only the fast path's fields can be
// non-zero, so it clears just those (a whole-Sample reset costs more
// than the decoding).
func (r *Reader) resetFast(s *Sample, a *Attr) {
	s.Attr, s.Identifier, s.IP, s.Pid, s.Tid, s.Time, s.Addr = a, 0, 0, 0, 0, 0, 0
	s.ID, s.StreamID, s.CPU, s.Res, s.Period, s.Callchain = 0, 0, 0, 0, 0, r.chainBuf[:0]
}

// decodeSampleBody is the general decoder of decodeSample: every field,
// with an error naming the file offset of the first that does not fit.
func (r *Reader) decodeSampleBody(body []byte, off int64, a *Attr, s *Sample) error {
	c := cursor{b: body, bo: r.bo, base: off + 8, what: "SAMPLE"}
	t := a.SampleType
	if t&SampleFormatIdentifier != 0 {
		s.Identifier = c.u64("identifier")
	}
	if t&SampleFormatIP != 0 {
		s.IP = c.u64("ip")
	}
	if t&SampleFormatTID != 0 {
		s.Pid = c.u32("pid")
		s.Tid = c.u32("tid")
	}
	if t&SampleFormatTime != 0 {
		s.Time = c.u64("time")
	}
	if t&SampleFormatAddr != 0 {
		s.Addr = c.u64("addr")
	}
	if t&SampleFormatID != 0 {
		s.ID = c.u64("id")
	}
	if t&SampleFormatStreamID != 0 {
		s.StreamID = c.u64("stream_id")
	}
	if t&SampleFormatCPU != 0 {
		s.CPU = c.u32("cpu")
		s.Res = c.u32("cpu res")
	}
	if t&SampleFormatPeriod != 0 {
		s.Period = c.u64("period")
	}
	if t&SampleFormatRead != 0 {
		readValues(&c, a.ReadFormat, &s.Read)
	}
	if t&SampleFormatCallchain != 0 {
		n := c.count("callchain nr", 8)
		s.Callchain = c.u64s("callchain ips", n, s.Callchain)
		r.chainBuf = s.Callchain
	}
	if t&SampleFormatRaw != 0 {
		n := c.u32("raw size")
		s.Raw = c.bytes("raw data", int(n))
	}
	if t&SampleFormatBranchStack != 0 {
		n := c.count("branch nr", 24)
		if a.BranchSampleType&BranchHWIndex != 0 {
			s.BranchHWIndex = c.u64("branch hw_idx")
		}
		s.BranchesAt = c.base + int64(c.pos)
		if c.need("branch entries", 24*n) {
			for i := 0; i < n; i++ {
				s.Branches = append(s.Branches, BranchEntry{
					From: c.u64("branch from"), To: c.u64("branch to"), Flags: c.u64("branch flags"),
				})
			}
		}
		if a.BranchSampleType&BranchCounters != 0 {
			s.BranchCounters = c.u64s("branch counters", n, s.BranchCounters)
		}
	}
	if t&SampleFormatRegsUser != 0 {
		s.RegsUserABI = c.u64("regs_user abi")
		if s.RegsUserABI != 0 {
			s.RegsUser = c.u64s("regs_user", bits.OnesCount64(a.SampleRegsUser), s.RegsUser)
		}
	}
	if t&SampleFormatStackUser != 0 {
		n := c.u64("stack_user size")
		if n > uint64(len(body)) {
			c.fail("stack_user data", int(min(n, 1<<31)))
		} else {
			s.StackUser = c.bytes("stack_user data", int(n))
			if n != 0 {
				s.StackUserDyn = c.u64("stack_user dyn_size")
			}
		}
	}
	if t&(SampleFormatWeight|SampleFormatWeightStruct) != 0 {
		s.Weight = c.u64("weight")
	}
	if t&SampleFormatDataSrc != 0 {
		s.DataSrc = c.u64("data_src")
	}
	if t&SampleFormatTransaction != 0 {
		s.Transaction = c.u64("transaction")
	}
	if t&SampleFormatRegsIntr != 0 {
		s.RegsIntrABI = c.u64("regs_intr abi")
		if s.RegsIntrABI != 0 {
			s.RegsIntr = c.u64s("regs_intr", bits.OnesCount64(a.SampleRegsIntr), s.RegsIntr)
		}
	}
	if t&SampleFormatPhysAddr != 0 {
		s.PhysAddr = c.u64("phys_addr")
	}
	if t&SampleFormatCgroup != 0 {
		s.Cgroup = c.u64("cgroup")
	}
	if t&SampleFormatDataPageSize != 0 {
		s.DataPageSize = c.u64("data_page_size")
	}
	if t&SampleFormatCodePageSize != 0 {
		s.CodePageSize = c.u64("code_page_size")
	}
	if t&SampleFormatAux != 0 {
		n := c.u64("aux size")
		if n > uint64(len(body)) {
			c.fail("aux data", int(min(n, 1<<31)))
		} else {
			s.Aux = c.bytes("aux data", int(n))
		}
	}
	return c.err
}

func readValues(c *cursor, f ReadFormat, v *ReadValues) {
	one := func() ReadValue {
		var x ReadValue
		x.Value = c.u64("read value")
		return x
	}
	if f&ReadGroup == 0 {
		x := one()
		if f&ReadTotalTimeEnabled != 0 {
			v.TimeEnabled = c.u64("read time_enabled")
		}
		if f&ReadTotalTimeRunning != 0 {
			v.TimeRunning = c.u64("read time_running")
		}
		if f&ReadID != 0 {
			x.ID = c.u64("read id")
		}
		if f&ReadLost != 0 {
			x.Lost = c.u64("read lost")
		}
		v.Values = append(v.Values, x)
		return
	}
	per := 8
	if f&ReadID != 0 {
		per += 8
	}
	if f&ReadLost != 0 {
		per += 8
	}
	nr := c.u64("read nr")
	if f&ReadTotalTimeEnabled != 0 {
		v.TimeEnabled = c.u64("read time_enabled")
	}
	if f&ReadTotalTimeRunning != 0 {
		v.TimeRunning = c.u64("read time_running")
	}
	if c.err != nil {
		return
	}
	if nr > uint64(len(c.b)-c.pos)/uint64(per) {
		c.fail("read group values", int(min(nr*uint64(per), 1<<31)))
		return
	}
	for i := uint64(0); i < nr; i++ {
		x := one()
		if f&ReadID != 0 {
			x.ID = c.u64("read id")
		}
		if f&ReadLost != 0 {
			x.Lost = c.u64("read lost")
		}
		v.Values = append(v.Values, x)
	}
}

// parseSampleID decodes the sample_id trailer of the non-SAMPLE record rec
// (header included). It returns the zero SampleID when the record type has
// no trailer or the attrs have no sample_id_all.
func (r *Reader) parseSampleID(rec []byte, off int64, what string) (SampleID, error) {
	var id SampleID
	if len(r.attrs) == 0 {
		return id, nil
	}
	first := r.attrs[0]
	if first.IDHdrSize() == 0 {
		id.Attr = first
		return id, nil
	}
	// The record's attr is the one its id names (evlist__event2evsel),
	// and its own sample_type lays out the trailer, from the record's
	// end (perf_evsel__parse_id_sample): attrs may differ in it, as long
	// as the id sits at the same place from the end.
	a := first
	if len(r.attrs) > 1 {
		if p := isPos(first.SampleType); p > 0 {
			if len(rec)-8 < 8*p {
				return id, formatError(off, "%s at file offset %#x: %d-byte record has no room for its sample id", what, off, len(rec))
			}
			var err error
			a, err = r.attrByID(r.bo.Uint64(rec[len(rec)-8*p:]), what, off)
			if err != nil {
				return id, err
			}
		}
	}
	id.Attr = a
	n := a.IDHdrSize()
	if n == 0 {
		return id, nil // an attr without sample_id_all: no trailer is read
	}
	if len(rec)-8 < n {
		return id, formatError(off, "%s at file offset %#x: %d-byte record has no room for the %d-byte sample_id trailer", what, off, len(rec), n)
	}
	start := len(rec) - n
	c := cursor{b: rec[start:], bo: r.bo, base: off + int64(start), what: what + " sample_id"}
	t := a.SampleType
	if t&SampleFormatTID != 0 {
		id.Pid = c.u32("pid")
		id.Tid = c.u32("tid")
	}
	if t&SampleFormatTime != 0 {
		id.Time = c.u64("time")
	}
	if t&SampleFormatID != 0 {
		id.ID = c.u64("id")
	}
	if t&SampleFormatStreamID != 0 {
		id.StreamID = c.u64("stream_id")
	}
	if t&SampleFormatCPU != 0 {
		id.CPU = c.u32("cpu")
		id.Res = c.u32("cpu res")
	}
	if t&SampleFormatIdentifier != 0 {
		id.Identifier = c.u64("identifier")
	}
	return id, c.err
}

// fixedSampleFields are the fixed-size fields that precede READ and
// CALLCHAIN in a SAMPLE body, in their order.
const fixedSampleFields = SampleFormatIdentifier | SampleFormatIP | SampleFormatTID | SampleFormatTime |
	SampleFormatAddr | SampleFormatID | SampleFormatStreamID | SampleFormatCPU | SampleFormatPeriod

// decodeSampleFast decodes a little-endian SAMPLE body of layout l
// that has only fixed-size fields and a callchain (what perf record -a
// [-g] writes) with one bounds check for the fixed part, the hot path of
// system-wide recordings. It reports false, leaving the work to the
// general decoder (and its errors), for any other layout or a body that
// is too short.
//
// The callchain is a view of b where viewWords allows, else copied into
// *buf's storage, which *buf then holds for the next record.
func decodeSampleFast(b []byte, l *sampleLayout, s *Sample, buf *[]uint64) bool {
	if !l.fits(b) {
		return false
	}
	s.Identifier, s.IP, s.Time, s.Addr = word(b, l.identifier), word(b, l.ip), word(b, l.time), word(b, l.addr)
	s.ID, s.StreamID, s.Period = word(b, l.id), word(b, l.streamID), word(b, l.period)
	tid, cpu := word(b, l.tid), word(b, l.cpu)
	s.Pid, s.Tid, s.CPU, s.Res = uint32(tid), uint32(tid>>32), uint32(cpu), uint32(cpu>>32)
	if !l.chain {
		return true
	}
	nr, ok := l.chainLen(b)
	if !ok {
		return false
	}
	p := l.size + 8
	if v, ok := viewWords(b[p : p+8*nr]); ok {
		s.Callchain = v // the record's own bytes: no copy
		return true
	}
	c := (*buf)[:0]
	for i := range nr {
		c = append(c, binary.LittleEndian.Uint64(b[p+8*i:]))
	}
	s.Callchain, *buf = c, c
	return true
}

// hostLittleEndian reports whether the host stores words little-endian.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// viewWords returns the little-endian words of b as a slice sharing b's
// memory (length and capacity len(b)/8), when the host is little-endian
// and b 8-byte aligned; perf's records are, in files and in pipes, so
// the fast path reads callchains without copying them. Callers must not
// write to the slice: b may be a read-only mapping.
func viewWords(b []byte) ([]uint64, bool) {
	if !hostLittleEndian || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return nil, false
	}
	n := len(b) / 8
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n)[:n:n], true
}
