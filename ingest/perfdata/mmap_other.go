//go:build !unix

package perfdata

import (
	"errors"
	"os"
)

// mapFile fails: without mmap the Reader reads through a buffer.
func mapFile(f *os.File, off int64, n int) ([]byte, error) {
	return nil, errors.ErrUnsupported
}

func unmapFile(b []byte) error { return nil }

func dropPages(b []byte) {}
