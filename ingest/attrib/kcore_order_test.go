package attrib_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// kernelSamples describes a perf.data writeKernelSamples makes.
type kernelSamples struct {
	arch string
	ips  []uint64 // kernel-mode samples
	// modFile names a module's MMAP (default "[name]", as perf record
	// writes for modules whose path it does not know).
	modFile  func(name string) string
	buildIDs []perfdata.BuildID
}

// writeKernelSamples writes dir/perf.data: the kernel MMAP ([_text,
// _edata), pgoff _text, as perf record synthesizes it), one MMAP per line
// of dir/modules, then one kernel-mode sample per IP.
func writeKernelSamples(t *testing.T, dir string, ksm kernelSamples) {
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
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: ksm.arch, Version: "6.1", NrCPUs: 1, Hostname: "test", OSRelease: "6.1", BuildIDs: ksm.buildIDs})
	if err != nil {
		t.Fatal(err)
	}
	k := uint16(perfdata.CPUModeKernel)
	w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: k}, Pid: ^uint32(0), Addr: lm.Text.Addr, Len: lm.Edata.Addr - lm.Text.Addr,
		Pgoff: lm.Text.Addr, Filename: "[kernel.kallsyms]_text", Prot: 5, Flags: 2})
	for _, m := range mods {
		name := "[" + m.Name + "]"
		if ksm.modFile != nil {
			name = ksm.modFile(m.Name)
		}
		w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: k}, Pid: ^uint32(0), Addr: m.Start, Len: m.Size, Filename: name, Prot: 5, Flags: 2})
	}
	for i, ip := range ksm.ips {
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
			writeKernelSamples(t, dir, kernelSamples{arch: tc.arch, ips: ips})
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

// TestKernelDSONames pins how perf 6.1 names kernel DSOs (checked against
// perf script when it is installed): a module MMAP's .ko path prints as
// "[name]" ('-' as '_') unless the build-id table has the path (perf made
// that DSO first, by the path); the kernel prints as the first
// kernel-space build-id entry that is not a module, "[kernel.kallsyms]"
// or a vmlinux path.
func TestKernelDSONames(t *testing.T) {
	src := kcoreCase{arch: "x86_64", seed: 4}.generate(t)
	ks, err := kallsyms.ReadFile(filepath.Join(src, "kallsyms"))
	if err != nil {
		t.Fatal(err)
	}
	var modSym, kernSym kallsyms.Symbol
	for _, s := range ks {
		if modSym.Name == "" && s.Module != "" && s.Module != "bpf" && strings.HasSuffix(s.Name, "_fn1") {
			modSym = s
		}
		if kernSym.Name == "" && s.Module == "" && s.Type == 'T' && !strings.HasPrefix(s.Name, "_") {
			kernSym = s
		}
	}
	path := func(name string) string {
		return "/lib/modules/6.1.0-18-amd64/kernel/drivers/" + strings.ReplaceAll(name, "_", "-") + ".ko"
	}
	kmisc := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
	id := []byte{1, 2, 3, 4}
	ips := []uint64{kernSym.Addr + 4, modSym.Addr + 4}
	line := func(ip uint64, sym, dso string) string { return fmt.Sprintf(" %16x %s (%s)\n", ip, sym, dso) }
	vmlinux := "/usr/lib/debug/lib/modules/6.1.0-18-amd64/vmlinux"
	for _, tc := range []struct {
		name          string
		buildIDs      []perfdata.BuildID
		kernel, modul string
	}{
		{"no build ids", nil, "[kernel.kallsyms]", "[" + modSym.Module + "]"},
		{"module in the build-id table", []perfdata.BuildID{{Info: kmisc, Pid: -1, BuildID: id, Filename: path(modSym.Module)}},
			"[kernel.kallsyms]", path(modSym.Module)},
		{"kernel by path", []perfdata.BuildID{{Info: kmisc, Pid: -1, BuildID: id, Filename: vmlinux}}, vmlinux, "[" + modSym.Module + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyCorpus(t, src, "kallsyms", "kallsyms", "modules")
			writeKernelSamples(t, dir, kernelSamples{arch: "aarch64", ips: ips, modFile: path, buildIDs: tc.buildIDs})
			want := line(ips[0], kernSym.Name, tc.kernel) + line(ips[1], modSym.Name, tc.modul)
			if perf, ok := perfScript(t, dir); ok && perf != want {
				t.Errorf("perf script no longer prints what this test pins:\n%s\nwant\n%s", perf, want)
			}
			for _, impl := range mapset.All {
				if got, _ := kbenchScript(t, dir, "aarch64", impl); got != want {
					t.Errorf("%s:\n%s\nwant\n%s", impl.Name, got, want)
				}
			}
		})
	}
}

// A kernel MMAP whose range wraps past 2^64 is skipped with a warning
// naming its offset, as perf warns and goes on; every sample is still
// attributed.
func TestMalformedMmapSkipped(t *testing.T) {
	k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
	file := userRecording(t, 3, func(w *perfdata.Writer) {
		w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0xff00000000000000, Filename: "[kernel.kallsyms]_text"})
	})
	for _, impl := range mapset.All {
		res := runFile(t, file, impl)
		if res.Samples != 3 || res.Unknown != 0 || len(res.Warnings) != 1 ||
			!strings.Contains(res.Warnings[0], "file offset 0x") || !strings.Contains(res.Warnings[0], "wraps past 2^64") {
			t.Errorf("%s: %d samples, %d unknown, warnings %q", impl.Name, res.Samples, res.Unknown, res.Warnings)
		}
	}
}

