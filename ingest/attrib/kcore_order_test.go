package attrib_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// writeKernelSamples writes dir/perf.data: the kernel MMAP ([_text,
// _edata), pgoff _text, as perf record synthesizes it), one MMAP per line
// of dir/modules, then one kernel-mode sample per IP, with arch in the
// header.
func writeKernelSamples(t *testing.T, dir, arch string, ips []uint64) {
	ks, err := kallsyms.ReadFile(filepath.Join(dir, "kallsyms"))
	if err != nil {
		t.Fatal(err)
	}
	lm := kallsyms.Landmarks(ks)
	mods, err := modules.ReadFile(filepath.Join(dir, "modules"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: arch, Version: "6.1", NrCPUs: 1, Hostname: "test", OSRelease: "6.1"})
	if err != nil {
		t.Fatal(err)
	}
	k := uint16(perfdata.CPUModeKernel)
	w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: k}, Pid: ^uint32(0), Addr: lm.Text.Addr, Len: lm.Edata.Addr - lm.Text.Addr,
		Pgoff: lm.Text.Addr, Filename: "[kernel.kallsyms]_text", Prot: 5, Flags: 2})
	for _, m := range mods {
		w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: k}, Pid: ^uint32(0), Addr: m.Start, Len: m.Size, Filename: "[" + m.Name + "]", Prot: 5, Flags: 2})
	}
	for i, ip := range ips {
		w.WriteSample(&perfdata.Sample{Info: perfdata.Info{Misc: k}, Time: uint64(1000 + i), Period: 1, IP: ip})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestKernelLoadOrder pins perf 6.1's lazy kernel loading (checked
// against perf script when it is installed): samples in a module before
// the kernel map is loaded find the module's DSO loaded from its file
// (here: none), so they print [unknown] in the module; when the kernel
// then loads, kcore removes the module maps (later samples there print
// the symbol in [kernel.kallsyms]), while kallsyms alone drops the first
// symbol of that module each time its split enters it. perf script on an
// x86 host loads the kernel after the first sample of a native
// recording (arch_fetch_insn), so only that first sample sees the module
// unloaded; for other architectures the first kernel-map sample loads it.
func TestKernelLoadOrder(t *testing.T) {
	src := kcoreCase{arch: "x86_64", seed: 4}.generate(t)
	ks, err := kallsyms.ReadFile(filepath.Join(src, "kallsyms"))
	if err != nil {
		t.Fatal(err)
	}
	// A module with at least three symbols: its first (in address order)
	// and its third; and a kernel text symbol.
	byMod := map[string][]kallsyms.Symbol{}
	var kern kallsyms.Symbol
	for _, s := range ks {
		if s.Module != "" && s.Module != "bpf" {
			byMod[s.Module] = append(byMod[s.Module], s)
		} else if kern.Name == "" && s.Module == "" && s.Type == 'T' && !strings.HasPrefix(s.Name, "_") {
			kern = s // the first kernel function not named like a landmark
		}
	}
	var mod string
	for name, syms := range byMod {
		if len(syms) >= 3 && (mod == "" || name < mod) {
			mod = name
		}
	}
	syms := byMod[mod]
	slices.SortFunc(syms, func(a, b kallsyms.Symbol) int { return int(a.Addr>>1) - int(b.Addr>>1) })
	first, third := syms[0], syms[2]
	ips := []uint64{third.Addr + 4, first.Addr + 4, kern.Addr + 4, third.Addr + 4, first.Addr + 4}
	m := "[" + mod + "]"
	line := func(ip uint64, sym, dso string) string { return fmt.Sprintf(" %16x %s (%s)\n", ip, sym, dso) }
	const kk, unk = "[kernel.kallsyms]", "[unknown]"

	for _, tc := range []struct {
		arch  string
		kcore bool
		want  []string // sym and dso per sample
	}{
		{"aarch64", false, []string{unk, m, unk, m, kern.Name, kk, third.Name, m, unk, m}},
		{"aarch64", true, []string{unk, m, unk, m, kern.Name, kk, third.Name, kk, first.Name, kk}},
		{"x86_64", false, []string{unk, m, unk, m, kern.Name, kk, third.Name, m, unk, m}},
		{"x86_64", true, []string{unk, m, first.Name, kk, kern.Name, kk, third.Name, kk, first.Name, kk}},
	} {
		t.Run(fmt.Sprintf("%s/kcore=%v", tc.arch, tc.kcore), func(t *testing.T) {
			files := []string{"kallsyms", "modules"}
			if tc.kcore {
				files = append(files, "kcore")
			}
			dir := copyCorpus(t, src, "kallsyms", files...)
			writeKernelSamples(t, dir, tc.arch, ips)
			var want strings.Builder
			for i, ip := range ips {
				want.WriteString(line(ip, tc.want[2*i], tc.want[2*i+1]))
			}
			if perf, ok := perfScript(t, dir); ok && perf != want.String() {
				t.Errorf("perf script no longer prints what this test pins:\n%s\nwant\n%s", perf, want.String())
			}
			for _, impl := range mapset.All {
				got, _ := kbenchScript(t, dir, tc.arch, impl)
				if got != want.String() {
					t.Errorf("%s:\n%s\nwant\n%s", impl.Name, got, want.String())
				}
			}
		})
	}
}
