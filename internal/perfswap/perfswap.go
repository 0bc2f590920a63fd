// Package perfswap rewrites a little-endian perf.data recording (file or
// pipe mode) in big-endian byte order, field by field, as a big-endian perf
// would have written it: the file header, attrs (including the attr flag
// bit field, which a big-endian compiler allocates from the top bit), id
// arrays, every record and its sample_id trailer, and the feature sections
// perfdata decodes. It exists so that readers can be checked on both byte
// orders with real recordings; it shares no code with the reader.
//
// Limits: compressed records are left as they are (swapping their payload
// means recompressing it), SAMPLE fields after CALLCHAIN are not swapped,
// and only the first attr's layout is used for every record.
package perfswap

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

const (
	fileHeaderSize = 104
	pipeHeaderSize = 16
)

// beSwapper re-encodes a little-endian recording in big-endian, field by
// field. It is written independently of the reader (it walks the layouts
// itself).
type beSwapper struct {
	in, out []byte
	le      binary.ByteOrder
	attr    struct {
		sampleType         perfdata.SampleFormat
		readFormat         perfdata.ReadFormat
		branchType         uint64
		regsUser, regsIntr uint64
		idHdr              int
		known              bool
	}
}

func (s *beSwapper) sw(off, n int)      { slices.Reverse(s.out[off : off+n]) }
func (s *beSwapper) u16(off int) uint16 { return s.le.Uint16(s.in[off:]) }
func (s *beSwapper) u32(off int) uint32 { return s.le.Uint32(s.in[off:]) }
func (s *beSwapper) u64(off int) uint64 { return s.le.Uint64(s.in[off:]) }

// ToBigEndian returns a big-endian copy of the little-endian recording in.
// It does not check in; a malformed recording may panic or give a
// malformed copy.
func ToBigEndian(in []byte) []byte {
	s := &beSwapper{in: in, out: bytes.Clone(in), le: binary.LittleEndian}
	s.sw(0, 8)
	s.sw(8, 8)
	if s.u64(8) == pipeHeaderSize {
		s.records(pipeHeaderSize, len(in))
		return s.out
	}
	for o := 16; o < fileHeaderSize; o += 8 {
		s.sw(o, 8)
	}
	attrSize := int(s.u64(16))
	attrs := [2]int{int(s.u64(24)), int(s.u64(32))}
	data := [2]int{int(s.u64(40)), int(s.u64(48))}
	for o := attrs[0]; o < attrs[0]+attrs[1]; o += attrSize {
		s.attr1(o, attrSize-16)
		ids := o + attrSize - 16
		s.sw(ids, 8)
		s.sw(ids+8, 8)
		for p := int(s.u64(ids)); p < int(s.u64(ids)+s.u64(ids+8)); p += 8 {
			s.sw(p, 8)
		}
	}
	s.records(data[0], data[0]+data[1])
	// perfdata.Feature sections.
	idx := data[0] + data[1]
	var feats [4]uint64
	for i := range feats {
		feats[i] = s.u64(72 + 8*i)
	}
	for f := 0; f < 256; f++ {
		if feats[f/64]&(1<<(f%64)) == 0 {
			continue
		}
		off, size := int(s.u64(idx)), int(s.u64(idx+8))
		s.sw(idx, 8)
		s.sw(idx+8, 8)
		idx += 16
		s.feature(perfdata.Feature(f), off, size)
	}
	return s.out
}

func (s *beSwapper) attr1(o, n int) {
	a := &s.attr
	if !a.known {
		a.known = true
		a.sampleType = perfdata.SampleFormat(s.u64(o + 24))
		a.readFormat = perfdata.ReadFormat(s.u64(o + 32))
		a.branchType = s.u64(o + 72)
		a.regsUser = s.u64(o + 80)
		a.regsIntr = s.u64(o + 96)
		if s.u64(o+40)&uint64(perfdata.AttrSampleIDAll) != 0 {
			a.idHdr = (&perfdata.Attr{SampleType: a.sampleType, Flags: perfdata.AttrSampleIDAll}).IDHdrSize()
		}
	}
	widths := []struct{ off, n int }{{0, 4}, {4, 4}, {8, 8}, {16, 8}, {24, 8}, {32, 8}, {48, 4}, {52, 4},
		{56, 8}, {64, 8}, {72, 8}, {80, 8}, {88, 4}, {92, 4}, {96, 8}, {104, 4}, {108, 2}, {110, 2},
		{112, 4}, {116, 4}, {120, 8}, {128, 8}}
	for _, w := range widths {
		if w.off+w.n <= n {
			s.sw(o+w.off, w.n)
		}
	}
	// Bit field: a big-endian compiler allocates it from the top bit.
	binary.BigEndian.PutUint64(s.out[o+40:], bits.Reverse64(s.u64(o+40)))
}