// LOST and LOST_SAMPLES records are counted and reported as perf reports
// them: the table's "# Total Lost Samples" and perf's stderr warnings.
func TestLostReported(t *testing.T) {
	// A record, its body, and the sample_id trailer of the writer's event
	// (pid/tid and time).
	raw := func(typ uint32, body ...uint64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, typ)
		b = binary.LittleEndian.AppendUint16(b, 0)
		b = binary.LittleEndian.AppendUint16(b, uint16(8+8*len(body)+16))
		for _, v := range body {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return append(b, make([]byte, 16)...)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	file := userRecording(t, 10, func(w *perfdata.Writer) {
		must(w.WriteRaw(raw(uint32(perfdata.RecordLostSamples), 990)))
		must(w.WriteRaw(raw(uint32(perfdata.RecordLost), 1, 5)))
	})
	res := runFile(t, file, mapset.BTree)
	if res.LostSamples != 990 || res.LostChunks != 1 || res.LostEvents != 5 {
		t.Errorf("lost samples %d, chunks %d, events %d; want 990, 1, 5", res.LostSamples, res.LostChunks, res.LostEvents)
	}
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "# Total Lost Samples: 990\n") {
		t.Errorf("table header:\n%s", b.String())
	}
	warn := strings.Join(res.LostWarnings(), "\n")
	if !strings.Contains(warn, "and lost 1 chunks!") || !strings.Contains(warn, "Processed 1000 samples and lost 99.00%!") {
		t.Errorf("warnings %q", warn)
	}
}

// userRecording writes a recording of n user samples in one map of
// process 7, after the records extra writes, and returns its path.
func userRecording(t *testing.T, n int, extra func(w *perfdata.Writer)) string {
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	extra(w)
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x1000, Filename: "/bin/x", Prot: 5})
	for i := range n {
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: uint64(10 + i), Period: 1, IP: 0x400010})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runFile attributes the recording at path on impl, reading no DSO files.
func runFile(t *testing.T, path string, impl mapset.Impl) *attrib.Result {
	r, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := attrib.Run(r, attrib.Options{Impl: impl, DebugDir: "-", NoFiles: true})
	if err != nil {
		t.Fatalf("%s: %v", impl.Name, err)
	}
	return res
}

// Executable anonymous memory is named /tmp/perf-PID.map and its symbols
// come from that file, as JIT runtimes write it (perf's perf map);
// compared with perf script when it is installed.
func TestPerfMapJIT(t *testing.T) {
	const pid = 3999917 // above pid_max's default: no live process has it
	mapFile := fmt.Sprintf("/tmp/perf-%d.map", pid)
	if err := os.WriteFile(mapFile, []byte("7f1000000000 100 jit_hot\n7f1000000100 80 Interpreter::run\n"), 0o644); err != nil {
		t.Skipf("cannot write %s: %v", mapFile, err)
	}
	defer os.Remove(mapFile)
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: "aarch64"})
	if err != nil {
		t.Fatal(err)
	}
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	id := perfdata.SampleID{Pid: pid, Tid: pid}
	w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: perfdata.MiscCommExec}, Pid: pid, Tid: pid, Comm: "jit", SampleID: id})
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: 0x7f1000000000, Len: 0x10000, Filename: "//anon", Prot: 7, Flags: 0x22, SampleID: id})
	ips := []uint64{0x7f1000000010, 0x7f1000000120, 0x7f1000000500}
	for i, ip := range ips {
		w.WriteSample(&perfdata.Sample{Info: u, Pid: pid, Tid: pid, Time: uint64(100 + i), Period: 1, IP: ip})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dso := "(" + mapFile + ")"
	want := fmt.Sprintf(" %16x jit_hot %s\n %16x Interpreter::run %s\n %16x [unknown] %s\n", ips[0], dso, ips[1], dso, ips[2], dso)
	if out, err := perftest.Script(path); err == nil && out != want {
		t.Errorf("perf script no longer prints what this test pins:\n%s\nwant\n%s", out, want)
	} else if err == nil {
		t.Logf("perf script agrees:\n%s", out)
	}
	for _, impl := range mapset.All {
		r, err := perfdata.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err = attrib.Run(r, attrib.Options{Impl: impl, DebugDir: "-", Script: &b})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s:\n%s\nwant\n%s", impl.Name, b.String(), want)
		}
	}
}

// AUX area traces are not decoded; the run says so rather than printing
// a different sample set silently.
func TestAuxtraceReported(t *testing.T) {
	le := binary.LittleEndian
	rec := le.AppendUint32(nil, uint32(perfdata.RecordAuxtrace))
	rec = le.AppendUint16(rec, 0)
	rec = le.AppendUint16(rec, 8+40)
	rec = le.AppendUint64(rec, 16)         // size of the trace data after the record
	rec = append(rec, make([]byte, 32)...) // offset, reference, idx, tid, cpu, reserved
	rec = append(rec, make([]byte, 16)...) // the trace data
	file := userRecording(t, 2, func(w *perfdata.Writer) {
		if err := w.WriteRaw(rec); err != nil {
			t.Fatal(err)
		}
	})
	res := runFile(t, file, mapset.BTree)
	if w := strings.Join(res.LostWarnings(), "\n"); res.Samples != 2 || !strings.Contains(w, "1 AUX area trace records") {
		t.Errorf("%d samples, warnings %q", res.Samples, w)
	}
}
