package perfdata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// readInLockstep reads r with NextFixedSample first (Next when it
// reports false) and want with Next alone, and fails t where they
// differ: a sample NextFixedSample read must be want's next record, a
// SAMPLE of fixed-size fields (and a callchain, with skipChain) with the
// same fields, at the same offset; every other record is Next's on both.
// It returns the samples NextFixedSample read.
func readInLockstep(t *testing.T, name string, r, want *Reader, skipChain bool) int {
	t.Helper()
	fixed := 0
	for i := 0; ; i++ {
		var fs FixedSample
		took := r.NextFixedSample(&fs, skipChain)
		var ok bool
		if !took {
			ok = r.Next()
		}
		wok := want.Next()
		if (took || ok) != wok {
			t.Fatalf("%s: record %d: read %v, Next alone %v (errors %v, %v)", name, i, took || ok, wok, r.Err(), want.Err())
		}
		if !wok {
			break
		}
		if g, w := r.Raw(), want.Raw(); g.Offset != w.Offset || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: record %d: at offset %#x, Next alone at %#x", name, i, g.Offset, w.Offset)
		}
		if !took {
			if got, wr := r.Record(), want.Record(); !reflect.DeepEqual(got, wr) {
				t.Fatalf("%s: record %d: Next read %+v, Next alone %+v", name, i, got, wr)
			}
			continue
		}
		fixed++
		s, isSample := want.Record().(*Sample)
		if !isSample {
			t.Fatalf("%s: record %d: NextFixedSample read a %T", name, i, want.Record())
		}
		st := s.Attr.SampleType
		if st&^(fixedSampleFields|SampleFormatCallchain) != 0 || st&SampleFormatCallchain != 0 && !skipChain {
			t.Fatalf("%s: record %d: NextFixedSample read a sample of type %#x (skipChain %v)", name, i, st, skipChain)
		}
		if fs.Attr == nil || fs.Attr.Index != s.Attr.Index {
			t.Fatalf("%s: record %d: NextFixedSample's attr %+v, Next's %+v", name, i, fs.Attr, s.Attr)
		}
		w := FixedSample{Attr: fs.Attr, IP: s.IP, Time: s.Time, Period: s.Period, Pid: s.Pid, Tid: s.Tid, CPU: s.CPU, Misc: s.Misc}
		if fs != w {
			t.Fatalf("%s: record %d: NextFixedSample %+v, Next %+v", name, i, fs, w)
		}
		if r.Record() != nil {
			t.Fatalf("%s: record %d: Record after NextFixedSample is %T, not nil", name, i, r.Record())
		}
	}
	if (r.Err() == nil) != (want.Err() == nil) || r.Err() != nil && r.Err().Error() != want.Err().Error() {
		t.Fatalf("%s: error %v, Next alone %v", name, r.Err(), want.Err())
	}
	if g, w := r.Stats(), want.Stats(); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: stats %+v, Next alone %+v", name, g, w)
	}
	return fixed
}

// NextFixedSample reads what Next reads on random recordings: attrs of
// random sample types (a field outside its fast path now and then), their
// samples well formed, truncated or with callchains longer than the
// record, between other records.
func TestNextFixedSampleDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fields := []SampleFormat{SampleFormatIdentifier, SampleFormatIP, SampleFormatTID, SampleFormatTime, SampleFormatAddr,
		SampleFormatID, SampleFormatStreamID, SampleFormatCPU, SampleFormatPeriod, SampleFormatCallchain}
	fixed, total := 0, 0
	for run := range 400 {
		attrs := make([]attrSpec, 1+rng.IntN(3))
		for i := range attrs {
			st := SampleFormatID
			for _, f := range fields {
				if rng.IntN(2) == 0 {
					st |= f
				}
			}
			if rng.IntN(8) == 0 {
				st |= SampleFormatRaw
			}
			switch {
			case len(attrs) > 1: // the id where every attr has it (perf's rule)
				st |= SampleFormatIdentifier
			case rng.IntN(2) == 0:
				st &^= SampleFormatID | SampleFormatIdentifier
			}
			attrs[i] = attrSpec{sampleType: st, flags: AttrSampleIDAll, ids: []uint64{uint64(100 + i)}}
		}
		var data []byte
		for range 1 + rng.IntN(60) {
			if rng.IntN(10) == 0 {
				data = append(data, rec(RecordFinishedRound, 0, nil)...)
				continue
			}
			a := attrs[rng.IntN(len(attrs))]
			var body []byte
			for _, f := range fields {
				if a.sampleType&f == 0 || f == SampleFormatCallchain {
					continue
				}
				v := rng.Uint64()
				if f == SampleFormatID || f == SampleFormatIdentifier {
					v = a.ids[0]
				}
				body = le.AppendUint64(body, v)
			}
			if a.sampleType&SampleFormatCallchain != 0 {
				nr := rng.IntN(5)
				body = le.AppendUint64(body, uint64(nr))
				for range nr - rng.IntN(2) { // now and then one short
					body = le.AppendUint64(body, rng.Uint64())
				}
			}
			if a.sampleType&SampleFormatRaw != 0 {
				body = le.AppendUint32(body, 4)
				body = le.AppendUint32(body, rng.Uint32())
			}
			if rng.IntN(10) == 0 && len(body) >= 8 {
				body = body[:8*rng.IntN(len(body)/8)] // truncated
			}
			data = append(data, rec(RecordSample, uint16(rng.IntN(8)), body)...)
		}
		skip := rng.IntN(2) == 0
		name := fmt.Sprintf("recording %d", run)
		fixed += readInLockstep(t, name, builtReader(t, attrs, data), builtReader(t, attrs, data), skip)
		total++
	}
	if fixed < 1000 {
		t.Fatalf("only %d samples of %d recordings took NextFixedSample", fixed, total)
	}
}

// NextFixedSample reads what Next reads on the committed recordings,
// with and without callchains skipped.
func TestNextFixedSampleRecordings(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.data"))
	if len(files) == 0 {
		t.Fatal("no recordings in testdata")
	}
	fixed := 0
	for _, f := range files {
		for _, skip := range []bool{false, true} {
			open := func() *Reader {
				r, err := Open(f)
				if err != nil {
					t.Skipf("%s: %v", f, err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}
			if _, err := os.Stat(f); err != nil {
				t.Fatal(err)
			}
			fixed += readInLockstep(t, f, open(), open(), skip)
		}
	}
	if fixed == 0 {
		t.Fatal("no sample took NextFixedSample")
	}
}
