package perfdata_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perfswap"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// legacyAttrSize is the attr_size toV1 writes: a perf_event_attr of ABI
// version 4 (104 bytes, the largest a legacy header may announce) and its
// 16-byte ids section.
const legacyAttrSize = 104 + 16

// toV1 rewrites a file-mode recording (either byte order) as a legacy
// "PERFFILE" one, as perf before 2.6.38 wrote them, in the same byte order:
// the magic; each attr cut to ABI version 4 (104 bytes; the fields after
// sample_regs_intr are lost) with its size field saying so, and attr_size
// 120, the order perf 6.1 infers from it; the header size is hdrSize (104,
// or 72 for the header without the feature bitmap, whose bytes are then
// left as they were for the reader to ignore).
func toV1(t *testing.T, in []byte, hdrSize uint64) []byte {
	t.Helper()
	b := bytes.Clone(in)
	var bo binary.ByteOrder
	switch string(b[:8]) {
	case perfdata.Magic:
		bo = binary.LittleEndian
	case perfdata.MagicSwapped:
		bo = binary.BigEndian
	default:
		t.Fatalf("magic %q", b[:8])
	}
	if bo.Uint64(b[8:]) != 104 {
		t.Fatal("not a file-mode recording")
	}
	attrSize, attrsOff, attrsSize := bo.Uint64(b[16:]), bo.Uint64(b[24:]), bo.Uint64(b[32:])
	if attrSize < legacyAttrSize || attrsSize%attrSize != 0 {
		t.Fatalf("attr_size %d, attrs size %d", attrSize, attrsSize)
	}
	n := attrsSize / attrSize
	var attrs []byte
	for i := range n {
		a := in[attrsOff+i*attrSize : attrsOff+(i+1)*attrSize]
		attr := bytes.Clone(a[:104])
		bo.PutUint32(attr[4:], 104)
		attrs = append(append(attrs, attr...), a[attrSize-16:]...) // the ids section
	}
	copy(b[attrsOff:attrsOff+attrsSize], make([]byte, attrsSize))
	copy(b[attrsOff:], attrs)
	copy(b, perfdata.MagicV1)
	bo.PutUint64(b[8:], hdrSize)
	bo.PutUint64(b[16:], legacyAttrSize)
	bo.PutUint64(b[32:], n*legacyAttrSize)
	return b
}

// decodeRecords decodes every record of b (file or pipe mode) as canon
// text, with its header.
func decodeRecords(t *testing.T, b []byte) ([]string, *perfdata.Reader) {
	t.Helper()
	r, err := perfdata.NewFileReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	for r.Next() {
		recs = append(recs, canon(r.Record()))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.FeaturesErr(); err != nil {
		t.Fatal(err)
	}
	return recs, r
}

// A legacy "PERFFILE" recording is read as perf 6.1 reads it: the byte
// order from attr_size, the 72-byte header without features, and then
// every record (samples included) decodes as in the original.
func TestLegacyHeader(t *testing.T) {
	for _, name := range []string{"sleep", "busy", "system", "callchain", "samplecpu", "multi", "zstd", "ksym"} {
		le, err := os.ReadFile(filepath.Join("testdata", name+".data"))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			order   string
			in      []byte
			hdrSize uint64
		}{
			{"LE", le, 104}, {"LE", le, 72},
			{"BE", perfswap.ToBigEndian(le), 104}, {"BE", perfswap.ToBigEndian(le), 72},
		} {
			if name == "zstd" && tc.order == "BE" {
				continue // perfswap leaves compressed payloads little-endian
			}
			t.Run(name+"/"+tc.order+"/"+map[uint64]string{104: "features", 72: "no features"}[tc.hdrSize], func(t *testing.T) {
				want, orig := decodeRecords(t, tc.in)
				got, r := decodeRecords(t, toV1(t, tc.in, tc.hdrSize))
				h := r.Header()
				if h.Version != 1 || orig.Header().Version != 2 || h.Pipe || h.Size != tc.hdrSize || h.AttrSize != legacyAttrSize ||
					r.ByteOrder() != orig.ByteOrder() || len(r.Attrs()) != len(orig.Attrs()) {
					t.Fatalf("header %+v, byte order %v, %d attrs; original %+v", *h, r.ByteOrder(), len(r.Attrs()), *orig.Header())
				}
				for i, a := range r.Attrs() {
					o := orig.Attrs()[i]
					if a.Size != 104 || a.SampleType != o.SampleType || a.Flags != o.Flags || !slices.Equal(a.IDs, o.IDs) {
						t.Errorf("attr %d: %+v, original %+v", i, *a, *o)
					}
				}
				if tc.hdrSize == 104 {
					if h.Features != orig.Header().Features || r.Features().Hostname != orig.Features().Hostname {
						t.Errorf("features %x, hostname %q; original %x, %q", h.Features, r.Features().Hostname, orig.Header().Features, orig.Features().Hostname)
					}
				} else if h.Features != ([4]uint64{}) || r.Features().Hostname != "" || len(r.Features().BuildIDs) != 0 {
					t.Errorf("72-byte header: features %x, hostname %q, %d build ids; want none", h.Features, r.Features().Hostname, len(r.Features().BuildIDs))
				}
				if !slices.Equal(got, want) {
					t.Errorf("records differ: %s", linediff.First(strings.Join(got, "\n"), strings.Join(want, "\n")))
				}
			})
		}
	}
}

