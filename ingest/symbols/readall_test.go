package symbols

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// readAll reads what io.ReadAll reads, whatever size the section's header
// claims and however the reader splits its reads, and stops at an error.
func TestReadAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		data := make([]byte, rng.IntN(5000))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		claims := []uint64{0, uint64(len(data)), uint64(len(data)) + 1, uint64(rng.IntN(10000)), 1 << 62}
		for _, claim := range claims {
			var r io.Reader = bytes.NewReader(data)
			if trial%2 == 0 {
				r = iotest.OneByteReader(r)
			} else {
				r = iotest.HalfReader(r)
			}
			got, err := readAll(r, claim)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("trial %d, claim %d: %d bytes, %v; want %d bytes", trial, claim, len(got), err, len(data))
			}
			if cap(got) > max(3*len(data)+512, int(min(claim, maxPresize))+1) { // doubling, in size classes
				t.Fatalf("trial %d, claim %d: capacity %d for %d bytes", trial, claim, cap(got), len(data))
			}
		}
	}
	bad := errors.New("bad")
	if _, err := readAll(iotest.ErrReader(bad), 10); err != bad {
		t.Errorf("readAll of a failing reader: %v, want %v", err, bad)
	}
	if got, err := readAll(iotest.DataErrReader(bytes.NewReader([]byte("abc"))), 1); err != nil || string(got) != "abc" {
		t.Errorf("readAll with data and EOF together: %q, %v", got, err)
	}
}
