package cacheline

import "testing"

// TestPrefetch prefetches memory the process may read, and memory it may
// not: neither faults, nor changes what is there.
func TestPrefetch(t *testing.T) {
	b := []uint64{1, 2, 3}
	for i := range b {
		Prefetch(&b[i])
	}
	if b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Fatalf("memory changed: %v", b)
	}
	var nilp *uint64
	Prefetch(nilp)
}
