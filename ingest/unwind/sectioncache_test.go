package unwind

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/internal/dwarf"
	"github.com/kmapindex/kmapindex/internal/filemap"
)

// canMap reports whether filemap maps files here.
func canMap(t *testing.T) bool {
	f, err := os.CreateTemp(t.TempDir(), "map")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b, err := filemap.Map(f, 0, 1)
	if err != nil {
		return false
	}
	filemap.Unmap(b)
	return true
}

// TestSectionCacheTruncated truncates the cached sections an Inlines
// has mapped, as someone else rewriting the cache in place would: its
// reads of them fault, and it answers from the symbol table instead of
// crashing, as it would without DWARF; so does one whose files were
// truncated while it opened.
func TestSectionCacheTruncated(t *testing.T) {
	if !canMap(t) {
		t.Skip("no file mappings here")
	}
	defer func(n uint64) { minCachedSection = n }(minCachedSection)
	minCachedSection = 1
	file := compressedPrograms(t, "zlib")[0]
	cache := &SectionCache{Dir: filepath.Join(t.TempDir(), "cache")}
	plain, err := OpenInlines(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.cus) == 0 {
		t.Fatal("no units with ranges")
	}
	if _, err := OpenInlines(file, cache); err != nil { // caches
		t.Fatal(err)
	}
	truncate := func() {
		entries, err := os.ReadDir(cache.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.Truncate(filepath.Join(cache.Dir, e.Name()), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, err := OpenInlines(file, cache) // maps
	if err != nil {
		t.Fatal(err)
	}
	if len(in.mapped) == 0 {
		t.Fatal("no section mapped from the cache")
	}
	truncate()
	// And truncated before the units are listed: opening faults.
	if _, err := OpenInlines(file, cache); err != nil { // caches again
		t.Fatal(err)
	}
	defer func() { afterLoadDWARF = nil }()
	afterLoadDWARF = truncate
	early, err := OpenInlines(file, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(early.mapped) == 0 || early.d != nil {
		t.Fatalf("%d sections mapped; the DWARF still read (%v) after truncated files were", len(early.mapped), early.d != nil)
	}
	symbolsOnly := &Inlines{syms: plain.syms, secs: plain.secs, units: map[dwarf.Offset]*unitFuncs{}, memo: map[uint64]inlineAnswer{}}
	for _, u := range plain.cus {
		for _, addr := range []uint64{u.lo, (u.lo + u.hi) / 2, u.hi - 1} {
			n2, ok2 := symbolsOnly.Funcs(addr)
			for _, in := range []*Inlines{in, early} {
				if n1, ok1 := in.Funcs(addr); ok1 != ok2 || !slices.Equal(n1, n2) {
					t.Fatalf("%#x: %q %v with the cache truncated, %q %v from the symbol table", addr, n1, ok1, n2, ok2)
				}
			}
		}
	}
	if in.d != nil {
		t.Fatal("the DWARF is still read after a fault")
	}
}

// TestSectionCache reads the compressed sections of a program built at
// test time through a SectionCache: the first read inflates and caches
// each, the second reads the cache (a cached file altered in place is
// what it gives), a file of the wrong size or a section whose file
// changed is inflated again, and the directory stays under its bound.
// Inline answers are the same with and without the cache.
func TestSectionCache(t *testing.T) {
	defer func(n uint64) { minCachedSection = n }(minCachedSection)
	minCachedSection = 1
	file := compressedPrograms(t, "zlib")[0]
	cache := &SectionCache{Dir: filepath.Join(t.TempDir(), "cache")}
	filemapWorks := canMap(t)
	type read struct {
		name string
		data []byte
	}
	readAll := func() []read {
		t.Helper()
		fh, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		fi, err := fh.Stat()
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(fh)
		if err != nil {
			t.Fatal(err)
		}
		var out []read
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_COMPRESSED == 0 {
				continue
			}
			got, mapping, err := sectionData(f, fh, s, cache, file, fi)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			if mapping != nil {
				// The cache file's mapping: copied, for the file is
				// rewritten in place below (which SectionCache never
				// does), and unmapped.
				got = bytes.Clone(got)
				filemap.Unmap(mapping)
			} else if filemapWorks {
				t.Fatalf("%s: not mapped from the cache", s.Name)
			}
			name, ok := cache.name(file, fi, fh, s)
			if !ok {
				t.Fatalf("%s: not cacheable", s.Name)
			}
			out = append(out, read{name, got})
		}
		return out
	}
	want := readAll() // inflated
	if len(want) == 0 {
		t.Skip("objcopy compressed no section")
	}
	for _, r := range want {
		if b, err := os.ReadFile(r.name); err != nil || !bytes.Equal(b, r.data) {
			t.Fatalf("%s: cached %d bytes (%v), inflated %d", r.name, len(b), err, len(r.data))
		}
	}
	// Altered in place, same size: the cache is what is read.
	altered := bytes.Clone(want[0].data)
	altered[0] ^= 0xff
	if err := os.WriteFile(want[0].name, altered, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readAll(); !bytes.Equal(got[0].data, altered) {
		t.Fatal("the second read did not come from the cache")
	}
	// The wrong size: inflated again.
	if err := os.WriteFile(want[0].name, want[0].data[:len(want[0].data)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readAll(); !bytes.Equal(got[0].data, want[0].data) {
		t.Fatal("a cached section of the wrong size was used")
	}
	// The file changed (its time): other names, the right bytes.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	got := readAll()
	for i := range got {
		if got[i].name == want[i].name || !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("%s: after the file changed: name kept %v, bytes equal %v", got[i].name, got[i].name == want[i].name, bytes.Equal(got[i].data, want[i].data))
		}
	}
	// Bounded: the oldest go, the files of the first reads.
	entries, _ := os.ReadDir(cache.Dir)
	if len(entries) != 2*len(want) {
		t.Fatalf("%d cached files, want %d", len(entries), 2*len(want))
	}
	earlier := time.Now().Add(-time.Hour) // the clock may not tell the rounds apart
	for _, r := range want {
		if err := os.Chtimes(r.name, earlier, earlier); err != nil {
			t.Fatal(err)
		}
	}
	cache.MaxBytes = 0
	var newest []string
	for _, r := range got {
		cache.MaxBytes += int64(len(r.data))
		newest = append(newest, filepath.Base(r.name))
	}
	cache.trim(0)
	entries, _ = os.ReadDir(cache.Dir)
	var kept []string
	for _, e := range entries {
		kept = append(kept, e.Name())
	}
	slices.Sort(kept)
	slices.Sort(newest)
	if !slices.Equal(kept, newest) {
		t.Fatalf("kept %q under a bound of %d bytes, want the newest %q", kept, cache.MaxBytes, newest)
	}
	// Inline answers with and without the cache.
	cache.MaxBytes = 0
	plain, err := OpenInlines(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // inflating, then from the cache
		cached, err := OpenInlines(file, cache)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range plain.cus {
			for addr := u.lo; addr < u.hi; addr++ {
				n1, ok1 := plain.Funcs(addr)
				n2, ok2 := cached.Funcs(addr)
				if ok1 != ok2 || !slices.Equal(n1, n2) {
					t.Fatalf("%#x: %q %v without the cache, %q %v with", addr, n1, ok1, n2, ok2)
				}
			}
		}
	}
}