func (s *beSwapper) records(start, end int) {
	for o := start; o+8 <= end; {
		size := int(s.u16(o + 6))
		s.record(o, size)
		o += size
	}
}

func (s *beSwapper) trailer(o, size int) {
	if s.attr.idHdr == 0 {
		return
	}
	p := o + size - s.attr.idHdr
	t := s.attr.sampleType
	for _, f := range []perfdata.SampleFormat{perfdata.SampleFormatTID, perfdata.SampleFormatTime, perfdata.SampleFormatID, perfdata.SampleFormatStreamID, perfdata.SampleFormatCPU, perfdata.SampleFormatIdentifier} {
		if t&f == 0 {
			continue
		}
		if f == perfdata.SampleFormatTID || f == perfdata.SampleFormatCPU {
			s.sw(p, 4)
			s.sw(p+4, 4)
		} else {
			s.sw(p, 8)
		}
		p += 8
	}
}

func (s *beSwapper) record(o, size int) {
	typ := perfdata.RecordType(s.u32(o))
	misc := s.u16(o + 4)
	s.sw(o, 4)
	s.sw(o+4, 2)
	s.sw(o+6, 2)
	p := o + 8
	u := func(n int) { s.sw(p, n); p += n }
	switch typ {
	case perfdata.RecordSample:
		s.sample(p)
	case perfdata.RecordMmap, perfdata.RecordMmap2:
		u(4)
		u(4)
		u(8)
		u(8)
		u(8)
		if typ == perfdata.RecordMmap2 {
			if misc&perfdata.MiscMmapBuildID != 0 {
				p += 24
			} else {
				u(4)
				u(4)
				u(8)
				u(8)
			}
			u(4)
			u(4)
		}
		s.trailer(o, size)
	case perfdata.RecordComm:
		u(4)
		u(4)
		s.trailer(o, size)
	case perfdata.RecordFork, perfdata.RecordExit:
		u(4)
		u(4)
		u(4)
		u(4)
		u(8)
		s.trailer(o, size)
	case perfdata.RecordKsymbol:
		u(8)
		u(4)
		u(2)
		u(2)
		s.trailer(o, size)
	case perfdata.RecordBPFEvent:
		u(2)
		u(2)
		u(4)
		s.trailer(o, size)
	case perfdata.RecordLost, perfdata.RecordThrottle, perfdata.RecordUnthrottle, perfdata.RecordLostSamples:
		n := map[perfdata.RecordType]int{perfdata.RecordLost: 2, perfdata.RecordThrottle: 3, perfdata.RecordUnthrottle: 3, perfdata.RecordLostSamples: 1}[typ]
		for i := 0; i < n; i++ {
			u(8)
		}
		s.trailer(o, size)
	case perfdata.RecordIDIndex:
		for ; p+8 <= o+size; p += 8 {
			s.sw(p, 8)
		}
	case perfdata.RecordHeaderAttr:
		n := int(s.u32(p + 4))
		s.attr1(p, n)
		for q := p + n; q+8 <= o+size; q += 8 {
			s.sw(q, 8)
		}
	case perfdata.RecordHeaderFeature:
		f := perfdata.Feature(s.u64(p))
		u(8)
		s.feature(f, p, o+size-p)
	case perfdata.RecordEventUpdate:
		kind := s.u64(p)
		u(8)
		u(8)
		switch kind {
		case 1: // scale, a double
			u(8)
		case 3: // cpus
			s.cpuMap(p)
		}
	case perfdata.RecordThreadMap:
		n := int(s.u64(p))
		u(8)
		for range n {
			u(8)
			p += 16 // comm
		}
	case perfdata.RecordCPUMap:
		s.cpuMap(p)
	case perfdata.RecordStatConfig, perfdata.RecordStatRound:
		for ; p+8 <= o+size; p += 8 {
			s.sw(p, 8)
		}
	case perfdata.RecordStat:
		u(8)
		u(4)
		u(4)
		u(8)
		u(8)
		u(8)
	default:
		if typ < perfdata.RecordUserTypeStart {
			s.trailer(o, size)
		}
	}
}

