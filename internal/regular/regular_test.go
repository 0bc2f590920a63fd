//go:build unix

package regular

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO and a device are refused without blocking; a regular file and a
// link to one open; a missing file is fs.ErrNotExist.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	for _, name := range []string{"fifo", "zero"} {
		if _, err := Open(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Open(%s): %v", name, err)
		}
		if _, err := OpenFS(fsys, name); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenFS(%s): %v", name, err)
		}
	}
	for _, name := range []string{"file", "link"} {
		f, err := Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		f.Close()
		g, err := OpenFS(fsys, name)
		if err != nil {
			t.Fatalf("OpenFS(%s): %v", name, err)
		}
		g.Close()
	}
	if _, err := OpenFS(fsys, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
