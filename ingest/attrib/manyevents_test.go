package attrib

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
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
