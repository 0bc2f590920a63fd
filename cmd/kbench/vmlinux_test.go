package main

import (
	"cmp"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/elfwrite"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// vmlinuxDelta is where the fake vmlinux links the kernel: this much
// below where the recording found it, as with KASLR.
const vmlinuxDelta = 0x2000000

// fakeVmlinux writes to path a vmlinux holding the kernel text symbols
// of the kallsyms file ks, linked vmlinuxDelta below their addresses,
// with the build id id (none when nil). rng shapes it: each symbol's
// size (0, up to the next symbol, or less, leaving a gap perf resolves to
// no symbol), type, binding, aliases and labels inside functions, and
// where .text ends and a
// second text section, ".init.text", begins (perf gives it a map of its
// own).
func fakeVmlinux(t *testing.T, path, ks string, id []byte, rng *rand.Rand, symtab bool) {
	t.Helper()
	all, err := kallsyms.ReadFile(ks)
	if err != nil {
		t.Fatal(err)
	}
	var text []kallsyms.Symbol
	for _, s := range all {
		if s.Module == "" && s.IsFunction() {
			text = append(text, s)
		}
	}
	slices.SortStableFunc(text, func(a, b kallsyms.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	if len(text) < 4 {
		t.Fatalf("%s: %d text symbols", ks, len(text))
	}
	first, last := text[0].Addr-vmlinuxDelta, text[len(text)-1].Addr-vmlinuxDelta+0x1000
	split := text[len(text)/2+rng.IntN(len(text)/2)].Addr - vmlinuxDelta
	const textOff = 0x200000
	f := elfwrite.File{Type: elf.ET_EXEC, Machine: elf.EM_X86_64, Sections: []elfwrite.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: first, Size: split - first, Offset: textOff},
		{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: split, Size: last - split, Offset: textOff + (split - first) + 0x40},
		{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: last + 0x100000, Size: 0x1000, Offset: textOff + (last - first) + 0x80},
		{Name: ".comment", Type: elf.SHT_PROGBITS, Data: []byte("fake vmlinux\x00")},
	}}
	if id != nil {
		f.Sections = append(f.Sections, elfwrite.Section{Name: ".notes", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Data: elfwrite.BuildIDNote(id)})
	}
	sec := func(addr uint64) string {
		if addr < split {
			return ".text"
		}
		return ".init.text"
	}
	binds := []elf.SymBind{elf.STB_GLOBAL, elf.STB_LOCAL, elf.STB_WEAK}
	for i, s := range text {
		addr := s.Addr - vmlinuxDelta
		next := last
		if i+1 < len(text) {
			next = text[i+1].Addr - vmlinuxDelta
		}
		if sec(next) != sec(addr) {
			next = split
		}
		var size uint64
		switch gap := next - addr; rng.IntN(6) {
		case 0: // 0: perf extends it to the next symbol in .text only
		case 1, 2, 3:
			size = gap
		default:
			if gap > 1 {
				size = 1 + rng.Uint64N(gap-1)
			}
		}
		typ := elf.STT_FUNC
		if s.Name == "_text" || s.Name == "_stext" || rng.IntN(8) == 0 {
			typ = elf.STT_NOTYPE // a label, kept in text sections
		}
		sym := elfwrite.Symbol{Name: s.Name, Type: typ, Bind: binds[rng.IntN(len(binds))], Section: sec(addr), Value: addr, Size: size}
		f.Symbols = append(f.Symbols, sym)
		if rng.IntN(6) == 0 { // an alias: symbols__fixup_duplicate picks one
			sym.Name, sym.Bind, sym.Size = "alias_"+s.Name, binds[rng.IntN(len(binds))], size/2
			f.Symbols = append(f.Symbols, sym)
		}
		if size > 8 && rng.IntN(5) == 0 {
			// A label inside the function, as entry code has: the
			// symbols overlap, and perf's tree decides.
			f.Symbols = append(f.Symbols, elfwrite.Symbol{Name: "inner_" + s.Name, Type: elf.STT_NOTYPE, Bind: elf.STB_LOCAL, Section: sec(addr), Value: addr + size/2})
		}
	}
	f.Symbols = append(f.Symbols,
		elfwrite.Symbol{Name: "some_data", Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: ".data", Value: last + 0x100010, Size: 8},
		elfwrite.Symbol{Name: "hidden_label", Type: elf.STT_NOTYPE, Bind: elf.STB_LOCAL, Other: uint8(elf.STV_HIDDEN), Section: ".text", Value: first + 0x10},
		elfwrite.Symbol{Name: "abs_sym", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Index: elf.SHN_ABS, Value: first + 0x20, Size: 4},
		elfwrite.Symbol{Name: "undef_sym", Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL},
		elfwrite.Symbol{Name: "comment_label", Type: elf.STT_NOTYPE, Bind: elf.STB_GLOBAL, Section: ".comment", Value: 2})
	rng.Shuffle(len(f.Symbols), func(i, j int) { f.Symbols[i], f.Symbols[j] = f.Symbols[j], f.Symbols[i] })
	if !symtab {
		f.Symbols = nil
	}
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestReportVmlinuxAgainstPerf compares the kernel's symbols from a
// vmlinux with perf 6.1's, on recordings whose kernel text the committed
// kallsyms excerpt describes, with vmlinux files made from it at random
// (fakeVmlinux): named by -vmlinux (perf -k), and found in the build-id
// cache (perf's dso__load_kernel_sym looks there before its
// vmlinux_path). A vmlinux with another build id or without .symtab is
// refused: with -k, the kernel then has no symbols at all.
func TestReportVmlinuxAgainstPerf(t *testing.T) {
	if _, err := perftest.ReportTable(testdataDir + "sleep.data"); errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	type variant struct {
		name   string
		id     func(rec []byte) []byte
		symtab bool
		cached bool // found in the build-id cache instead of named
	}
	variants := []variant{
		{"named", func(rec []byte) []byte { return rec }, true, false},
		{"cached", func(rec []byte) []byte { return rec }, true, true},
		{"no-build-id-in-file", func([]byte) []byte { return nil }, true, false},
		{"other-build-id", func(rec []byte) []byte { return append([]byte{rec[0] ^ 0xff}, rec[1:]...) }, true, false},
		{"stripped", func(rec []byte) []byte { return rec }, false, false},
		// Found first, refused, and kallsyms after all.
		{"cached-other-build-id", func(rec []byte) []byte { return append([]byte{rec[0] ^ 0xff}, rec[1:]...) }, true, true},
	}
	// Lines of perf's scripts with a symbol of the vmlinux, and in the
	// section map: a test in which perf shows none tests little.
	symbolLines, sectionLines := map[string]int{}, map[string]int{}
	defer func() {
		for _, name := range []string{"system.data", "callchain.data"} {
			if symbolLines[name] == 0 || sectionLines[name] == 0 {
				t.Errorf("%s: perf script printed %d kernel lines with a vmlinux symbol, %d in its section map: the cases test little", name, symbolLines[name], sectionLines[name])
			}
		}
	}()
	for _, name := range []string{"system.data", "callchain.data"} {
		file := testdataDir + name
		rec := kernelBuildIDOf(t, file)
		for seed := range uint64(4) {
			for _, v := range variants {
				if seed > 0 && v.name != "named" && v.name != "cached" {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%s", name, seed, v.name), func(t *testing.T) {
					home := t.TempDir()
					path := filepath.Join(home, "vmlinux-fake")
					if v.cached {
						h := hex.EncodeToString(rec)
						path = filepath.Join(home, ".debug", ".build-id", h[:2], h[2:], "elf")
					}
					fakeVmlinux(t, path, kallsymsSubset, v.id(rec), rand.New(rand.NewPCG(seed, 7)), v.symtab)
					used := v.name == "named" || v.name == "cached"
					perfArgs := []string{"-k", path}
					kbArgs := []string{"-vmlinux", path}
					if v.cached {
						perfArgs, kbArgs = nil, []string{"-debugdir", filepath.Join(home, ".debug")}
					}
					env := perftest.Options{Home: home}
					table, _, err := perftest.Run(env, append([]string{"report", "-i", file, "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none"}, perfArgs...)...)
					if err != nil {
						t.Fatal(err)
					}
					script, _, err := perftest.Run(env, append([]string{"script", "-F", "ip,sym,dso", "-i", file}, perfArgs...)...)
					if err != nil {
						t.Fatal(err)
					}
					got, stderr, err := report(t, nil, append(kbArgs, file)...)
					if err != nil {
						t.Fatal(err)
					}
					if used && strings.Contains(stderr, "no kernel symbols") {
						// The kallsyms choice's warning, moot with a vmlinux.
						t.Errorf("warns of no kernel symbols, with the vmlinux's: %s", stderr)
					}
					g, w := linediff.ReportRows(got), linediff.ReportRows(table)
					if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
						t.Errorf("table differs from perf report %q: %s", perfArgs, d)
					}
					if d := linediff.First(mustReport(t, nil, append(append(kbArgs, "-format", "script"), file)...), script); d != "" {
						t.Errorf("script differs from perf script %q: %s", perfArgs, d)
					}
					children, _, err := perftest.Run(env, append([]string{"report", "-i", file, "--stdio", "--sort", "dso,sym", "--children", "-n", "-g", "none"}, perfArgs...)...)
					if err != nil {
						t.Fatal(err)
					}
					got = mustReport(t, nil, append(append(kbArgs, "-children"), file)...)
					g, w = linediff.ReportRows(got), linediff.ReportRows(children)
					if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
						t.Errorf("children table differs from perf report --children %q: %s", perfArgs, d)
					}
					for _, line := range strings.Split(script, "\n") {
						switch {
						case !used:
						case strings.Contains(line, "([kernel.kallsyms].init.text)"):
							sectionLines[name]++
						case strings.Contains(line, "([kernel.kallsyms])") && !strings.Contains(line, "[unknown]"):
							symbolLines[name]++
						}
					}
					if v.name == "named" {
						// Its section maps are a kind of their own in JSON.
						doc := mustReport(t, nil, append(append(kbArgs, "-format", "json"), file)...)
						validate(t, []byte(doc))
						if strings.Contains(table, "[kernel.kallsyms].init.text") && !strings.Contains(doc, `"kind": "kernel_section"`) {
							t.Errorf("JSON lists no kernel_section map")
						}
					}
					if !v.cached {
						r, err := perfdata.Open(file)
						if err != nil {
							t.Fatal(err)
						}
						defer r.Close()
						res, err := attrib.Run(r, attrib.Options{Vmlinux: path})
						if err != nil {
							t.Fatal(err)
						}
						if used != strings.HasPrefix(res.KernelSymbols, "vmlinux ") {
							t.Errorf("KernelSymbols %q, want the vmlinux used: %v", res.KernelSymbols, used)
						}
					}
				})
			}
		}
	}
}

