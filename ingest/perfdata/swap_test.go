package perfdata_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perfswap"
)

// canon is a text form of a record without pointers and raw bytes (the
// opaque records keep the file's byte order).
func canon(rec perfdata.Record) string {
	switch r := rec.(type) {
	case *perfdata.Sample:
		c := *r
		c.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.Mmap:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.Comm:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.Fork:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.Exit:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.Ksymbol:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.BPFEvent:
		c := *r
		c.SampleID.Attr = nil
		return fmt.Sprintf("%+v", c)
	case *perfdata.HeaderAttr:
		return fmt.Sprintf("%+v %+v", r.Info, *r.Attr)
	case *perfdata.FeatureRecord:
		return fmt.Sprintf("%+v %d", r.Info, r.Feature)
	case *perfdata.Unknown:
		return fmt.Sprintf("%+v", r.Info)
	}
	return fmt.Sprintf("%+v", rec)
}

func decodeAll(t *testing.T, b []byte) (recs []string, attrs []string, feats string) {
	t.Helper()
	r, err := perfdata.NewFileReader(bytes.NewReader(b), int64(len(b)))
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
			be := perfswap.ToBigEndian(le)
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
	}{{"LE", le, binary.LittleEndian}, {"BE", perfswap.ToBigEndian(le), binary.BigEndian}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := perfdata.NewFileReader(bytes.NewReader(tc.b), int64(len(tc.b)))
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
				{"feature BUILD_ID", b2u(h.HasFeature(perfdata.FeatBuildID)), 1},
				{"attrs", uint64(len(r.Attrs())), 1},
				{"attr type", uint64(r.Attrs()[0].Type), 1},
				{"attr size", uint64(r.Attrs()[0].Size), 128},
				{"sample_type", uint64(r.Attrs()[0].SampleType), 0x107},
				{"read_format", uint64(r.Attrs()[0].ReadFormat), 0x14},
				{"sample_id_all|mmap2|ksymbol|bpf_event|freq", uint64(r.Attrs()[0].Flags & (perfdata.AttrSampleIDAll | perfdata.AttrMmap2 | perfdata.AttrKsymbol | perfdata.AttrBPFEvent | perfdata.AttrFreq)),
					uint64(perfdata.AttrSampleIDAll | perfdata.AttrMmap2 | perfdata.AttrKsymbol | perfdata.AttrBPFEvent | perfdata.AttrFreq)},
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
				m, ok := r.Record().(*perfdata.Mmap)
				if !ok {
					continue
				}
				if m.Offset != 0x158 || m.Size != 80 || m.CPUMode() != perfdata.CPUModeKernel || int32(m.Pid) != -1 || m.Tid != 0 ||
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
