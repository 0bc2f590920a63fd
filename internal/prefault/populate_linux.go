package prefault

import "golang.org/x/sys/unix"

// populate faults in b's pages for writing; an error (a kernel before
// 5.14) leaves them to fault in one at a time.
func populate(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
