package perfdata_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// seekBuffer is an in-memory io.WriteSeeker.
type seekBuffer struct {
	b   []byte
	pos int64
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if end := s.pos + int64(len(p)); end > int64(len(s.b)) {
		s.b = append(s.b, make([]byte, end-int64(len(s.b)))...)
	}
	copy(s.b[s.pos:], p)
	s.pos += int64(len(p))
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += int64(len(s.b))
	}
	if off < 0 {
		return 0, fmt.Errorf("negative offset")
	}
	s.pos = off
	return off, nil
}

const kernelMisc = uint16(perfdata.CPUModeKernel)
const userMisc = uint16(perfdata.CPUModeUser)

// testRecords returns records of every kind the Writer writes.
func testRecords(callchains bool) []perfdata.Record {
	sid := func(pid, tid uint32, t uint64) perfdata.SampleID {
		return perfdata.SampleID{Pid: pid, Tid: tid, Time: t}
	}
	recs := []perfdata.Record{
		&perfdata.Mmap{Info: perfdata.Info{Type: perfdata.RecordMmap2, Misc: kernelMisc}, Pid: ^uint32(0),
			Addr: 0xffffffff81000000, Len: 0x1400000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"},
		&perfdata.Mmap{Info: perfdata.Info{Type: perfdata.RecordMmap2, Misc: kernelMisc}, Pid: ^uint32(0),
			Addr: 0xffffffffc0000000, Len: 0x5000, Filename: "[mod_a]"},
		&perfdata.Mmap{Info: perfdata.Info{Type: perfdata.RecordMmap, Misc: kernelMisc}, Pid: ^uint32(0),
			Addr: 0xffffffffc0010000, Len: 0x3000, Filename: "/lib/modules/x/mod_b.ko"},
		&perfdata.Ksymbol{Info: perfdata.Info{Type: perfdata.RecordKsymbol, Misc: kernelMisc},
			Addr: 0xffffffffc0100000, Len: 0x200, KsymType: perfdata.KsymTypeBPF, Name: "bpf_prog_0123456789abcdef_f"},
		&perfdata.Comm{Info: perfdata.Info{Type: perfdata.RecordComm, Misc: perfdata.MiscCommExec}, Pid: 100, Tid: 100, Comm: "gen-100", SampleID: sid(100, 100, 5)},
		&perfdata.Fork{Info: perfdata.Info{Type: perfdata.RecordFork}, Pid: 101, Ppid: 100, Tid: 101, Ptid: 100, Time: 6, SampleID: sid(101, 101, 6)},
		&perfdata.Mmap{Info: perfdata.Info{Type: perfdata.RecordMmap2, Misc: userMisc}, Pid: 100, Tid: 100,
			Addr: 0x7f0000000000, Len: 0x20000, Pgoff: 0x1000, Maj: 8, Min: 1, Ino: 1234, InoGeneration: 7, Prot: 5, Flags: 2,
			Filename: "/usr/lib/libgen-1.so", SampleID: sid(100, 100, 7)},
		&perfdata.Mmap{Info: perfdata.Info{Type: perfdata.RecordMmap2, Misc: userMisc | perfdata.MiscMmapBuildID}, Pid: 100, Tid: 100,
			Addr: 0x7f1000000000, Len: 0x1000, Prot: 5, Flags: 2, BuildID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
			Filename: "/usr/lib/libbid.so", SampleID: sid(100, 100, 8)},
		&perfdata.Sample{Info: perfdata.Info{Type: perfdata.RecordSample, Misc: userMisc}, IP: 0x7f0000001234, Pid: 100, Tid: 100, Time: 10, Period: 250000},
		&perfdata.Sample{Info: perfdata.Info{Type: perfdata.RecordSample, Misc: kernelMisc}, IP: 0xffffffff81001000, Pid: 101, Tid: 101, Time: 11, Period: 250000},
		&perfdata.FinishedRound{Info: perfdata.Info{Type: perfdata.RecordFinishedRound}},
		&perfdata.Exit{Info: perfdata.Info{Type: perfdata.RecordExit}, Pid: 101, Ppid: 100, Tid: 101, Ptid: 100, Time: 12, SampleID: sid(101, 101, 12)},
		&perfdata.Ksymbol{Info: perfdata.Info{Type: perfdata.RecordKsymbol, Misc: kernelMisc},
			Addr: 0xffffffffc0100000, Len: 0x200, KsymType: perfdata.KsymTypeBPF, Flags: perfdata.KsymFlagUnregister,
			Name: "bpf_prog_0123456789abcdef_f", SampleID: sid(0, 0, 13)},
	}
	if callchains {
		recs = append(recs, &perfdata.Sample{Info: perfdata.Info{Type: perfdata.RecordSample, Misc: kernelMisc},
			IP: 0xffffffff81001000, Pid: 100, Tid: 100, Time: 14, Period: 1,
			Callchain: []uint64{0xffffffffffffff80, 0xffffffff81001000, 0xffffffff81002000, 0xfffffffffffffe00, 0x7f0000001234}})
	}
	return recs
}

func writeRecords(t *testing.T, w *perfdata.Writer, recs []perfdata.Record) {
	t.Helper()
	for _, r := range recs {
		var err error
		switch r := r.(type) {
		case *perfdata.Mmap:
			err = w.WriteMmap(r)
		case *perfdata.Comm:
			err = w.WriteComm(r)
		case *perfdata.Fork:
			err = w.WriteFork(r)
		case *perfdata.Exit:
			err = w.WriteExit(r)
		case *perfdata.Ksymbol:
			err = w.WriteKsymbol(r)
		case *perfdata.Sample:
			err = w.WriteSample(r)
		case *perfdata.FinishedRound:
			err = w.WriteFinishedRound()
		default:
			t.Fatalf("unexpected record %T", r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// normalize clears what the reader fills in beyond what was written.
func normalize(r perfdata.Record) perfdata.Record {
	switch r := r.(type) {
	case *perfdata.Mmap:
		c := *r
		c.Info = perfdata.Info{Type: c.Type, Misc: c.Misc}
		c.SampleID.Attr = nil
		if len(c.BuildID) == 0 {
			c.BuildID = nil
		} else {
			c.BuildID = append([]byte(nil), c.BuildID...)
		}
		return &c
	case *perfdata.Comm:
		c := *r
		c.Info = perfdata.Info{Type: c.Type, Misc: c.Misc}
		c.SampleID.Attr = nil
		return &c
	case *perfdata.Fork:
		c := *r
		c.Info = perfdata.Info{Type: c.Type, Misc: c.Misc}
		c.SampleID.Attr = nil
		return &c
	case *perfdata.Exit:
		c := *r
		c.Info = perfdata.Info{Type: c.Type, Misc: c.Misc}
		c.SampleID.Attr = nil
		return &c
	case *perfdata.Ksymbol:
		c := *r
		c.Info = perfdata.Info{Type: c.Type, Misc: c.Misc}
		c.SampleID.Attr = nil
		return &c
	case *perfdata.Sample:
		c := perfdata.Sample{Info: perfdata.Info{Type: r.Type, Misc: r.Misc}, IP: r.IP, Pid: r.Pid, Tid: r.Tid, Time: r.Time, Period: r.Period}
		if len(r.Callchain) > 0 {
			c.Callchain = append([]uint64(nil), r.Callchain...)
		}
		return &c
	case *perfdata.FinishedRound:
		return &perfdata.FinishedRound{Info: perfdata.Info{Type: r.Type}}
	}
	return r
}

func TestWriterRoundTrip(t *testing.T) {
	for _, cc := range []bool{false, true} {
		t.Run(fmt.Sprintf("callchains=%v", cc), func(t *testing.T) {
			opts := perfdata.WriterOptions{
				Callchains: cc, Hostname: "gen-host", OSRelease: "6.1.0-gen", Version: "6.1", Arch: "x86_64",
				NrCPUs: 4, Cmdline: []string{"kbench", "gen", "-seed", "1"},
				BuildIDs: []perfdata.BuildID{{Info: perfdata.Info{Misc: kernelMisc}, Pid: -1, BuildID: []byte{0xaa, 0xbb, 0xcc}, Filename: "[kernel.kallsyms]"}},
			}
			var sb seekBuffer
			sb.Write([]byte("junk")) // the recording starts where the writer is
			w, err := perfdata.NewWriter(&sb, opts)
			if err != nil {
				t.Fatal(err)
			}
			recs := testRecords(cc)
			writeRecords(t, w, recs)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.WriteFinishedRound(); err == nil {
				t.Error("write after Close succeeded")
			}
			file := sb.b[4:]
			for _, stream := range []bool{false, true} {
				var r *perfdata.Reader
				if stream {
					r, err = perfdata.NewReader(bytes.NewReader(file))
				} else {
					r, err = perfdata.NewFileReader(bytes.NewReader(file), int64(len(file)))
				}
				if err != nil {
					t.Fatal(err)
				}
				var got []perfdata.Record
				for r.Next() {
					got = append(got, normalize(r.Record()))
				}
				if err := r.Err(); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(recs) {
					t.Fatalf("stream=%v: read %d records, wrote %d", stream, len(got), len(recs))
				}
				for i := range recs {
					if want := normalize(recs[i]); !reflect.DeepEqual(got[i], want) {
						t.Errorf("stream=%v: record %d:\n got %+v\nwant %+v", stream, i, got[i], want)
					}
				}
				f := r.Features()
				if err := r.FeaturesErr(); err != nil {
					t.Fatal(err)
				}
				if f.Hostname != opts.Hostname || f.OSRelease != opts.OSRelease || f.Arch != opts.Arch || f.Version != opts.Version ||
					f.NrCPUsAvail != 4 || f.NrCPUsOnline != 4 || !reflect.DeepEqual(f.Cmdline, opts.Cmdline) {
					t.Errorf("stream=%v: features %+v", stream, f)
				}
				if len(f.BuildIDs) != 1 || f.BuildIDs[0].Filename != "[kernel.kallsyms]" || f.BuildIDs[0].Pid != -1 ||
					!bytes.Equal(f.BuildIDs[0].BuildID, []byte{0xaa, 0xbb, 0xcc}) {
					t.Errorf("stream=%v: build ids %+v", stream, f.BuildIDs)
				}
				a := r.Attrs()
				if len(a) != 1 || a[0].SampleType != w.Attr().SampleType || a[0].Flags != w.Attr().Flags ||
					!reflect.DeepEqual(a[0].IDs, []uint64{1, 2, 3, 4}) || !a[0].SampleIDAll() || a[0].Type != 1 || a[0].Config != 0 {
					t.Errorf("stream=%v: attrs %+v", stream, a)
				}
				if st := r.Stats(); st.Samples != w.Stats().Samples || st.Records != w.Stats().Records {
					t.Errorf("stream=%v: reader stats %+v, writer %+v", stream, st, w.Stats())
				}
			}
		})
	}
}

func TestWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		opts perfdata.WriterOptions
		do   func(w *perfdata.Writer) error
	}{
		{"long filename", perfdata.WriterOptions{}, func(w *perfdata.Writer) error {
			return w.WriteMmap(&perfdata.Mmap{Filename: "/" + strings.Repeat("x", 70000)})
		}},
		{"callchain without option", perfdata.WriterOptions{}, func(w *perfdata.Writer) error {
			return w.WriteSample(&perfdata.Sample{Callchain: []uint64{1}})
		}},
		{"read values without option", perfdata.WriterOptions{}, func(w *perfdata.Writer) error {
			return w.WriteSample(&perfdata.Sample{Read: perfdata.ReadValues{Values: []perfdata.ReadValue{{Value: 1}}}})
		}},
		{"two read values", perfdata.WriterOptions{SampleRead: true}, func(w *perfdata.Writer) error {
			return w.WriteSample(&perfdata.Sample{Read: perfdata.ReadValues{Values: make([]perfdata.ReadValue, 2)}})
		}},
		{"long mmap build id", perfdata.WriterOptions{}, func(w *perfdata.Writer) error {
			return w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: perfdata.MiscMmapBuildID}, BuildID: make([]byte, 21)})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := perfdata.NewWriter(&seekBuffer{}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.do(w); err == nil {
				t.Error("no error")
			}
		})
	}
	if _, err := perfdata.NewWriter(&seekBuffer{}, perfdata.WriterOptions{BuildIDs: []perfdata.BuildID{{BuildID: make([]byte, 21)}}}); err == nil {
		t.Error("21-byte feature build id accepted")
	}
}

// perfScriptLines runs perf script -F ip,sym,dso with args, or skips.
func perfScriptLines(t *testing.T, file string, args ...string) (string, string) {
	t.Helper()
	out, stderr, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, append([]string{"script", "-i", file, "-F", "ip,sym,dso"}, args...)...)
	if errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, stderr
}

