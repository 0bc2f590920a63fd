//go:build !unix

package filemap

import (
	"errors"
	"os"
)

func mapFile(*os.File, int64, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }

func dropPages([]byte) {}
