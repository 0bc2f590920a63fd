package perfdata

import (
	"bytes"
	"os"
	"testing"
)

// DataSize is the header's data size for a file-mode recording, what
// follows the header for a pipe-mode one read from a file, and 0 for a
// stream, whose size is not known.
func TestDataSize(t *testing.T) {
	for _, tc := range []struct {
		file   string
		stream bool
	}{
		{"testdata/sleep.data", false},
		{"testdata/pipe.data", false},
		{"testdata/pipe.data", true},
		{"testdata/sleep.data", true},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var r *Reader
		if tc.stream {
			r, err = NewReader(bytes.NewReader(data))
		} else {
			r, err = NewFileReader(bytes.NewReader(data), int64(len(data)))
		}
		if err != nil {
			t.Fatal(err)
		}
		var want uint64
		switch {
		case !r.PipeMode():
			want = r.Header().Data.Size
			if want == 0 {
				t.Fatalf("%s: no data size in the header", tc.file)
			}
		case !tc.stream:
			want = uint64(len(data)) - pipeHeaderSize
		}
		if got := r.DataSize(); got != want {
			t.Errorf("%s (stream %v, pipe mode %v): DataSize %d, want %d", tc.file, tc.stream, r.PipeMode(), got, want)
		}
	}
}