// TestWriterPerfScript checks that perf script reads a written file
// without complaint and attributes each sample as ingest/attrib does.
func TestWriterPerfScript(t *testing.T) {
	dir := t.TempDir()
	ks := "ffffffff81000000 T _text\nffffffff81000000 T _stext\nffffffff81001000 T do_work\nffffffff81002000 T do_more\nffffffff81003000 T _etext\nffffffff81400000 D _edata\nffffffff81400000 B _end\n"
	ksFile := filepath.Join(dir, "kallsyms")
	if err := os.WriteFile(ksFile, []byte(ks), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "perf.data")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Hostname: "gen", OSRelease: "6.1.0-gen", Arch: "x86_64", NrCPUs: 2, Cmdline: []string{"test"}})
	if err != nil {
		t.Fatal(err)
	}
	recs := testRecords(false)
	for ip := uint64(0xffffffff81000800); ip < 0xffffffff81003000; ip += 0x400 {
		recs = append(recs, &perfdata.Sample{Info: perfdata.Info{Type: perfdata.RecordSample, Misc: kernelMisc}, IP: ip, Pid: 100, Tid: 100, Time: 20, Period: 1})
	}
	recs = append(recs, &perfdata.Sample{Info: perfdata.Info{Type: perfdata.RecordSample, Misc: userMisc}, IP: 0x1234, Pid: 100, Tid: 100, Time: 21, Period: 1})
	writeRecords(t, w, recs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, stderr := perfScriptLines(t, file, "--kallsyms", ksFile)
	if strings.TrimSpace(stderr) != "" {
		t.Errorf("perf script complained: %s", stderr)
	}
	syms, err := kallsyms.ReadFile(ksFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	res, err := attrib.Run(r, attrib.Options{Impl: mapset.BTree, Kallsyms: syms, Script: &got, DebugDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("perf script differs:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
	if n := strings.Count(want, "\n"); uint64(n) != res.Samples {
		t.Errorf("perf script printed %d samples, attrib saw %d", n, res.Samples)
	}
	sc := bufio.NewScanner(strings.NewReader(want))
	n := 0
	for sc.Scan() {
		n++
	}
	t.Logf("perf script: %d samples, identical to attrib", n)
}

// eachSample calls f with each sample r reads, numbered from 0, and
// returns how many there were; a read error fails t.
func eachSample(t *testing.T, r *perfdata.Reader, f func(i int, s *perfdata.Sample)) int {
	t.Helper()
	n := 0
	for r.Next() {
		if s, ok := r.Record().(*perfdata.Sample); ok {
			f(n, s)
			n++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("after %d samples: %v", n, err)
	}
	return n
}

// A writer with a branch_sample_type writes each sample's branch stack
// (with its hardware index when the type has it), the attr's
// branch_sample_type and the BRANCH_STACK feature, and they read back.
func TestWriterBranchStacks(t *testing.T) {
	for _, bst := range []uint64{perfdata.BranchUser | perfdata.BranchCallStack, perfdata.BranchUser | perfdata.BranchCallStack | perfdata.BranchHWIndex} {
		stacks := [][]perfdata.BranchEntry{nil, {{From: 1, To: 2, Flags: 3}}, {{From: 4, To: 5}, {From: 6, To: 7, Flags: 1 << 63}}}
		var samples []*perfdata.Sample
		for i, b := range stacks {
			samples = append(samples, &perfdata.Sample{Pid: 1, Tid: 1, Time: uint64(i + 1), IP: 0x1000, Callchain: []uint64{0x1000}, Branches: b, BranchHWIndex: uint64(i)})
		}
		r := writeSamples(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true, BranchSampleType: bst}, samples)
		n := eachSample(t, r, func(i int, s *perfdata.Sample) {
			if i >= len(stacks) {
				return
			}
			wantIdx := uint64(0)
			if bst&perfdata.BranchHWIndex != 0 {
				wantIdx = uint64(i)
			}
			if len(s.Branches) != len(stacks[i]) || (len(s.Branches) > 0 && !reflect.DeepEqual(s.Branches, stacks[i])) || s.BranchHWIndex != wantIdx {
				t.Errorf("type %#x, sample %d: branches %+v, hw_idx %d; want %+v, %d", bst, i, s.Branches, s.BranchHWIndex, stacks[i], wantIdx)
			}
		})
		if n != len(stacks) {
			t.Fatalf("type %#x: %d samples read, want %d", bst, n, len(stacks))
		}
		if a := r.Attrs(); len(a) != 1 || a[0].BranchSampleType != bst || a[0].SampleType&perfdata.SampleFormatBranchStack == 0 {
			t.Errorf("type %#x: attrs %+v", bst, a)
		}
		if !r.Features().Has(perfdata.FeatBranchStack) {
			t.Errorf("type %#x: no BRANCH_STACK feature", bst)
		}
	}
	var sb seekBuffer
	w, _ := perfdata.NewWriter(&sb, perfdata.WriterOptions{Arch: "x86_64"})
	if err := w.WriteSample(&perfdata.Sample{Branches: []perfdata.BranchEntry{{From: 1}}}); err == nil {
		t.Error("a branch stack without BranchSampleType was written")
	}
}

// A writer with SampleRead writes each sample's counter (value, id, lost)
// after its period, as the reader reads it back.
func TestWriterSampleRead(t *testing.T) {
	want := []perfdata.ReadValue{{Value: 5, ID: 1}, {Value: 9, ID: 2, Lost: 3}, {Value: 9, ID: 1}}
	var samples []*perfdata.Sample
	for i, v := range want {
		samples = append(samples, &perfdata.Sample{Pid: 1, Tid: 1, Time: uint64(i + 1), IP: 0x1000, Period: 7, Callchain: []uint64{0x1000},
			Read: perfdata.ReadValues{Values: []perfdata.ReadValue{v}}})
	}
	r := writeSamples(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true, SampleRead: true}, samples)
	n := eachSample(t, r, func(i int, s *perfdata.Sample) {
		if i < len(want) && (len(s.Read.Values) != 1 || s.Read.Values[0] != want[i] || s.Period != 7 || len(s.Callchain) != 1) {
			t.Errorf("sample %d: read %+v, period %d, chain %v; want %+v, 7, one frame", i, s.Read.Values, s.Period, s.Callchain, want[i])
		}
	})
	if n != len(want) {
		t.Fatalf("%d samples read, want %d", n, len(want))
	}
	if a := r.Attrs(); len(a) != 1 || a[0].SampleType&perfdata.SampleFormatRead == 0 || a[0].ReadFormat != perfdata.ReadID|perfdata.ReadLost {
		t.Errorf("attrs %+v", a)
	}
}

// writeSamples writes samples with a Writer of opts and returns a reader
// of the recording.
func writeSamples(t *testing.T, opts perfdata.WriterOptions, samples []*perfdata.Sample) *perfdata.Reader {
	t.Helper()
	var sb seekBuffer
	w, err := perfdata.NewWriter(&sb, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if err := w.WriteSample(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := perfdata.NewFileReader(bytes.NewReader(sb.b), int64(len(sb.b)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
