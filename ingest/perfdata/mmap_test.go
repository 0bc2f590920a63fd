package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// readAll reads every record of r, describing each by its offset, flags
// and bytes, and the error and counts at the end.
func readAll(r *Reader) (recs []string, stable int, end string) {
	for r.Next() {
		raw := r.Raw()
		recs = append(recs, fmt.Sprintf("%#x %v %x", raw.Offset, raw.Compressed, raw.Data))
		if r.RecordsStable() {
			stable++
		}
	}
	return recs, stable, fmt.Sprintf("err %v; stats %+v", r.Err(), r.Stats())
}

// mapInputs returns recordings and damaged variants of them that get
// past the header, by name.
func mapInputs(t testing.TB) map[string][]byte {
	t.Helper()
	in := make(map[string][]byte)
	for _, name := range recordings {
		b, err := os.ReadFile(filepath.Join("testdata", name+".data"))
		if err != nil {
			t.Fatal(err)
		}
		in[name] = b
	}
	sleep, pipe := in["sleep"], in["pipe"]
	mod := func(b []byte, f func(b []byte)) []byte { b = bytes.Clone(b); f(b); return b }
	in["record size 0"] = mod(sleep, func(b []byte) { le.PutUint16(b[0x108+6:], 0) })
	in["record past data"] = mod(sleep, func(b []byte) { le.PutUint16(b[0x108+6:], 0xfff8) })
	unfinished := mod(sleep, func(b []byte) { le.PutUint64(b[48:], 0) }) // data size 0: to the end of the file
	in["unfinished"] = unfinished
	for _, cut := range []int{0x300, 0x304, 0x30c, len(sleep) - 100} {
		in[fmt.Sprintf("unfinished cut at %#x", cut)] = unfinished[:cut]
	}
	for _, cut := range []int{1, 3, 8, 20} {
		in[fmt.Sprintf("pipe cut %d short", cut)] = pipe[:len(pipe)-cut]
	}
	attrs := []attrSpec{{sampleType: SampleFormatIP | SampleFormatTID}}
	sample := rec(RecordSample, 0, u64s{0x401000, pair(1, 1)}.bytes())
	aux := func(skip uint64) []byte { return rec(RecordAuxtrace, 0, u64s{skip, 0, 0, 0}.bytes()) }
	tracing := func(skip uint32) []byte { return rec(RecordHeaderTracing, 0, u64s{uint64(skip)}.bytes()) }
	in["auxtrace"] = buildFile(attrs, concat(sample, aux(16), make([]byte, 16), sample))
	in["tracing"] = buildFile(attrs, concat(sample, tracing(24), make([]byte, 24), sample))
	in["auxtrace past data"] = buildFile(attrs, concat(sample, aux(1<<20), sample))
	in["auxtrace past file"] = mod(in["auxtrace past data"], func(b []byte) { le.PutUint64(b[48:], 0) })
	in["tracing past file"] = mod(buildFile(attrs, concat(sample, tracing(1000), sample)), func(b []byte) { le.PutUint64(b[48:], 0) })
	return in
}

// concat joins byte slices.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// A mapped file reads as the same file read through a buffer: the same
// records, errors and counts.
func TestMappedMatchesBuffered(t *testing.T) {
	dir := t.TempDir()
	for name, b := range mapInputs(t) {
		t.Run(name, func(t *testing.T) {
			n, stable := compareMappedBuffered(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "_")), b)
			if mapSupported() && n > 0 && stable == 0 {
				t.Errorf("no record of %d is stable", n)
			}
		})
	}
}

// compareMappedBuffered writes b to file and reads it mapped (Open) and
// through a buffer (NewFileReader): the same records, errors and counts.
// It returns how many records there were and how many were stable.
func compareMappedBuffered(t *testing.T, file string, b []byte) (records, stable int) {
	t.Helper()
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want, wantErr := NewFileReader(bytes.NewReader(b), int64(len(b)))
	got, err := Open(file, Mapped())
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Open: %v; NewFileReader: %v", err, wantErr)
	}
	if err != nil {
		return 0, 0
	}
	defer got.Close()
	wantRecs, _, wantEnd := readAll(want)
	gotRecs, stable, gotEnd := readAll(got)
	if !reflect.DeepEqual(gotRecs, wantRecs) {
		t.Errorf("mapped: %d records, buffered: %d (or they differ)", len(gotRecs), len(wantRecs))
	}
	if gotEnd != wantEnd {
		t.Errorf("mapped ends with\n%s\nbuffered with\n%s", gotEnd, wantEnd)
	}
	return len(gotRecs), stable
}

// mapSupported reports whether Open maps files here (mmap_unix.go).
func mapSupported() bool {
	return runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"
}

