package attrib

import (
	"bytes"
	"debug/elf"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/elfwrite"
)

// libfRow is a table row of libf.so: its sample count and symbol, after
// a pid:command column if the row has one.
var libfRow = regexp.MustCompile(`(?m)\s(\d+)\s+(?:\d+:\S*\s+)?libf\.so\s+\[\.\] (\S+)$`)

// perf's map__load fails the lookup that loads a DSO whose load failed
// (symbols.Table.LoadFailed): that lookup finds no symbol, every later one
// finds the table's. So the first of three samples at one address of such
// a DSO is counted without a symbol and the other two in it, in every
// view, the caches on or off (none may keep the first answer); a DSO
// loaded whole puts all three in it.
func TestFailedLoadFailsItsFirstLookup(t *testing.T) {
	for _, failed := range []bool{false, true} {
		dir := t.TempDir()
		lib := filepath.Join(dir, "libf.so")
		f := elfwrite.Symbol{Name: "f", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1000, Size: 0x100}
		dyn := []elfwrite.Symbol{f}
		if failed { // as librustc_driver's .dynsym has
			dyn = append(dyn, elfwrite.Symbol{Name: "rust_metadata", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Index: 48, Size: 8})
		}
		file := elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
			{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Data: make([]byte, 0x300)},
		}, Symbols: []elfwrite.Symbol{f}, DynSymbols: dyn}
		if err := file.WriteFile(lib); err != nil {
			t.Fatal(err)
		}
		tab, err := symbols.ELF(lib)
		if err != nil || tab.Len() == 0 || tab.LoadFailed() != failed { // failed: f twice, unfixed
			t.Fatalf("load failed %v: a table of %d, LoadFailed %v, %v", failed, tab.Len(), tab.LoadFailed(), err)
		}
		path, w, done := tempRecording(t)
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		const base = 0x400000
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: base, Len: 0x1000, Prot: 5, Filename: lib, SampleID: perfdata.SampleID{Time: 1}})
		off := tab.Symbol(0).Start + 0x10
		for i := range 3 {
			w.WriteSample(&perfdata.Sample{Info: u, Pid: 100, Tid: 100, Time: uint64(2 + i), Period: 1, IP: base + off})
		}
		done()
		unknown := fmt.Sprintf("0x%016x", off)
		wantRows := [][2]string{{"3", "f"}}
		wantScript := []string{"f", "f", "f"}
		if failed {
			wantRows = [][2]string{{"2", "f"}, {"1", unknown}}
			wantScript = []string{"[unknown]", "f", "f"}
		}
		for _, opts := range []Options{{DebugDir: "-"}, {DebugDir: "-", Children: true}, {DebugDir: "-", Script: &bytes.Buffer{}}} {
			for _, cacheOff := range []bool{false, true} {
				out, _ := runCached(t, path, opts, cacheOff)
				if opts.Script != nil {
					var got []string
					for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
						if fs := strings.Fields(line); len(fs) == 3 {
							got = append(got, fs[1])
						}
					}
					if !slices.Equal(got, wantScript) {
						t.Errorf("load failed %v, caches off %v: script's symbols %q, want %q\n%s", failed, cacheOff, got, wantScript, out)
					}
					continue
				}
				var got [][2]string
				for _, m := range libfRow.FindAllStringSubmatch(out, -1) {
					got = append(got, [2]string{m[1], m[2]})
				}
				if !slices.Equal(got, wantRows) {
					t.Errorf("load failed %v, children %v, caches off %v: rows %q, want %q\n%s", failed, opts.Children, cacheOff, got, wantRows, out)
				}
			}
		}
	}
}

// The frames of a chain an unknown marker empties are looked up all the
// same: perf's thread__resolve_callchain_sample, in caller order, looks
// up each frame before it reaches the marker, and only then resets the
// cursor. So a void chain's frame in a DSO whose load fails takes that
// failure (the lookup that loads it finds no symbol), and the three
// samples at that address after it each find f, in the children table by
// (dso, sym) and by a sort key, as perf report --children (perf 6.1, run
// on this recording) counts them: f's Self 3, no row of libf.so without
// a symbol (the table without children, which resolves no chain, has f
// 2 and one such row).
// Without the void chain's lookup the first sample took the failure.
func TestVoidChainLooksUpItsFrames(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libf.so")
	f := elfwrite.Symbol{Name: "f", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: ".text", Value: 0x1000, Size: 0x100}
	file := elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Data: make([]byte, 0x300)},
	}, Symbols: []elfwrite.Symbol{f}, DynSymbols: []elfwrite.Symbol{f, {Name: "rust_metadata", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Index: 48, Size: 8}}}
	if err := file.WriteFile(lib); err != nil {
		t.Fatal(err)
	}
	tab, err := symbols.ELF(lib)
	if err != nil || !tab.LoadFailed() {
		t.Fatalf("a table of %d, LoadFailed %v, %v; want a failed load", tab.Len(), tab.LoadFailed(), err)
	}
	path, w, done := tempRecording(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true})
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	const base = 0x400000
	ip := base + tab.Symbol(0).Start + 0x10
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: base, Len: 0x1000, Prot: 5, Filename: lib, SampleID: perfdata.SampleID{Time: 1}})
	// In caller order: ip in user mode, then the guest marker, which perf
	// 6.1 does not know. The sample's own address has no map.
	w.WriteSample(&perfdata.Sample{Info: u, Pid: 100, Tid: 100, Time: 2, Period: 1, IP: 0x10, Callchain: []uint64{contextGuestKernel, contextUser, ip}})
	for i := range 3 {
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 100, Tid: 100, Time: uint64(3 + i), Period: 1, IP: ip, Callchain: []uint64{contextUser, ip}})
	}
	done()
	for _, opts := range []Options{{DebugDir: "-", Children: true}, {DebugDir: "-", Children: true, SortKeys: []string{"pid", "dso", "sym"}}} {
		for _, cacheOff := range []bool{false, true} {
			out, _ := runCached(t, path, opts, cacheOff)
			var got [][2]string
			for _, m := range libfRow.FindAllStringSubmatch(out, -1) {
				got = append(got, [2]string{m[1], m[2]})
			}
			if want := [][2]string{{"3", "f"}}; !slices.Equal(got, want) {
				t.Errorf("sort %q, caches off %v: rows %q, want %q\n%s", opts.SortKeys, cacheOff, got, want, out)
			}
		}
	}
}
