package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestAdviseHugeHeap checks that adviseHugeHeap leaves at least
// heapAdvised bytes of the heap in mappings advised for huge pages
// ("hg" in /proc/self/smaps' VmFlags), where the kernel's THP mode is
// madvise, and that it gives those pages back: kept free, they count
// towards startGC's memory limit, and a collection comes at once.
func TestAdviseHugeHeap(t *testing.T) {
	mode, err := os.ReadFile(thpSetting)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("THP mode is not madvise here (%q, %v)", mode, err)
	}
	t.Setenv("KBENCH_THP", "")
	adviseHugeHeap()
	kept := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(kept)
	if n := kept[0].Value.Uint64(); n >= heapAdvised/2 {
		t.Errorf("%d bytes of the heap free and kept after adviseHugeHeap, want them given back", n)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	var advised, size uint64
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("smaps line %q", sc.Text())
			}
			size = b - a
		case len(f) > 0 && f[0] == "VmFlags:" && strings.Contains(sc.Text(), " hg"):
			advised += size
		}
	}
	if advised < heapAdvised {
		t.Errorf("%d bytes of mappings advised for huge pages, want at least %d", advised, heapAdvised)
	}
}

// TestWantsHugeHeap checks which recordings kbench report advises huge
// pages for: files of hugeHeapMinSize bytes or more, pipes and
// directories, and not smaller files.
func TestWantsHugeHeap(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, size int64) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		path string
		want bool
	}{
		{"small file", testdataDir + "system.data", false},
		{"just below", file("below.data", hugeHeapMinSize-1), false},
		{"at the bound", file("at.data", hugeHeapMinSize), true},
		{"directory", dir, true},
		{"missing (the open says why)", filepath.Join(dir, "missing.data"), true},
	} {
		if got := wantsHugeHeap(tc.path); got != tc.want {
			t.Errorf("%s: wantsHugeHeap(%q) = %v, want %v", tc.name, tc.path, got, tc.want)
		}
	}
}

// Standard input gets huge pages when it is large or its size is not
// known: a regular file by its size, a pipe that ends within the bytes
// read ahead (stdinPeekSize) by what it held.
func TestWantsHugeHeapStdin(t *testing.T) {
	dir := t.TempDir()
	regular := func(size int64) *os.File {
		path := filepath.Join(dir, fmt.Sprintf("stdin%d", size))
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	pipe := func(size int) *os.File { return pipeBytes(t, make([]byte, size)) }
	for _, tc := range []struct {
		name  string
		stdin *os.File
		want  bool
	}{
		{"small file", regular(1 << 10), false},
		{"large file", regular(hugeHeapMinSize), true},
		{"empty pipe", pipe(0), false},
		{"pipe ending within the peek", pipe(stdinPeekSize - 1), false},
		{"pipe of the peek's size", pipe(stdinPeekSize), true},
		{"longer pipe", pipe(3 * stdinPeekSize), true},
	} {
		savedFile, savedPeek := stdinFile, stdinPeek
		stdinFile, stdinPeek = tc.stdin, nil
		if got := wantsHugeHeap("-"); got != tc.want {
			t.Errorf("%s: wantsHugeHeap(\"-\") = %v, want %v", tc.name, got, tc.want)
		}
		stdinFile, stdinPeek = savedFile, savedPeek
	}
}
