package attrib

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"os"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// repeatSamples returns the file-mode recording data with its samples
// delivered passes times: after its data section's records come the
// samples again, passes-1 times, each pass later than the last by the
// recording's span and closed by a FINISHED_ROUND, and the feature
// sections moved behind them. The maps do not change after the first
// pass: what a pass allocates beyond the first is what attribution
// allocates per sample in a steady state. Every attr's samples must
// begin with IDENTIFIER (or not), IP, TID and TIME, as perf record's do.
func repeatSamples(t testing.TB, data []byte, passes int) []byte {
	t.Helper()
	r, err := perfdata.NewFileReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var timeAt int // the time's offset in a sample record
	for i, a := range r.Attrs() {
		// The body's fixed order: IDENTIFIER, IP, TID, TIME.
		want := perfdata.SampleFormatIP | perfdata.SampleFormatTID | perfdata.SampleFormatTime
		if a.SampleType&want != want {
			t.Fatalf("attr %d: sample type %#x has not IP, TID and TIME", i, a.SampleType)
		}
		at := 8 + 8 + 8 // the record header, IP, TID
		if a.SampleType&perfdata.SampleFormatIdentifier != 0 {
			at += 8
		}
		if i > 0 && at != timeAt {
			t.Fatalf("attr %d: the samples' time is at %d, attr 0's at %d", i, at, timeAt)
		}
		timeAt = at
	}
	var samples [][]byte
	first, last := ^uint64(0), uint64(0)
	for r.Next() {
		raw := r.Raw()
		if raw.Type != perfdata.RecordSample {
			continue
		}
		s := bytes.Clone(raw.Data) // valid until the next Next (Reader.Raw)
		samples = append(samples, s)
		tm := binary.LittleEndian.Uint64(s[timeAt:])
		first, last = min(first, tm), max(last, tm)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(samples) == 0 {
		t.Fatal("no samples to repeat")
	}
	h := r.Header()
	dataEnd := int(h.Data.Offset + h.Data.Size)
	var more []byte
	round := []byte{68, 0, 0, 0, 0, 0, 8, 0} // PERF_RECORD_FINISHED_ROUND
	for p := 1; p < passes; p++ {
		shift := uint64(p) * (last - first + 1)
		for _, s := range samples {
			at := len(more) + timeAt
			more = append(more, s...)
			binary.LittleEndian.PutUint64(more[at:], binary.LittleEndian.Uint64(s[timeAt:])+shift)
		}
		more = append(more, round...)
	}
	out := append(bytes.Clone(data[:dataEnd]), more...)
	out = append(out, data[dataEnd:]...)
	binary.LittleEndian.PutUint64(out[48:], h.Data.Size+uint64(len(more))) // perf_file_header.data.size
	// The feature index follows the data: each section's offset moves.
	nfeat := 0
	for _, w := range h.Features {
		nfeat += bits.OnesCount64(w)
	}
	for i := range nfeat {
		at := dataEnd + len(more) + 16*i
		off := binary.LittleEndian.Uint64(out[at:])
		binary.LittleEndian.PutUint64(out[at:], off+uint64(len(more)))
	}
	return out
}

// In a steady state, attribution allocates nothing per sample: the
// committed system-wide recording with its samples delivered 729 times
// allocates, to be attributed as each kbench report view attributes it,
// about as much as with them delivered 27 times. An allocation per
// sample would show as 357 k more, one per delivery (minDelivery
// events) as 100 or more (a delivery's list of segments was: 118); what
// may differ is how many of the pooled segments and key lists the
// decoder, running ahead, made before the attributor gave the first
// back, which the flow limit bounds (orderPools). The JSON view's sample
// sets are not in it: a roaring bitmap grows with its samples.
func TestAttributionAllocatesNothingPerSample(t *testing.T) {
	data, ks := systemRecording(t)
	const few, many = 81, 729
	recs := map[int][]byte{few: repeatSamples(t, data, few), many: repeatSamples(t, data, many)}
	views := []struct {
		name string
		opts Options
	}{
		{"table", Options{NoSampleSets: true}},
		{"script", Options{Script: io.Discard, NoCounts: true, NoSampleSets: true}},
		{"sort comm,dso,sym", Options{SortKeys: []string{SortComm, SortDSO, SortSym}, NoCounts: true, NoSampleSets: true}},
	}
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			opts := v.opts
			opts.Kallsyms, opts.NoFiles, opts.DebugDir = ks, true, "-"
			run := func(passes int) (samples uint64, allocs float64) {
				allocs = testing.AllocsPerRun(2, func() {
					res, err := Run(openBytes(t, recs[passes]), opts)
					if err != nil {
						t.Fatal(err)
					}
					samples = res.Samples
				})
				return samples, allocs
			}
			n1, a1 := run(few)
			n2, a2 := run(many)
			if n2 != many/few*n1 {
				t.Fatalf("%d passes attributed %d samples, %d passes %d", many, n2, few, n1)
			}
			t.Logf("%d samples: %.0f allocations; %d samples: %.0f", n1, a1, n2, a2)
			const warmUp = 32 // pooled memory the decoder may make ahead
			if extra := a2 - a1; extra > warmUp {
				t.Errorf("%d more samples took %.0f more allocations (%.0f, then %.0f): %.4f a sample", n2-n1, extra, a1, a2, extra/float64(n2-n1))
			}
		})
	}
}

// repeatSamples' passes are the recording's samples again: each symbol
// counts three times the samples and periods with three passes as with
// one.
func TestRepeatSamples(t *testing.T) {
	data, ks := systemRecording(t)
	bySym := func(passes int) map[Key]Counts {
		res, err := Run(openBytes(t, repeatSamples(t, data, passes)), Options{Kallsyms: ks, NoFiles: true, DebugDir: "-", NoSampleSets: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.BySym
	}
	one, three := bySym(1), bySym(3)
	if len(one) < 2 || len(three) != len(one) {
		t.Fatalf("%d symbols with one pass, %d with three", len(one), len(three))
	}
	for k, c := range one {
		if got := three[k]; got != (Counts{3 * c.Samples, 3 * c.Period}) {
			t.Errorf("%v: %v with three passes, %v with one", k, got, c)
		}
	}
}

// systemRecording returns the committed system-wide recording and the
// kallsyms subset its kernel samples resolve in (stageRecording's,
// which a benchmark may replace by $KBENCH_RECORDING; a test may not).
func systemRecording(t *testing.T) ([]byte, []kallsyms.Symbol) {
	data, err := os.ReadFile("../perfdata/testdata/system.data")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	return data, ks
}
