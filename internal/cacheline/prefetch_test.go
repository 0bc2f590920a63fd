package cacheline

import "testing"

// TestPrefetch prefetches memory the process may read, and memory it may
// not (page 0, and a page unmapped: prefetch_linux_test.go): neither
// faults, nor changes what is there. A Prefetch that loaded instead of
// prefetching would fault at the address it may not read.
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
