package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// beSwapper re-encodes a little-endian recording in big-endian, field by
// field, the way a big-endian perf would have written it. It is written
// independently of the reader (it walks the layouts itself).
type beSwapper struct {
	in, out []byte
	le      binary.ByteOrder
	attr    struct {
		sampleType         SampleFormat
		readFormat         ReadFormat
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

func swapToBE(t *testing.T, in []byte) []byte {
	t.Helper()
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
	// Feature sections.
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
		s.feature(Feature(f), off, size)
	}
	return s.out
}

func (s *beSwapper) attr1(o, n int) {
	a := &s.attr
	if !a.known {
		a.known = true
		a.sampleType = SampleFormat(s.u64(o + 24))
		a.readFormat = ReadFormat(s.u64(o + 32))
		a.branchType = s.u64(o + 72)
		a.regsUser = s.u64(o + 80)
		a.regsIntr = s.u64(o + 96)
		if s.u64(o+40)&uint64(AttrSampleIDAll) != 0 {
			a.idHdr = idHdrSize(a.sampleType)
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
	for _, f := range []SampleFormat{SampleFormatTID, SampleFormatTime, SampleFormatID, SampleFormatStreamID, SampleFormatCPU, SampleFormatIdentifier} {
		if t&f == 0 {
			continue
		}
		if f == SampleFormatTID || f == SampleFormatCPU {
			s.sw(p, 4)
			s.sw(p+4, 4)
		} else {
			s.sw(p, 8)
		}
		p += 8
	}
}

func (s *beSwapper) record(o, size int) {
	typ := RecordType(s.u32(o))
	misc := s.u16(o + 4)
	s.sw(o, 4)
	s.sw(o+4, 2)
	s.sw(o+6, 2)
	p := o + 8
	u := func(n int) { s.sw(p, n); p += n }
	switch typ {
	case RecordSample:
		s.sample(p)
	case RecordMmap, RecordMmap2:
		u(4)
		u(4)
		u(8)
		u(8)
		u(8)
		if typ == RecordMmap2 {
			if misc&MiscMmapBuildID != 0 {
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
	case RecordComm:
		u(4)
		u(4)
		s.trailer(o, size)
	case RecordFork, RecordExit:
		u(4)
		u(4)
		u(4)
		u(4)
		u(8)
		s.trailer(o, size)
	case RecordKsymbol:
		u(8)
		u(4)
		u(2)
		u(2)
		s.trailer(o, size)
	case RecordBPFEvent:
		u(2)
		u(2)
		u(4)
		s.trailer(o, size)
	case RecordLost, RecordThrottle, RecordUnthrottle, RecordLostSamples:
		n := map[RecordType]int{RecordLost: 2, RecordThrottle: 3, RecordUnthrottle: 3, RecordLostSamples: 1}[typ]
		for i := 0; i < n; i++ {
			u(8)
		}
		s.trailer(o, size)
	case RecordIDIndex:
		for ; p+8 <= o+size; p += 8 {
			s.sw(p, 8)
		}
	case RecordHeaderAttr:
		n := int(s.u32(p + 4))
		s.attr1(p, n)
		for q := p + n; q+8 <= o+size; q += 8 {
			s.sw(q, 8)
		}
	case RecordHeaderFeature:
		f := Feature(s.u64(p))
		u(8)
		s.feature(f, p, o+size-p)
	default:
		if typ < RecordUserTypeStart {
			s.trailer(o, size)
		}
	}
}

func (s *beSwapper) sample(p int) {
	a := s.attr
	t := a.sampleType
	u := func(n int) { s.sw(p, n); p += n }
	pair := func() { u(4); u(4) }
	if t&SampleFormatIdentifier != 0 {
		u(8)
	}
	if t&SampleFormatIP != 0 {
		u(8)
	}
	if t&SampleFormatTID != 0 {
		pair()
	}
	for _, f := range []SampleFormat{SampleFormatTime, SampleFormatAddr, SampleFormatID, SampleFormatStreamID} {
		if t&f != 0 {
			u(8)
		}
	}
	if t&SampleFormatCPU != 0 {
		pair()
	}
	if t&SampleFormatPeriod != 0 {
		u(8)
	}
	if t&SampleFormatRead != 0 {
		n := 1
		if a.readFormat&ReadGroup != 0 {
			n = int(s.u64(p))
			u(8)
		} else {
			u(8)
		}
		if a.readFormat&ReadTotalTimeEnabled != 0 {
			u(8)
		}
		if a.readFormat&ReadTotalTimeRunning != 0 {
			u(8)
		}
		for i := 0; i < n; i++ {
			if a.readFormat&ReadGroup != 0 {
				u(8)
			}
			if a.readFormat&ReadID != 0 {
				u(8)
			}
			if a.readFormat&ReadLost != 0 {
				u(8)
			}
		}
	}
	if t&SampleFormatCallchain != 0 {
		n := int(s.u64(p))
		for i := 0; i <= n; i++ {
			u(8)
		}
	}
	// The recordings here use nothing beyond CALLCHAIN.
}

func (s *beSwapper) feature(f Feature, off, size int) {
	p := off
	str := func() { n := int(s.u32(p)); s.sw(p, 4); p += 4 + n }
	switch f {
	case FeatHostname, FeatOSRelease, FeatVersion, FeatArch, FeatCPUDesc, FeatCPUID:
		str()
	case FeatNrCPUs:
		s.sw(p, 4)
		s.sw(p+4, 4)
	case FeatTotalMem:
		s.sw(p, 8)
	case FeatCmdline:
		n := int(s.u32(p))
		s.sw(p, 4)
		p += 4
		for i := 0; i < n; i++ {
			str()
		}
	case FeatCompressed:
		for i := 0; i < 5; i++ {
			s.sw(p+4*i, 4)
		}
	case FeatBuildID:
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

// canon is a text form of a record without pointers and raw bytes (the
// opaque records keep the file's byte order).
func canon(rec Record) string {
	switch r := rec.(type) {
	case *Sample:
		c := *r
		c.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *Mmap:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *Comm:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *Fork:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *Exit:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *Ksymbol:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *BPFEvent:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *HeaderAttr:
		return fmt.Sprintf("%+v %+v", r.Info, *r.Attr)
	case *FeatureRecord:
		return fmt.Sprintf("%+v %d", r.Info, r.Feature)
	case *Unknown:
		return fmt.Sprintf("%+v", r.Info)
	}
	return fmt.Sprintf("%+v", rec)
}

func decodeAll(t *testing.T, b []byte) (recs []string, attrs []string, feats string) {
	t.Helper()
	r, err := NewFileReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		recs = append(recs, canon(r.Record()))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.FeaturesErr(); err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Attrs() {
		attrs = append(attrs, fmt.Sprintf("%+v", *a))
	}
	f := *r.Features()
	f.Present = nil
	var bids []string
	for _, b := range f.BuildIDs {
		bids = append(bids, fmt.Sprintf("%+v", b))
	}
	f.BuildIDs = nil
	comp := f.Compression
	f.Compression = nil
	return recs, attrs, fmt.Sprintf("%+v %v %+v %v", f, bids, comp, r.Header().Features)
}

func TestByteSwapped(t *testing.T) {
	for _, name := range []string{"sleep", "busy", "system", "callchain", "samplecpu", "hifreq", "multi", "pipe", "ksym"} {
		t.Run(name, func(t *testing.T) {
			le, err := os.ReadFile(filepath.Join("testdata", name+".data"))
			if err != nil {
				t.Fatal(err)
			}
			be := swapToBE(t, le)
			if bytes.Equal(le, be) {
				t.Fatal("swapper changed nothing")
			}
			r1, a1, f1 := decodeAll(t, le)
			r2, a2, f2 := decodeAll(t, be)
			if !slices.Equal(a1, a2) {
				t.Errorf("attrs differ:\nLE %v\nBE %v", a1, a2)
			}
			if f1 != f2 {
				t.Errorf("features differ:\nLE %s\nBE %s", f1, f2)
			}
			if len(r1) != len(r2) {
				t.Fatalf("%d records LE, %d BE", len(r1), len(r2))
			}
			diffs := 0
			for i := range r1 {
				if r1[i] != r2[i] {
					if diffs++; diffs < 5 {
						t.Errorf("record %d:\nLE %s\nBE %s", i, r1[i], r2[i])
					}
				}
			}
			if diffs > 0 {
				t.Errorf("%d of %d records differ", diffs, len(r1))
			}
		})
	}
}

// TestVector68 checks the layout facts of §6.8 of the perf semantics
// reference on a recording made the same way, and on its byte-swapped copy.
func TestVector68(t *testing.T) {
	le, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		bo   binary.AppendByteOrder
	}{{"LE", le, binary.LittleEndian}, {"BE", swapToBE(t, le), binary.BigEndian}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewFileReader(bytes.NewReader(tc.b), int64(len(tc.b)))
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header()
			checks := []struct {
				what      string
				got, want uint64
			}{
				{"byte order big", b2u(r.ByteOrder() == binary.ByteOrder(binary.BigEndian)), b2u(tc.bo == binary.AppendByteOrder(binary.BigEndian))},
				{"header size", h.Size, 0x68},
				{"attr_size", h.AttrSize, 0x90},
				{"attrs offset", h.Attrs.Offset, 0x78},
				{"attrs size", h.Attrs.Size, 0x90},
				{"data offset", h.Data.Offset, 0x108},
				{"feature BUILD_ID", b2u(h.HasFeature(FeatBuildID)), 1},
				{"attrs", uint64(len(r.Attrs())), 1},
				{"attr type", uint64(r.Attrs()[0].Type), 1},
				{"attr size", uint64(r.Attrs()[0].Size), 128},
				{"sample_type", uint64(r.Attrs()[0].SampleType), 0x107},
				{"read_format", uint64(r.Attrs()[0].ReadFormat), 0x14},
				{"sample_id_all|mmap2|ksymbol|bpf_event|freq", uint64(r.Attrs()[0].Flags & (AttrSampleIDAll | AttrMmap2 | AttrKsymbol | AttrBPFEvent | AttrFreq)),
					uint64(AttrSampleIDAll | AttrMmap2 | AttrKsymbol | AttrBPFEvent | AttrFreq)},
				{"ids", uint64(len(r.Attrs()[0].IDs)), 2},
				{"id_hdr_size", uint64(r.IDHdrSize()), 16},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %#x, want %#x", c.what, c.got, c.want)
				}
			}
			if got := tc.b[0x158:0x160]; !bytes.Equal(got, tc.bo.AppendUint16(tc.bo.AppendUint16(tc.bo.AppendUint32(nil, 1), 1), 80)) {
				t.Errorf("bytes at 0x158 = % x, want the kernel MMAP header", got)
			}
			for r.Next() {
				m, ok := r.Record().(*Mmap)
				if !ok {
					continue
				}
				if m.Offset != 0x158 || m.Size != 80 || m.CPUMode() != CPUModeKernel || int32(m.Pid) != -1 || m.Tid != 0 ||
					m.Addr != 0xffffffff81000000 || m.Pgoff != m.Addr || m.Filename != "[kernel.kallsyms]_text" || m.SampleID.Time != 0 {
					t.Errorf("first MMAP = %+v", *m)
				}
				break
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if f := r.Features(); f.Arch != "x86_64" || !strings.Contains(strings.Join(f.Cmdline, " "), "sleep 0.05") || f.NrCPUsOnline == 0 {
				t.Errorf("features: arch %q cmdline %q cpus %d", f.Arch, f.Cmdline, f.NrCPUsOnline)
			}
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
