package perfdata

import (
	"bytes"
	"testing"
)

// FuzzReader feeds arbitrary bytes to both the file and the stream reader:
// they must never panic, and must stop (with or without an error).
func FuzzReader(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzReader.
	f.Add(buildFile([]attrSpec{{sampleType: 0x107}}, rec(RecordSample, 2, u64s{1, 2, 3, 4}.bytes())))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := NewFileReader(bytes.NewReader(b), int64(len(b))); err == nil {
			drain(r)
		}
		if r, err := NewReader(bytes.NewReader(b)); err == nil {
			drain(r)
		}
		// NextFixedSample reads what Next reads.
		r, err := NewFileReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		want, _ := NewFileReader(bytes.NewReader(b), int64(len(b)))
		readInLockstep(t, "input", r, want, len(b)%2 == 0)
	})
}

func drain(r *Reader) {
	for i := 0; i < 1<<12 && r.Next(); i++ {
		_ = r.Record()
		_ = r.Raw()
	}
	_ = r.Err()
	_ = r.Features()
}
