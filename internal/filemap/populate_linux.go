package filemap

import "golang.org/x/sys/unix"

// populate uses MADV_POPULATE_READ (Linux 5.14 and later; an error on
// older kernels leaves the pages to fault in one at a time).
func populate(b []byte) {
	if len(b) > 0 {
		unix.Madvise(b, unix.MADV_POPULATE_READ)
	}
}
