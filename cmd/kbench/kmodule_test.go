package main

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/elfwrite"
	"github.com/kmapindex/kmapindex/internal/perftest"
	"github.com/ulikunitz/xz"
)

var moduleSeeds = flag.Int("module-seeds", 10, "TestReportModuleFilesAgainstPerf: the number of random recordings")

// moduleRegressionSeeds are seeds TestReportModuleFilesAgainstPerf
// always runs, whose layouts once differed from perf: 213, a module's
// first lookup answered with the map found after its load's section maps
// reshaped the tree, not before; 497, kcore taken though a module map
// that others overlap is not in the modules file.
var moduleRegressionSeeds = []int{213, 497}

// TestReportModuleFilesAgainstPerf compares kbench report with perf on
// random recordings (writeRandomRecording) whose module maps name files
// perf finds, made at random by randomModuleFile: below --symfs, or in
// the build-id cache under the build id the recording gives the module;
// plain, .ko.xz or .ko.gz; sometimes stripped, or cached under another
// build id, which perf refuses; and with kcore beside kallsyms, which
// perf refuses once a module file's section maps are in (no modules file
// lists their names), or when the modules file's last line lacks its
// newline; on three eighths of the seeds, with callchains and without,
// the module maps overlap, as a kernel from 6.4 on reports them, so that
// perf's tree of the kernel maps answers. perf 6.1 then takes a module's
// symbols from its file, whether its first sample comes before the
// kernel's or after, remaps the module's map to the file's .text and adds
// a map for each other section. Tables and scripts are compared in order.
func TestReportModuleFilesAgainstPerf(t *testing.T) {
	lib, segs, base, baseKs := randomInputs(t)
	seeds := *moduleSeeds
	if testing.Short() {
		seeds = 4
	}
	list := make([]int, seeds)
	for i := range list {
		list[i] = i
	}
	for _, seed := range moduleRegressionSeeds {
		if seed >= seeds {
			list = append(list, seed)
		}
	}
	for _, seed := range list {
		cache, kcore := seed%2 == 1, seed%3 == 2
		name := fmt.Sprintf("seed%d/symfs", seed)
		if cache {
			name = fmt.Sprintf("seed%d/cache", seed)
		}
		if kcore {
			name += "+kcore"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if *keepRandom { // the recording, files and layout, to look at
				dir = filepath.Join(os.TempDir(), fmt.Sprintf("kmodule%d", seed))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(seed), 29))
			ksFile, ks := withModules(t, dir, base, baseKs, rng)
			opts := randomRecording{chains: seed%4 >= 2, cpus: true, rounds: seed%3 == 0, modules: true, overlap: seed%4 == 1 || seed%8 == 6, moduleFiles: map[string]string{}}
			home := filepath.Join(dir, "home")
			symfs := filepath.Join(dir, "symfs")
			debugDir := filepath.Join(home, ".debug")
			spans := moduleSpans(ks)
			if kcore {
				writeKcoreBeside(t, dir, ks, spans, rng.IntN(3) == 0)
			}
			for i, mod := range []string{"kmoda", "kmodb"} {
				comp := []string{"", ".xz", ".gz"}[rng.IntN(3)]
				file := moduleFile(mod) + comp
				opts.moduleFiles[mod] = file
				var id []byte
				if cache {
					id = make([]byte, 20)
					for j := range id {
						id[j] = byte(rng.Uint32())
					}
					opts.buildIDs = append(opts.buildIDs, perfdata.BuildID{Info: perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}, Pid: -1, BuildID: id, Filename: file})
				}
				fileID := id
				if cache && i == 1 && seed%4 == 3 {
					fileID = slices.Clone(id)
					fileID[0]++ // perf refuses it: kallsyms' symbols stay
				}
				stripped := seed%5 == 4 && i == 0
				b := compressed(t, randomModuleFile(t, rng, spans[mod][1], fileID, !stripped), comp)
				path := symfs + file
				if cache {
					entry := "elf"
					if rng.IntN(3) == 0 {
						entry = "debug"
					}
					h := fmt.Sprintf("%x", id)
					path = filepath.Join(debugDir, ".build-id", h[:2], h[2:], entry)
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data := filepath.Join(dir, "perf.data")
			writeRandomRecording(t, data, rng, opts, lib, segs, ks)
			perfOpts := perftest.Options{Home: home}
			var perfLayout, kbLayout []string
			if cache {
				kbLayout = []string{"-debugdir", debugDir}
			} else {
				perfLayout, kbLayout = []string{"--symfs", symfs}, []string{"-debugdir", "-", "-symfs", symfs}
				if err := os.MkdirAll(home, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range randomComparisons {
				switch c.name {
				case "table", "sym", "script", "scriptG":
				case "children", "children sym":
					if !opts.chains {
						continue
					}
				default:
					continue
				}
				c.run(t, data, perfOpts, append([]string{"--kallsyms", ksFile}, perfLayout...), append([]string{"-kallsyms", ksFile}, kbLayout...))
			}
		})
	}
}

// moduleSpans returns the start and length writeRandomRecording gives
// each module's map, by module name: from the page of its first kallsyms
// symbol to 0x100 past its last, in whole pages.
func moduleSpans(ks []kallsyms.Symbol) map[string][2]uint64 {
	first, last := map[string]uint64{}, map[string]uint64{}
	for _, s := range ks {
		if s.Module == "" {
			continue
		}
		if _, ok := first[s.Module]; !ok {
			first[s.Module] = s.Addr &^ 0xfff
		}
		last[s.Module] = s.Addr + 0x100
	}
	spans := map[string][2]uint64{}
	for m, f := range first {
		spans[m] = [2]uint64{f, (last[m] - f + 0xfff) &^ 0xfff}
	}
	return spans
}

// writeKcoreBeside writes beside dir/kallsyms (ks) what /proc/kcore and
// /proc/modules are beside /proc/kallsyms: a "modules" file listing the
// modules (spans) where they are, and a header-only "kcore" whose
// segments cover the kernel's text and the module area, so that perf and
// kbench take the kcore path. noNewline leaves the last line of modules
// without its newline, as a hand-made file may: perf then drops its
// address's last digit and refuses kcore.
func writeKcoreBeside(t *testing.T, dir string, ks []kallsyms.Symbol, spans map[string][2]uint64, noNewline bool) {
	t.Helper()
	var b strings.Builder
	mods := slices.Sorted(maps.Keys(spans))
	slices.Reverse(mods) // kmoda, which has a map, last
	for _, mod := range mods {
		fmt.Fprintf(&b, "%s %d 0 - Live %#x\n", mod, spans[mod][1], spans[mod][0])
	}
	text := b.String()
	if noNewline {
		text = strings.TrimSuffix(text, "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "modules"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stext := kallsyms.Landmarks(ks).Text.Addr &^ (2<<20 - 1)
	segs := []index.Segment{
		{Vaddr: stext, Size: 0xffffffffa0000000 - stext, Offset: 0x1000},
		{Vaddr: 0xffffffffa0000000, Size: 0x5f000000, Offset: 0x10000000},
	}
	f, err := os.Create(filepath.Join(dir, "kcore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := kcore.WriteHeaders(f, segs, elf.EM_X86_64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
}

// randomModuleFile returns a relocatable module (ET_REL) whose .text
// spans span bytes, with the build id id (none when nil) and, with
// symtab, symbols drawn from rng: functions across .text (sizes of 0, to
// the next, or less; aliases; all bindings), functions in .init.text and
// .text.unlikely, objects in .data, and symbols perf drops (in a section
// not loaded, absolute, of a file or a section). A .modinfo section of
// random size before .text moves its file offset.
func randomModuleFile(t *testing.T, rng *rand.Rand, span uint64, id []byte, symtab bool) []byte {
	t.Helper()
	var secs []elfwrite.Section
	if id != nil {
		secs = append(secs, elfwrite.Section{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Data: elfwrite.BuildIDNote(id)})
	}
	exec := elf.SHF_ALLOC | elf.SHF_EXECINSTR
	secs = append(secs,
		elfwrite.Section{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 0x10+rng.IntN(0x400))},
		elfwrite.Section{Name: ".text", Type: elf.SHT_PROGBITS, Flags: exec, Data: make([]byte, span)},
		elfwrite.Section{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: exec, Data: make([]byte, 0x100)},
		elfwrite.Section{Name: ".text.unlikely", Type: elf.SHT_PROGBITS, Flags: exec, Data: make([]byte, 0x80)},
		elfwrite.Section{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 0x100)},
		elfwrite.Section{Name: ".comment", Type: elf.SHT_PROGBITS, Data: make([]byte, 0x20)},
	)
	f := elfwrite.File{Type: elf.ET_REL, Machine: elf.EM_X86_64, Sections: secs}
	if !symtab {
		b, err := f.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	binds := []elf.SymBind{elf.STB_LOCAL, elf.STB_GLOBAL, elf.STB_WEAK}
	bind := func() elf.SymBind { return binds[rng.IntN(len(binds))] }
	starts := make([]uint64, max(rng.IntN(14)-1, 0)) // sometimes none: the module then has no symbols of its own
	for i := range starts {
		starts[i] = uint64(rng.IntN(int(span)))
	}
	slices.Sort(starts)
	var syms []elfwrite.Symbol
	for i, a := range starts {
		var size uint64
		next := span
		if i+1 < len(starts) {
			next = starts[i+1]
		}
		switch rng.IntN(3) {
		case 1:
			size = next - a
		case 2:
			size = (next - a) / 2
		}
		syms = append(syms, elfwrite.Symbol{Name: fmt.Sprintf("ko_fn%d", i), Type: elf.STT_FUNC, Bind: bind(), Section: ".text", Value: a, Size: size})
		if rng.IntN(5) == 0 {
			syms = append(syms, elfwrite.Symbol{Name: fmt.Sprintf("ko_alias%d", i), Type: elf.STT_FUNC, Bind: bind(), Section: ".text", Value: a, Size: size})
		}
	}
	syms = append(syms,
		elfwrite.Symbol{Name: "ko_init", Type: elf.STT_FUNC, Bind: bind(), Section: ".init.text", Value: uint64(rng.IntN(0x80)), Size: 0x20},
		elfwrite.Symbol{Name: "ko_cold", Type: elf.STT_FUNC, Bind: bind(), Section: ".text.unlikely", Value: 0x10, Size: uint64(rng.IntN(0x40))},
		elfwrite.Symbol{Name: "ko_var", Type: elf.STT_OBJECT, Bind: bind(), Section: ".data", Value: 0x8, Size: 8},
		elfwrite.Symbol{Name: "ko_note", Type: elf.STT_FUNC, Bind: bind(), Section: ".comment", Value: 0, Size: 4},
		elfwrite.Symbol{Name: "ko_abs", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Index: elf.SHN_ABS, Value: 0x40, Size: 4},
		elfwrite.Symbol{Name: "ko.c", Type: elf.STT_FILE, Bind: elf.STB_LOCAL, Index: elf.SHN_ABS},
		elfwrite.Symbol{Name: "", Type: elf.STT_SECTION, Bind: elf.STB_LOCAL, Section: ".text"},
	)
	rng.Shuffle(len(syms), func(i, j int) { syms[i], syms[j] = syms[j], syms[i] })
	f.Symbols = syms
	b, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compressed returns b compressed as a module file with suffix comp
// (".xz", ".gz"; "": b itself).
func compressed(t *testing.T, b []byte, comp string) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch comp {
	case "":
		return b
	case ".xz":
		w, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case ".gz":
		w := gzip.NewWriter(&buf)
		w.Write(b)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("compression %q", comp)
	}
	return buf.Bytes()
}
