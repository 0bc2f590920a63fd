package attrib

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// pipeWithEvents lays out a little-endian pipe-mode recording of n
// events (HEADER_ATTR records, event i with sample id i+1) and a sample
// of each event in sampled.
func pipeWithEvents(n int, sampled ...int) []byte {
	le := binary.LittleEndian
	record := func(b []byte, typ perfdata.RecordType, body []byte) []byte {
		b = le.AppendUint32(b, uint32(typ))
		b = le.AppendUint16(b, 0)
		b = le.AppendUint16(b, uint16(8+len(body)))
		return append(b, body...)
	}
	const sampleType = perfdata.SampleFormatIP | perfdata.SampleFormatTID | perfdata.SampleFormatTime |
		perfdata.SampleFormatID | perfdata.SampleFormatPeriod
	b := le.AppendUint64(nil, 0x32454c4946524550) // PERFILE2
	b = le.AppendUint64(b, 16)
	attr := make([]byte, 128+8)
	le.PutUint32(attr[0:], 1) // PERF_TYPE_SOFTWARE
	le.PutUint32(attr[4:], 128)
	le.PutUint64(attr[16:], 1000)
	le.PutUint64(attr[24:], uint64(sampleType))
	for i := range n {
		le.PutUint64(attr[128:], uint64(i+1))
		b = record(b, perfdata.RecordHeaderAttr, attr)
	}
	for k, i := range sampled {
		var body []byte
		body = le.AppendUint64(body, 0x400000)         // ip
		body = le.AppendUint64(body, 100|100<<32)      // pid, tid
		body = le.AppendUint64(body, uint64(1000+k))   // time
		body = le.AppendUint64(body, uint64(i+1))      // id
		body = le.AppendUint64(body, uint64(1+i%1000)) // period
		b = record(b, perfdata.RecordSample, body)
	}
	return b
}

// fileWithEvents lays out a little-endian file-mode recording of n
// events (attr i with sample id i+1), no features, and a sample of each
// event in sampled as its data.
func fileWithEvents(n int, sampled ...int) []byte {
	le := binary.LittleEndian
	pipe := pipeWithEvents(0, sampled...)[16:] // the samples alone
	const hdr, attrSize = 104, 128
	idsOff := hdr
	attrsOff := idsOff + 8*n
	dataOff := attrsOff + n*(attrSize+16)
	b := le.AppendUint64(nil, 0x32454c4946524550) // PERFILE2
	b = le.AppendUint64(b, hdr)
	b = le.AppendUint64(b, attrSize+16)
	b = le.AppendUint64(b, uint64(attrsOff))
	b = le.AppendUint64(b, uint64(n*(attrSize+16)))
	b = le.AppendUint64(b, uint64(dataOff))
	b = le.AppendUint64(b, uint64(len(pipe)))
	b = append(b, make([]byte, hdr-len(b))...) // no event types, no features
	for i := range n {
		b = le.AppendUint64(b, uint64(i+1))
	}
	attr := pipeWithEvents(1)[16+8 : 16+8+attrSize]
	for i := range n {
		b = append(b, attr...)
		b = le.AppendUint64(b, uint64(idsOff+8*i))
		b = le.AppendUint64(b, 8)
	}
	return append(b, pipe...)
}

// A recording of as many events as an event's index tells apart counts
// each event's samples under it; one of more is refused with an error
// naming the record, not counted under the wrong events.
func TestManyEvents(t *testing.T) {
	run := func(data []byte) (*Result, error) {
		r, err := perfdata.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return Run(r, Options{DebugDir: "-", NoFiles: true})
	}
	n := maxEventIndex + 1
	res, err := run(pipeWithEvents(n, 0, n-1, n-2))
	if err != nil {
		t.Fatalf("%d events: %v", n, err)
	}
	if len(res.ByEvent) != n || res.ByEvent[n-1].Samples != 1 || res.ByEvent[n-2].Samples != 1 || res.ByEvent[0].Samples != 1 || res.ByEvent[n-1].Period != uint64(1+(n-1)%1000) {
		t.Fatalf("%d events: %d counted; first %+v, last two %+v %+v", n, len(res.ByEvent), res.ByEvent[0], res.ByEvent[n-2], res.ByEvent[n-1])
	}
	for _, sampled := range [][]int{nil, {n}, {0, n}} {
		_, err := run(pipeWithEvents(n+1, sampled...))
		if err == nil || !strings.Contains(err.Error(), "file offset") || !strings.Contains(err.Error(), "65537 events") {
			t.Fatalf("%d events, samples of %v: error %v", n+1, sampled, err)
		}
	}
	// A file's attrs are all in its header, its samples read by the
	// decoder's fast path (NextFixedSample).
	file := func(data []byte) (*Result, error) {
		r, err := perfdata.NewFileReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return Run(r, Options{DebugDir: "-", NoFiles: true})
	}
	if res, err := file(fileWithEvents(n, n-1)); err != nil || res.ByEvent[n-1].Samples != 1 {
		t.Fatalf("file of %d events: %v", n, err)
	}
	if _, err := file(fileWithEvents(n+1, n)); err == nil || !strings.Contains(err.Error(), "header") || !strings.Contains(err.Error(), "65537 events") {
		t.Fatalf("file of %d events: error %v", n+1, err)
	}
}

// An event queued with a time before that of an event delivered already
// is counted and warned of as perf 6.1 warns of it
// (ordered_events__queue's nr_unordered_events): a pipe whose samples at
// 10 and 20 are delivered by its second FINISHED_ROUND, after which come
// samples at 15 (out of order) and 25 (not).
func TestUnorderedEvents(t *testing.T) {
	le := binary.LittleEndian
	b := pipeWithEvents(1)
	round := le.AppendUint16(le.AppendUint16(le.AppendUint32(nil, uint32(perfdata.RecordFinishedRound)), 0), 8)
	sample := func(time uint64) []byte {
		one := pipeWithEvents(1, 0)[len(b):] // a sample of event 0
		le.PutUint64(one[8+16:], time)       // after the header, ip and pid/tid
		return one
	}
	for _, part := range [][]byte{sample(10), sample(20), round, sample(30), round, sample(15), sample(25)} {
		b = append(b, part...)
	}
	r, err := perfdata.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(r, Options{DebugDir: "-", NoFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = "1 out of order events recorded."
	if res.Unordered != 1 || !slices.Contains(res.LostWarnings(), want) {
		t.Errorf("%d unordered, warnings %q; want 1, %q", res.Unordered, res.LostWarnings(), want)
	}
	// perf says so too.
	file := filepath.Join(t.TempDir(), "unordered.data")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "report", "--stdio", "-i", file)
	if errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("perf report's warnings %q lack %q", stderr, want)
	}
}
