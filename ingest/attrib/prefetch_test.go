package attrib

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// A job is read once: by a worker, whose result take waits for, or by
// the caller of take when no worker started it, and then by no worker.
func TestPrefetchReadsEachJobOnce(t *testing.T) {
	p := &prefetch{jobs: make(map[string]*prefetchJob)}
	var reads [4]atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	p.add("a", func() any { reads[0].Add(1); close(started); <-release; return "A" })
	p.add("b", func() any { reads[1].Add(1); return "B" })
	p.add("c", func() any { reads[2].Add(1); return "C" })
	p.add("c", func() any { reads[3].Add(1); return "twice" }) // a second job of one key is dropped
	p.wg.Go(p.work)
	<-started // the worker holds "a"; "b" and "c" are queued
	if _, ok := p.take("b"); ok {
		t.Fatal("take of a queued job: ok, want the caller to read it")
	}
	if _, ok := p.take("none"); ok {
		t.Fatal("take of an unknown key: ok")
	}
	got := make(chan any)
	go func() { v, _ := p.take("a"); got <- v }()
	select {
	case v := <-got:
		t.Fatalf("take of a job being read returned %v before the read ended", v)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if v := <-got; v != "A" {
		t.Fatalf("take(a) = %v, want A", v)
	}
	p.wg.Wait() // the worker ends after "c", skipping "b"
	if v, ok := p.take("c"); !ok || v != "C" {
		t.Fatalf("take(c) = %v, %v; want C, true", v, ok)
	}
	if n := [4]int32{reads[0].Load(), reads[1].Load(), reads[2].Load(), reads[3].Load()}; n != [4]int32{1, 0, 1, 0} {
		t.Fatalf("reads of a, b, c, c again: %v, want [1 0 1 0]", n)
	}
	p.stop()
}

// startPrefetch reads file paths only, each once, in the header's order
// (inline records first, by size), and inline records only when asked; what it reads is what the
// symbolizer would read itself.
func TestStartPrefetch(t *testing.T) {
	// An ELF file with symbols: this process's vdso (the test binary
	// may be stripped).
	img := ownVDSO()
	if img == nil {
		t.Skip("no vdso image")
	}
	exe := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(exe, img, 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"[kernel.kallsyms]", exe, "[vdso]", "/tmp/perf-1.map", exe, filepath.Join(t.TempDir(), "absent")}
	for _, inlines := range []bool{false, true} {
		p := startPrefetch(names, nil, "", "", inlines, nil)
		p.wg.Wait() // every job read
		var keys []string
		for k := range p.jobs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{tableKey(exe, nil), tableKey(names[5], nil)}
		if inlines {
			want = append(want, inlinesKey(exe, nil), inlinesKey(names[5], nil))
		}
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Fatalf("inlines %v: jobs %q, want %q", inlines, keys, want)
		}
		first := tableKey(exe, nil)
		if inlines {
			first = inlinesKey(exe, nil) // the largest file's (names[5] is absent)
		}
		if p.queue[0] != p.jobs[first] {
			t.Fatalf("inlines %v: the first job is not %q", inlines, first)
		}
		tab, ok := p.table(exe, nil)
		if !ok || tab == nil || tab.Len() == 0 {
			t.Fatalf("inlines %v: table of the test binary: %v, ok %v", inlines, tab, ok)
		}
		if want := loadFileTable("", "", exe, nil); tab.Len() != want.Len() {
			t.Fatalf("inlines %v: prefetched table has %d symbols, the symbolizer's %d", inlines, tab.Len(), want.Len())
		}
		if _, ok := p.table(exe, []byte{1}); ok {
			t.Fatalf("inlines %v: a table read for another build id was taken", inlines)
		}
		if tab, ok := p.table(names[5], nil); !ok || tab != nil {
			t.Fatalf("inlines %v: table of an absent file: %v, ok %v; want nil, true", inlines, tab, ok)
		}
		_, ok = p.inlines(exe, nil, exe)
		if ok != inlines {
			t.Fatalf("inlines %v: inline records taken: %v", inlines, ok)
		}
		if _, ok := p.inlines(names[5], nil, exe); ok {
			t.Fatalf("inlines %v: inline records of another symbol source taken", inlines)
		}
	}
}

// Run reads ahead the symbol tables of the DSOs the build-id header
// lists, and their inline records only for a view that unwinds user
// stacks (a script with callchains, a children table): a flat table of a
// --call-graph dwarf recording inflated libc's debug information for
// nothing.
func TestRunPrefetchesInlinesOnlyToUnwind(t *testing.T) {
	const file = "../../cmd/kbench/testdata/dwarf/dwarf.data"
	defer func() { prefetchStarted = nil }()
	for _, tc := range []struct {
		name    string
		opts    Options
		inlines bool
	}{
		{"table", Options{}, false},
		{"script -G", Options{Script: io.Discard, HideCallchain: true}, false},
		{"script", Options{Script: io.Discard}, true},
		{"children", Options{Children: true}, true},
	} {
		var tables, inlines int
		prefetchStarted = func(p *prefetch) {
			for k := range p.jobs {
				switch {
				case strings.HasPrefix(k, "table\x00"):
					tables++
				case strings.HasPrefix(k, "inlines\x00"):
					inlines++
				}
			}
		}
		r, err := perfdata.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		tc.opts.Kallsyms = nil
		tc.opts.DebugDir = "-"
		_, err = Run(r, tc.opts)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tables != 2 || (inlines == 2) != tc.inlines || (inlines != 0 && inlines != 2) {
			t.Errorf("%s: %d table and %d inline jobs, want 2 and inlines %v", tc.name, tables, inlines, tc.inlines)
		}
	}
}