// kernelBuildIDOf returns the recording's kernel build id.
func kernelBuildIDOf(t *testing.T, file string) []byte {
	t.Helper()
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id := attrib.KernelBuildID(r.Features())
	if id == nil {
		t.Fatalf("%s: no kernel build id", file)
	}
	return id
}

// A file named vmlinux in the working directory is perf's first
// vmlinux_path entry; -ignore-vmlinux (perf's --ignore-vmlinux) passes
// the path over. Both compared with perf live, run in the same directory.
func TestReportVmlinuxInWorkingDirectory(t *testing.T) {
	if _, err := perftest.ReportTable(testdataDir + "sleep.data"); errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	file, err := filepath.Abs(testdataDir + "system.data")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := filepath.Abs(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	dir, home := t.TempDir(), t.TempDir()
	fakeVmlinux(t, filepath.Join(dir, "vmlinux"), ks, kernelBuildIDOf(t, file), rand.New(rand.NewPCG(11, 7)), true)
	t.Chdir(dir)
	tables := map[bool]string{}
	for _, ignore := range []bool{false, true} {
		perfArgs := []string{"--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none"}
		kbArgs := []string{"-debugdir", filepath.Join(home, ".debug")}
		if ignore {
			perfArgs, kbArgs = append(perfArgs, "--ignore-vmlinux"), append(kbArgs, "-ignore-vmlinux")
		}
		want, _, err := perftest.Run(perftest.Options{Home: home, Dir: dir}, append([]string{"report", "-i", file}, perfArgs...)...)
		if err != nil {
			t.Fatal(err)
		}
		got := mustReport(t, nil, append(kbArgs, file)...)
		g, w := linediff.ReportRows(got), linediff.ReportRows(want)
		if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
			t.Errorf("ignore-vmlinux %v: table differs from perf report: %s", ignore, d)
		}
		tables[ignore] = strings.Join(g, "\n")
	}
	if tables[false] == tables[true] {
		t.Error("the vmlinux in the working directory changed no row: the test tests nothing")
	}
}
