package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// TestAdviseHugeHeap checks that adviseHugeHeap leaves at least
// heapAdvised bytes of the heap in mappings advised for huge pages
// ("hg" in /proc/self/smaps' VmFlags), where the kernel's THP mode is
// madvise.
func TestAdviseHugeHeap(t *testing.T) {
	mode, err := os.ReadFile(thpSetting)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("THP mode is not madvise here (%q, %v)", mode, err)
	}
	t.Setenv("KBENCH_THP", "")
	adviseHugeHeap()
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
// pages for: files with hugeHeapMinData bytes of data or more, pipes and
// directories, and not smaller files.
func TestWantsHugeHeap(t *testing.T) {
	dir := t.TempDir()
	// write makes a file recording of n samples.
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := perfdata.NewWriter(f, perfdata.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := w.WriteSample(&perfdata.Sample{IP: 0x401000, Pid: 1, Tid: 1, Time: uint64(i + 1), Period: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Each sample takes the same bytes: n of them fill base+n*each.
	dataSize := func(path string) int {
		in, err := openRecording(path)
		if err != nil {
			t.Fatal(err)
		}
		defer in.r.Close()
		return int(in.r.Header().Data.Size)
	}
	base := dataSize(write("none.data", 0))
	each := dataSize(write("one.data", 1)) - base
	below := (hugeHeapMinData - base - 1) / each // base+below*each < the bound
	for _, tc := range []struct {
		name string
		path string
		want bool
	}{
		{"small file", write("small.data", 100), false},
		{"just below", write("below.data", below), false},
		{"above", write("above.data", below+1), true},
		{"pipe", testdataDir + "pipe.data", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := openRecording(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.r.Close()
			if got := wantsHugeHeap(in.r); got != tc.want {
				t.Errorf("wantsHugeHeap = %v for %d bytes of data (pipe %v); want %v", got, in.r.Header().Data.Size, in.r.PipeMode(), tc.want)
			}
		})
	}
}