// copyRecording copies testdata/name.data into a temporary file.
func copyRecording(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".data"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".data")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A file that shrinks while mapped makes Next fail with a FormatError at
// the first offset that went, not crash.
func TestMappedShrinks(t *testing.T) {
	page := int64(os.Getpagesize())
	for _, tc := range []struct {
		name   string
		before int   // records read before the file shrinks
		size   int64 // its new size, in pages past the data's first page
	}{
		{"to nothing", 0, -1},
		{"before the first record", 0, 0},
		{"mid-data", 0, 2},
		{"mid-data, while reading", 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := copyRecording(t, "system")
			r, err := Open(file, Mapped())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.m == nil {
				t.Skip("the file is not mapped here")
			}
			for range tc.before {
				if !r.Next() {
					t.Fatal(r.Err())
				}
			}
			size := max(0, r.mbase+tc.size*page)
			if size >= int64(r.hdr.Data.Offset+r.hdr.Data.Size) {
				t.Fatalf("new size %#x is past the data", size)
			}
			if err := os.Truncate(file, size); err != nil {
				t.Fatal(err)
			}
			for r.Next() {
			}
			var fe *FormatError
			if err := r.Err(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "shrank") {
				t.Fatalf("error %v, want a FormatError saying the file shrank", err)
			}
			if fe.Off < size || fe.Off >= size+page {
				t.Errorf("error at offset %#x, want one in the page at %#x", fe.Off, size)
			}
		})
	}
}

// Stable record bytes that fault after Next returned become an error
// through FaultError.
func TestMappedFaultError(t *testing.T) {
	file := copyRecording(t, "system")
	r, err := Open(file, Mapped())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var data []byte
	for r.Next() {
		if raw := r.Raw(); r.RecordsStable() && raw.Offset >= r.mbase+2*int64(os.Getpagesize()) {
			data = raw.Data
			break
		}
	}
	if data == nil {
		t.Skip("no stable record past the second page")
	}
	if err := os.Truncate(file, r.mbase); err != nil {
		t.Fatal(err)
	}
	err = func() (err error) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if err = r.FaultError(recover()); err == nil {
				t.Fatal("FaultError did not recognise the fault")
			}
		}()
		_ = bytes.Clone(data)
		return nil
	}()
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "shrank") {
		t.Errorf("error %v, want a FormatError saying the file shrank", err)
	}
	if r.FaultError("something else") != nil || r.FaultError(nil) != nil {
		t.Error("FaultError took a value that is not a fault for one")
	}
}

// Next fails after Close.
func TestNextAfterClose(t *testing.T) {
	r, err := Open(copyRecording(t, "sleep"), Mapped())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Next() || r.Err() == nil {
		t.Errorf("Next after Close: no error")
	}
}

// BenchmarkNext reads every record of a recording (KBENCH_RECORDING, or
// testdata/system.data): mapped (Open), through a buffer from the file
// (NewFileReader, what Open did before it mapped) and through a buffer
// from memory.
func BenchmarkNext(b *testing.B) {
	file := os.Getenv("KBENCH_RECORDING")
	if file == "" {
		file = filepath.Join("testdata", "system.data")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"mapped", "file", "memory"} {
		b.Run(mode, func(b *testing.B) {
			n := 0
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var r *Reader
				var err error
				var f *os.File
				switch mode {
				case "mapped":
					r, err = Open(file, Mapped())
				case "file":
					if f, err = os.Open(file); err == nil {
						r, err = NewFileReader(f, int64(len(data)))
					}
				default:
					r, err = NewFileReader(bytes.NewReader(data), int64(len(data)))
				}
				if err != nil {
					b.Fatal(err)
				}
				if f != nil {
					defer f.Close()
				}
				for n = 0; r.Next(); n++ {
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
				r.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(n, 1)), "ns/record")
		})
	}
}

// FuzzMappedMatchesBuffered reads arbitrary files both ways, mapped
// (Open) and through a buffer (NewFileReader): the same records, errors
// and counts, never a panic.
func FuzzMappedMatchesBuffered(f *testing.F) {
	for _, b := range mapInputs(f) {
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		compareMappedBuffered(t, filepath.Join(dir, "fuzz.data"), b)
	})
}

