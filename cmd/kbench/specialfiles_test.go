//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A failed command's partial output is removed when it is a regular file,
// and kept when it is not: a named pipe here, /dev/null for a user of -o.
func TestRemovePartial(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "out")
	f, err := os.Create(regular)
	if err != nil {
		t.Fatal(err)
	}
	removePartial(f, regular)
	if _, err := os.Stat(regular); !os.IsNotExist(err) {
		t.Errorf("the partial regular file is still there (%v)", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	f, err = os.OpenFile(fifo, os.O_RDWR, 0) // read-write: no wait for a reader
	if err != nil {
		t.Fatal(err)
	}
	removePartial(f, fifo)
	if _, err := os.Stat(fifo); err != nil {
		t.Errorf("the named pipe was removed: %v", err)
	}
}

// kbench report removes its partial output when the recording turns out
// bad, and keeps an output that is not a regular file.
func TestReportFailureKeepsSpecialOutput(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../ingest/perfdata/testdata/hifreq.data")
	if err != nil {
		t.Fatal(err)
	}
	// A record header at file offset 0x4820 overwritten: an error once
	// the output is open, past the file's headers.
	copy(data[0x4820:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	bad := filepath.Join(dir, "bad.data")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "out")
	if code := run([]string{"report", "-progress", "never", "-kallsyms", "none", "-o", regular, bad}, io.Discard, io.Discard); code == 0 {
		t.Fatal("a bad recording reported without an error")
	}
	if _, err := os.Stat(regular); !os.IsNotExist(err) {
		t.Fatalf("the partial output is still there (%v): the error came before it was made", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0) // a reader, so that kbench's open does not wait
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if code := run([]string{"report", "-progress", "never", "-kallsyms", "none", "-o", fifo, bad}, io.Discard, io.Discard); code == 0 {
		t.Fatal("a bad recording reported without an error")
	}
	if _, err := os.Stat(fifo); err != nil {
		t.Errorf("the named pipe given to -o was removed: %v", err)
	}
}

// Special files in a corpus directory are refused at once, naming the
// file: a FIFO would block the open, /dev/zero would never end.
func TestMapsSpecialFiles(t *testing.T) {
	for _, special := range []string{"fifo", "/dev/zero"} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS("../../corpus/default")); err != nil {
			t.Fatal(err)
		}
		ks := filepath.Join(dir, "kallsyms")
		os.Remove(ks)
		if special == "fifo" {
			if err := syscall.Mkfifo(ks, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		} else if err := os.Symlink(special, ks); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var code int
		var out, errb bytes.Buffer
		go func() {
			code = run([]string{"maps", dir}, &out, &errb)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: kbench maps still running after 20 s", special)
		}
		if code != 1 || !strings.Contains(errb.String(), "kallsyms") || !strings.Contains(errb.String(), "not a regular file") {
			t.Errorf("%s: exit %d: %s", special, code, errb.String())
		}
	}
}
