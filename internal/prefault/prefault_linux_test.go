package prefault

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// After Slice every whole page of the slice is resident, where the kernel
// has MADV_POPULATE_WRITE.
func TestSliceFaultsIn(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("MADV_POPULATE_WRITE: %v", err)
	}
	for _, n := range []int{3 * 4096, 1 << 20, 5<<20 + 123} {
		s := make([]byte, n)
		Slice(s)
		start := uintptr(unsafe.Pointer(&s[0]))
		lo, hi := (start+4095)&^4095, (start+uintptr(n))&^4095
		whole := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&s[0]), lo-start)), hi-lo)
		vec := make([]byte, len(whole)/4096)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&whole[0])), uintptr(len(whole)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		for i, v := range vec {
			if v&1 == 0 {
				t.Fatalf("n=%d: page %d of %d not resident", n, i, len(vec))
			}
		}
	}
}
