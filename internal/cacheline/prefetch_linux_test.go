package cacheline

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPrefetchUnmapped prefetches a page the process mapped and then
// unmapped: the address is no longer readable, and Prefetch must ignore
// it.
func TestPrefetchUnmapped(t *testing.T) {
	page, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	p := (*byte)(unsafe.Pointer(&page[0]))
	if err := unix.Munmap(page); err != nil {
		t.Fatal(err)
	}
	Prefetch(p)
}
