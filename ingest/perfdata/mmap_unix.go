//go:build unix

package perfdata

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps n bytes of f from offset off (a multiple of the page
// size) read-only.
func mapFile(f *os.File, off int64, n int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), off, n, unix.PROT_READ, unix.MAP_SHARED)
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) error { return unix.Munmap(b) }

// dropPages releases the pages of b, part of a mapping of mapFile's, from
// the process's memory: they stay in the page cache, and reading them
// again faults them back in.
func dropPages(b []byte) { unix.Madvise(b, unix.MADV_DONTNEED) }
