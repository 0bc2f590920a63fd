// Package regular opens input files only when they are regular files:
// a FIFO would block the open and a device such as /dev/zero would feed
// a reader forever, so kallsyms, modules, kcore headers, corpus files and
// sysfs section addresses are refused unless they are regular files
// (procfs and sysfs files are).
package regular

import (
	"fmt"
	"io/fs"
	"os"
)

// Open opens the file at path for reading if it is a regular file
// (symbolic links followed).
func Open(path string) (*os.File, error) {
	if err := check(os.Stat(path)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return os.Open(path)
}

// Is reports whether path names a regular file (symbolic links
// followed).
func Is(path string) bool { return check(os.Stat(path)) == nil }

// OpenFS is Open for name in fsys.
func OpenFS(fsys fs.FS, name string) (fs.File, error) {
	if err := check(fs.Stat(fsys, name)); err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fsys.Open(name)
}

func check(fi fs.FileInfo, err error) error {
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return nil
}