// A legacy pipe-mode stream: "PERFFILE" and a size of 16, in either
// byte order (perf reads the one of its host).
func TestLegacyPipe(t *testing.T) {
	le, err := os.ReadFile(filepath.Join("testdata", "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"LE", le}, {"BE", perfswap.ToBigEndian(le)}} {
		t.Run(tc.name, func(t *testing.T) {
			want, orig := decodeRecords(t, tc.in)
			v1 := bytes.Clone(tc.in)
			copy(v1, perfdata.MagicV1)
			for _, stream := range []bool{false, true} {
				var got []string
				var r *perfdata.Reader
				if stream {
					r, err = perfdata.NewReader(bytes.NewReader(v1))
					if err != nil {
						t.Fatal(err)
					}
					for r.Next() {
						got = append(got, canon(r.Record()))
					}
					if r.Err() != nil {
						t.Fatal(r.Err())
					}
				} else {
					got, r = decodeRecords(t, v1)
				}
				if h := r.Header(); h.Version != 1 || !h.Pipe || !r.PipeMode() || r.ByteOrder() != orig.ByteOrder() {
					t.Errorf("stream %v: header %+v, byte order %v", stream, *h, r.ByteOrder())
				}
				if !slices.Equal(got, want) {
					t.Errorf("stream %v: records differ: %s", stream, linediff.First(strings.Join(got, "\n"), strings.Join(want, "\n")))
				}
			}
		})
	}
}

// Headers perf 6.1 refuses are errors at the field at fault.
func TestLegacyHeaderErrors(t *testing.T) {
	le, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := toV1(t, le, 104)
	put := func(src []byte, off int, v uint64, bo binary.ByteOrder) []byte {
		b := bytes.Clone(src)
		bo.PutUint64(b[off:], v)
		return b
	}
	lebo, bebo := binary.LittleEndian, binary.BigEndian
	for _, tc := range []struct {
		name string
		in   []byte
		off  int64
		msg  string
	}{
		// perf 6.1's own attr_size (a 128-byte attr) is no legacy ABI size.
		{"attr_size 144", put(v1, 16, 144, lebo), 0x10, "attr_size 0x90 is no perf_event_attr ABI 0-4 size"},
		{"attr_size 0", put(v1, 16, 0, lebo), 0x10, "attr_size 0x0"},
		{"header size 99", put(v1, 8, 99, lebo), 8, "header size 99 is neither 104"},
		// The byte order comes from attr_size: a big-endian size field
		// then does not say 104.
		{"mixed byte orders", put(v1, 8, 104, bebo), 8, "header size 7493989779944505344"},
		{"short file", v1[:80], 0x10, "file header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := perfdata.NewFileReader(bytes.NewReader(tc.in), int64(len(tc.in)))
			var fe *perfdata.FormatError
			if !errors.As(err, &fe) || fe.Off != tc.off || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (offset %#x), want a FormatError at %#x saying %q", err, offsetOf(fe), tc.off, tc.msg)
			}
		})
	}
}

func offsetOf(fe *perfdata.FormatError) int64 {
	if fe == nil {
		return -1
	}
	return fe.Off
}

// perf 6.1 accepts the 72-byte header (no feature bitmap) with the
// current magic too (perf_file_header__read "Support the previous format").
func TestShortHeaderV2(t *testing.T) {
	le, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{le, perfswap.ToBigEndian(le)} {
		want, orig := decodeRecords(t, in)
		short := bytes.Clone(in)
		orig.ByteOrder().PutUint64(short[8:], 72)
		got, r := decodeRecords(t, short)
		if h := r.Header(); h.Version != 2 || h.Size != 72 || h.Features != ([4]uint64{}) || r.Features().Hostname != "" {
			t.Errorf("header %+v, hostname %q", *h, r.Features().Hostname)
		}
		if !slices.Equal(got, want) {
			t.Errorf("records differ: %s", linediff.First(strings.Join(got, "\n"), strings.Join(want, "\n")))
		}
	}
}

// perf script reads the little-endian legacy files as it reads the
// originals. (Not the big-endian ones: perf 6.1 on x86_64 detects their
// byte order from attr_size and reads their header, but crashes or fails
// on their records exactly as on the "PERFILE2" big-endian copies
// perfswap makes.) Kernel symbols come from a fixed kallsyms: without the
// feature bitmap there is no build id, and perf would then take the
// running kernel's.
func TestLegacyHeaderAgainstPerf(t *testing.T) {
	const kallsyms = "../attrib/testdata/kallsyms"
	script := func(file string) (string, error) {
		out, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true},
			"script", "-F", "ip,sym,dso", "--kallsyms", kallsyms, "-i", file)
		return out, err
	}
	dir := t.TempDir()
	for _, name := range []string{"sleep", "multi", "callchain"} {
		le, err := os.ReadFile(filepath.Join("testdata", name+".data"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := script(filepath.Join("testdata", name+".data"))
		if errors.Is(err, perftest.ErrNotInstalled) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, hdrSize := range []uint64{104, 72} {
			file := filepath.Join(dir, fmt.Sprintf("%s.v1-%d.data", name, hdrSize))
			if err := os.WriteFile(file, toV1(t, le, hdrSize), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := script(file)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			if got == "" {
				t.Errorf("%s: perf script printed nothing", file)
			}
			if d := linediff.First(got, want); d != "" {
				t.Errorf("%s: perf script differs from the original's: %s", file, d)
			}
		}
	}
	// A legacy little-endian pipe-mode stream.
	pipe, err := os.ReadFile(filepath.Join("testdata", "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := script(filepath.Join("testdata", "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "pipe.v1.data")
	if err := os.WriteFile(file, append([]byte(perfdata.MagicV1), pipe[8:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := script(file); err != nil || got == "" || got != want {
		t.Errorf("%s: err %v; perf script differs from the original's: %s", file, err, linediff.First(got, want))
	}
}