// A callchain the fast path reads in place (viewWords) is never written
// to: the general decoder of the next sample, with a sample type of its
// own, copies its chain into the Reader's storage, not into the
// previous record's bytes, a read-only mapping (writing there faults).
// Each Sample's chain reads as written, mapped and buffered.
func TestCallchainViewNotWritten(t *testing.T) {
	fast := attrSpec{sampleType: SampleFormatIdentifier | SampleFormatIP | SampleFormatCallchain, ids: []uint64{1}}
	general := attrSpec{sampleType: SampleFormatIdentifier | SampleFormatIP | SampleFormatCallchain | SampleFormatRaw, ids: []uint64{2}}
	sample := func(id uint64, chain u64s, raw bool) []byte {
		b := append(u64s{id, 0x401000, uint64(len(chain))}, chain...).bytes()
		if raw {
			b = le.AppendUint32(b, 4)
			b = append(b, 1, 2, 3, 4)
		}
		return rec(RecordSample, 0, b)
	}
	chains := []u64s{{1, 2, 3}, {4, 5, 6, 7, 8}, {9}, {10, 11, 12, 13, 14, 15, 16}}
	var data [][]byte
	for i, c := range chains {
		data = append(data, sample(uint64(1+i%2), c, i%2 == 1))
	}
	file := filepath.Join(t.TempDir(), "views.data")
	if err := os.WriteFile(file, buildFile([]attrSpec{fast, general}, concat(data...)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(file, Mapped())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []u64s
	for r.Next() {
		s, ok := r.Record().(*Sample)
		if !ok {
			continue
		}
		got = append(got, slices.Clone(u64s(s.Callchain)))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, chains) {
		t.Errorf("chains %v, want %v", got, chains)
	}
}

// FileBytes reads a file-mode recording's bytes anywhere, mapped or
// through a buffer alike, with zeros past the end of the file; a pipe
// has none to give.
func TestFileBytes(t *testing.T) {
	file := copyRecording(t, "sleep")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := Open(file, Mapped())
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	buffered, err := NewFileReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	data := int64(mapped.Header().Data.Offset)
	end := data + int64(mapped.Header().Data.Size)
	for _, tc := range []struct {
		name string
		off  int64
		want []byte
	}{
		{"header", 0, b[:8]},
		{"data", data + 16, b[data+16 : data+24]},
		{"past the data", end, b[end : end+8]},
		{"across the end", int64(len(b)) - 4, append(bytes.Clone(b[len(b)-4:]), 0, 0, 0, 0)},
		{"past the end", int64(len(b)) + 100, make([]byte, 8)},
	} {
		for _, r := range []*Reader{mapped, buffered} {
			if got, ok := r.FileBytes(tc.off, 8); !ok || !bytes.Equal(got, tc.want) {
				t.Errorf("%s (mapped %v): %x %v, want %x", tc.name, r.MappedData() != nil, got, ok, tc.want)
			}
		}
	}
	if _, ok := mapped.FileBytes(-1, 8); ok {
		t.Error("a negative offset read")
	}
	pipe, err := os.Open(filepath.Join("testdata", "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	r, err := NewReader(pipe)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.FileBytes(0, 8); ok {
		t.Error("a pipe gave bytes")
	}
}

// A data size of 0 reads to the end of the file, or, with
// WithoutUnfinishedData, as perf 6.1 reads it: no record.
func TestUnfinishedData(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	want, _, _ := readAll(mustFileReader(t, b))
	unfinished := bytes.Clone(b[:le.Uint64(b[40:])+le.Uint64(b[48:])])
	le.PutUint64(unfinished[48:], 0)
	if got, _, _ := readAll(mustFileReader(t, unfinished)); len(got) != len(want) || len(want) == 0 {
		t.Errorf("to the end of the file: %d records, want %d", len(got), len(want))
	}
	if got, _, _ := readAll(mustFileReader(t, unfinished, WithoutUnfinishedData())); len(got) != 0 {
		t.Errorf("WithoutUnfinishedData: %d records", len(got))
	}
	if got, _, _ := readAll(mustFileReader(t, b, WithoutUnfinishedData())); len(got) != len(want) {
		t.Errorf("WithoutUnfinishedData on a finished recording: %d records, want %d", len(got), len(want))
	}
}

func mustFileReader(t *testing.T, b []byte, opts ...Option) *Reader {
	t.Helper()
	r, err := NewFileReader(bytes.NewReader(b), int64(len(b)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Open reads a regular file through a buffer unless asked to map it.
func TestOpenMapsOnlyWhenAsked(t *testing.T) {
	file := copyRecording(t, "sleep")
	for _, tc := range []struct {
		opts   []Option
		mapped bool
	}{
		{nil, false},
		{[]Option{Mapped()}, runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"},
	} {
		r, err := Open(file, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatalf("no record: %v", r.Err())
		}
		if got := r.MappedData() != nil; got != tc.mapped {
			t.Errorf("Open(%d options): mapped %v, want %v", len(tc.opts), got, tc.mapped)
		}
		if got := r.RecordsStable(); got != tc.mapped {
			t.Errorf("Open(%d options): RecordsStable %v, want %v", len(tc.opts), got, tc.mapped)
		}
		r.Close()
	}
}
