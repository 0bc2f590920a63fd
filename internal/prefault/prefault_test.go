package prefault

import "testing"

// Slice leaves a slice's contents and the memory around it as they were,
// whatever its size and alignment.
func TestSliceKeepsContents(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 1 << 16, 1<<20 + 3} {
		buf := make([]uint64, n+2)
		for i := range buf {
			buf[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		s := buf[1 : 1+n]
		Slice(s)
		for i := range buf {
			if buf[i] != uint64(i)*0x9e3779b97f4a7c15 {
				t.Fatalf("n=%d: word %d changed", n, i)
			}
		}
	}
	var empty []byte
	Slice(empty)
	Slice(make([]struct{}, 10)) // zero-size elements: nothing to fault in
	Slice(make([]byte, 0, 3*4096)[:0])
}