// cpuMap swaps a perf_record_cpu_map_data at p (perf's
// perf_event__cpu_map_swap): a list of u16 CPUs, a mask of 32- or 64-bit
// words (after 4 bytes of padding), or a range.
func (s *beSwapper) cpuMap(p int) {
	u := func(n int) { s.sw(p, n); p += n }
	kind := s.u16(p)
	u(2)
	switch kind {
	case 0:
		n := int(s.u16(p))
		u(2)
		for range n {
			u(2)
		}
	case 1:
		n, long := int(s.u16(p)), int(s.u16(p+2))
		u(2)
		u(2)
		if long == 8 {
			p += 4
		}
		for range n {
			u(long)
		}
	case 2:
		p += 2
		u(2)
		u(2)
	}
}

func (s *beSwapper) sample(p int) {
	a := s.attr
	t := a.sampleType
	u := func(n int) { s.sw(p, n); p += n }
	pair := func() { u(4); u(4) }
	if t&perfdata.SampleFormatIdentifier != 0 {
		u(8)
	}
	if t&perfdata.SampleFormatIP != 0 {
		u(8)
	}
	if t&perfdata.SampleFormatTID != 0 {
		pair()
	}
	for _, f := range []perfdata.SampleFormat{perfdata.SampleFormatTime, perfdata.SampleFormatAddr, perfdata.SampleFormatID, perfdata.SampleFormatStreamID} {
		if t&f != 0 {
			u(8)
		}
	}
	if t&perfdata.SampleFormatCPU != 0 {
		pair()
	}
	if t&perfdata.SampleFormatPeriod != 0 {
		u(8)
	}
	if t&perfdata.SampleFormatRead != 0 {
		n := 1
		if a.readFormat&perfdata.ReadGroup != 0 {
			n = int(s.u64(p))
			u(8)
		} else {
			u(8)
		}
		if a.readFormat&perfdata.ReadTotalTimeEnabled != 0 {
			u(8)
		}
		if a.readFormat&perfdata.ReadTotalTimeRunning != 0 {
			u(8)
		}
		for i := 0; i < n; i++ {
			if a.readFormat&perfdata.ReadGroup != 0 {
				u(8)
			}
			if a.readFormat&perfdata.ReadID != 0 {
				u(8)
			}
			if a.readFormat&perfdata.ReadLost != 0 {
				u(8)
			}
		}
	}
	if t&perfdata.SampleFormatCallchain != 0 {
		n := int(s.u64(p))
		for i := 0; i <= n; i++ {
			u(8)
		}
	}
	// The recordings here use nothing beyond CALLCHAIN.
}

func (s *beSwapper) feature(f perfdata.Feature, off, size int) {
	p := off
	str := func() { n := int(s.u32(p)); s.sw(p, 4); p += 4 + n }
	switch f {
	case perfdata.FeatHostname, perfdata.FeatOSRelease, perfdata.FeatVersion, perfdata.FeatArch, perfdata.FeatCPUDesc, perfdata.FeatCPUID:
		str()
	case perfdata.FeatNrCPUs:
		s.sw(p, 4)
		s.sw(p+4, 4)
	case perfdata.FeatEventDesc:
		nr, attrSize := int(s.u32(p)), int(s.u32(p+4))
		s.sw(p, 4)
		s.sw(p+4, 4)
		p += 8
		for i := 0; i < nr; i++ {
			s.attr1(p, attrSize)
			p += attrSize
			ids := int(s.u32(p))
			s.sw(p, 4)
			p += 4
			str()
			for j := 0; j < ids; j++ {
				s.sw(p, 8)
				p += 8
			}
		}
	case perfdata.FeatTotalMem:
		s.sw(p, 8)
	case perfdata.FeatSampleTime: // first and last
		s.sw(p, 8)
		s.sw(p+8, 8)
	case perfdata.FeatCmdline:
		n := int(s.u32(p))
		s.sw(p, 4)
		p += 4
		for i := 0; i < n; i++ {
			str()
		}
	case perfdata.FeatCompressed:
		for i := 0; i < 5; i++ {
			s.sw(p+4*i, 4)
		}
	case perfdata.FeatBuildID:
		for p < off+size {
			n := int(s.u16(p + 6))
			s.sw(p, 4)
			s.sw(p+4, 2)
			s.sw(p+6, 2)
			s.sw(p+8, 4)
			p += n
		}
	}
}
