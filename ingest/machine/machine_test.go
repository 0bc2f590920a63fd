package machine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

func forEachImpl(t *testing.T, f func(t *testing.T, m *Machine)) {
	for _, im := range mapset.All {
		t.Run("impl="+im.Name, func(t *testing.T) { f(t, New(im)) })
	}
}

// The kernel MMAP of §6.8 (perf 6.1 on this VM) and vector K8.
func TestKernelMmapAndKsymbol(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1209988, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
		vm, ok := m.Vmlinux()
		if !ok || vm.Mapping != index.MappingIdentity || vm.End != 0xffffffff82209988 || m.RefRelocName != "_text" || m.RefRelocAddr != 0xffffffff81000000 {
			t.Fatalf("vmlinux %v %v reloc %s %#x", vm, ok, m.RefRelocName, m.RefRelocAddr)
		}
		if got, ok := m.Resolve(CPUModeKernel, 1, 1, 0xffffffff81001234); !ok || got.MapIP(0xffffffff81001234) != 0xffffffff81001234 {
			t.Errorf("kernel resolve %v %v", got, ok)
		}
		if _, ok := m.Resolve(CPUModeUser, 1, 1, 0xffffffff81001234); ok {
			t.Error("a user sample found the kernel map")
		}
		if _, ok := m.Resolve(CPUModeHypervisor, 1, 1, 0xffffffff81001234); ok {
			t.Error("a hypervisor sample resolved")
		}
		// K8
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffc0186388, Len: 0x12a, Type: 1, Name: "bpf_prog_be31ae23198a0378_sd_devices"}))
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffc01863a0, Len: 0x40, Type: 1, Name: "bpf_prog_second"}))
		got, ok := m.Resolve(CPUModeKernel, 1, 1, 0xffffffffc01863a8)
		if !ok || got.DSO != "bpf_prog_be31ae23198a0378_sd_devices" || got.End != 0xffffffffc01864b2 || got.Kind != index.KindBPFProg {
			t.Errorf("K8: %v %v", got, ok)
		}
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffc0200000, Len: 0x1000, Name: "bpf_trampoline_6442522522"}))
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffc0300000, Len: 0x100, Type: 2, Name: "ool"}))
		kinds := map[string]index.Kind{}
		for _, x := range m.Kernel().Slice() {
			kinds[x.DSO] = x.Kind
		}
		if kinds["bpf_trampoline_6442522522"] != index.KindBPFImage || kinds["ool"] != index.KindOOL {
			t.Errorf("kinds %v", kinds)
		}
		// Unregistering any address inside removes the whole program map;
		// the kernel map is never removed.
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffc01863a0, Unregister: true}))
		must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffff81001000, Unregister: true}))
		if _, ok := m.Resolve(CPUModeKernel, 1, 1, 0xffffffffc01863a8); ok {
			t.Error("unregistered program still resolves")
		}
		if _, ok := m.Resolve(CPUModeKernel, 1, 1, 0xffffffff81001000); !ok {
			t.Error("kernel map removed by an unregister")
		}
		// A module MMAP, by path.
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0a00000, Len: 0x4d000, Filename: "/lib/modules/6.1/kernel/nf_tables.ko"}))
		if got, ok := m.Resolve(CPUModeKernel, 1, 1, 0xffffffffc0a01000); !ok || got.Kind != index.KindModule || got.MapIP(0xffffffffc0a01000) != 0x1000 {
			t.Errorf("module %v %v", got, ok)
		}
	})
}

// The first kernel hit runs the load hook once; the kernel map then has
// the loaded range.
func TestKernelLoadHook(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		calls := 0
		m.OnKernelLoad = func(m *Machine) {
			calls++
			vm, _ := m.Vmlinux()
			m.FixupKernel(vm.Start, vm.End+0x1000)
		}
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Addr: 0x10000, Len: 0x1000, Filename: "[kernel.kallsyms]_text"}))
		if _, ok := m.Resolve(CPUModeKernel, 0, 0, 0x11800); ok {
			t.Error("hit past the recorded end before loading")
		}
		m.Resolve(CPUModeKernel, 0, 0, 0x10010)
		m.Resolve(CPUModeKernel, 0, 0, 0x10020)
		if calls != 1 {
			t.Errorf("load hook ran %d times", calls)
		}
		if _, ok := m.Resolve(CPUModeKernel, 0, 0, 0x11800); !ok {
			t.Error("no hit in the loaded range")
		}
	})
}

// The first hit in a module's map runs the module hook once per DSO,
// before Resolve answers: the map it answers with is the one LoadModule
// remapped (the hit that loaded it too), a second map of the DSO keeps
// its pgoff, section maps go in unless a map of their name is there, and
// ModuleFile names the DSO's file.
func TestModuleLoadHook(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		const a, b = 0xffffffffc0a00000, 0xffffffffc0b00000
		var loads []string
		m.OnModuleLoad = func(m *Machine, mod index.Map) {
			loads = append(loads, mod.DSO)
			if mod.DSO != "[moda]" {
				return
			}
			secs := []index.Map{
				{Start: 0, End: 0x100, Pgoff: 0x2000, Kind: index.KindKernelSection, DSO: "[moda].init.text"},
				{Start: 0, End: 0x80, Pgoff: 0x3000, Kind: index.KindKernelSection, DSO: "[modb]"}, // named as a map: not inserted
				// sh_addr + sh_size past 2^64: in perf's tree, found by no address.
				{Start: ^uint64(0) - 0xff, End: 0x100, Kind: index.KindKernelSection, DSO: "[moda].wrapped"},
			}
			must(t, m.LoadModule(mod, 0x40, true, secs))
		}
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Addr: a, Len: 0x2000, Filename: "/lib/modules/6.1/moda.ko.xz"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Addr: a + 0x10000, Len: 0x1000, Filename: "/lib/modules/6.1/other/moda.ko"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Addr: b, Len: 0x1000, Filename: "[modb]"}))
		if got, ok := m.Resolve(CPUModeKernel, 0, 0, a+0x10); !ok || got.Pgoff != 0x40 || got.MapIP(a+0x10) != 0x50 {
			t.Errorf("the loading hit: %v %v, want pgoff 0x40", got, ok)
		}
		if got, _ := m.Resolve(CPUModeKernel, 0, 0, a+0x20); got.Pgoff != 0x40 {
			t.Errorf("a later hit: %v", got)
		}
		if got, _ := m.Resolve(CPUModeKernel, 0, 0, a+0x10010); got.Pgoff != 0 {
			t.Errorf("the DSO's other map: %v, want pgoff 0", got)
		}
		m.Resolve(CPUModeKernel, 0, 0, b+0x10)
		m.Resolve(CPUModeKernel, 0, 0, b+0x20)
		if !slices.Equal(loads, []string{"[moda]", "[modb]"}) {
			t.Errorf("hook ran for %q", loads)
		}
		if got, ok := m.Resolve(CPUModeKernel, 0, 0, 0x10); !ok || got.DSO != "[moda].init.text" || got.MapIP(0x10) != 0x2010 {
			t.Errorf("section map: %v %v", got, ok)
		}
		if got, _ := m.Resolve(CPUModeKernel, 0, 0, 0x90); got.DSO == "[modb]" {
			t.Errorf("a section map named as an existing map went in: %v", got)
		}
		if got, ok := m.Resolve(CPUModeKernel, 0, 0, ^uint64(0)-0x10); ok {
			t.Errorf("an address found the wrapping section map: %v", got)
		}
		if f := m.ModuleFile("[moda]"); f != "/lib/modules/6.1/moda.ko.xz" {
			t.Errorf("ModuleFile = %q, want the first MMAP's", f)
		}
	})
}

func TestUserMaps(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		const pid = 100
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid, Addr: 0x1000, Len: 0x8000, Pgoff: 0x100, Filename: "/usr/lib/libc.so.6", Prot: 5}))
		// A later mmap in the middle wins and splits (F1).
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid, Addr: 0x3000, Len: 0x2000, Filename: "//anon", Prot: 5}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid, Addr: 0x20000, Len: 0x1000, Pgoff: 0x7000, Filename: "[vdso]", Prot: 5}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid, Addr: 0x30000, Len: 0x1000, Filename: "[heap]", Prot: 3}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid, Addr: 0x40000, Len: 0, Filename: "empty"}))
		for _, tc := range []struct {
			ip      uint64
			dso     string
			mapIP   uint64
			mapping index.Mapping
		}{
			{0x1800, "/usr/lib/libc.so.6", 0x900, index.MappingDSO},
			{0x3800, "/tmp/perf-100.map", 0x3800, index.MappingIdentity},
			{0x6000, "/usr/lib/libc.so.6", 0x5100, index.MappingDSO},
			{0x20010, "[vdso]", 0x10, index.MappingDSO},
			{0x30010, "[heap]", 0x30010, index.MappingIdentity},
		} {
			got, ok := m.Resolve(CPUModeUser, pid, pid, tc.ip)
			if !ok || got.DSO != tc.dso || got.MapIP(tc.ip) != tc.mapIP || got.Mapping != tc.mapping {
				t.Errorf("Resolve(%#x) = %v %v, want %s map_ip %#x", tc.ip, got, ok, tc.dso, tc.mapIP)
			}
		}
		// A thread of the process shares its maps, even one first seen in
		// a sample.
		if got, ok := m.Resolve(CPUModeUser, pid, pid+1, 0x1800); !ok || got.DSO != "/usr/lib/libc.so.6" {
			t.Errorf("thread sees %v %v", got, ok)
		}
		// A forked process gets a copy: its later mmaps don't touch the
		// parent, and vice versa.
		m.Fork(200, pid, 200, pid, 0)
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 200, Tid: 200, Addr: 0x1000, Len: 0x1000, Filename: "/bin/child", Prot: 5}))
		if got, _ := m.Resolve(CPUModeUser, pid, pid, 0x1800); got.DSO != "/usr/lib/libc.so.6" {
			t.Errorf("child's mmap leaked into the parent: %v", got)
		}
		if got, _ := m.Resolve(CPUModeUser, 200, 200, 0x6000); got.DSO != "/usr/lib/libc.so.6" {
			t.Errorf("child lacks the parent's maps: %v", got)
		}
		// A new thread (same pid) shares.
		m.Fork(pid, pid, pid+5, pid, 0)
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: pid + 5, Addr: 0x50000, Len: 0x1000, Filename: "/lib/t.so", Prot: 5}))
		if got, ok := m.Resolve(CPUModeUser, pid, pid, 0x50010); !ok || got.DSO != "/lib/t.so" {
			t.Errorf("thread's mmap not shared: %v %v", got, ok)
		}
		// EXIT keeps the maps (perf 6.1); a FORK reusing the tid starts over.
		m.Exit(200, 200)
		if _, ok := m.Resolve(CPUModeUser, 200, 200, 0x1800); !ok {
			t.Error("exited process lost its maps")
		}
		m.Fork(200, 1, 200, 1, 0)
		if got, ok := m.Resolve(CPUModeUser, 200, 200, 0x1800); ok {
			t.Errorf("reused tid kept old maps: %v", got)
		}
		if err := m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 1, Tid: 1, Addr: ^uint64(0) - 10, Len: 100, Filename: "wrap"}); err == nil {
			t.Error("wrapping mmap accepted")
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSynthesizedForkDoesNotCloneMaps replays the records of pid 8429 in
// the large perf-bench recording (perf record -a started while `go test`
// ran a test binary): perf synthesized FORK(8429:8429):(6820:6820) with
// PERF_RECORD_MISC_FORK_EXEC for the test binary whose parent is the go
// command, then the binary's own MMAP2s. perf 6.1 does not clone the
// parent's maps for such a FORK, so a frame at 0xa27f94, past the test
// binary's map but inside the go command's, has no map. A kernel FORK
// (misc 0) clones, and perf then finds the go command's leftover tail.
func TestSynthesizedForkDoesNotCloneMaps(t *testing.T) {
	const goCmd, test = 6820, 8429
	tests := []struct {
		name    string
		misc    uint16
		wantDSO string // "" for no map
	}{
		{"synthesized", MiscForkExec, ""},
		{"kernel", 0, "/usr/local/go/bin/go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachImpl(t, func(t *testing.T, m *Machine) {
				m.Fork(goCmd, 6765, goCmd, 6765, tc.misc)
				must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: goCmd, Tid: goCmd, Addr: 0x400000, Len: 0x69e000, Filename: "/usr/local/go/bin/go", Prot: 5}))
				m.Fork(goCmd, goCmd, 6821, goCmd, tc.misc)
				m.Fork(test, goCmd, test, goCmd, tc.misc)
				must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: test, Tid: test, Addr: 0x400000, Len: 0x330000, Filename: "/tmp/go-build942201489/b312/symbols.test", Prot: 5}))
				must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: test, Tid: test, Addr: 0x7ff37752f000, Len: 0x156000, Pgoff: 0x26000, Filename: "/usr/lib/x86_64-linux-gnu/libc.so.6", Prot: 5}))
				m.Fork(test, test, 8433, test, tc.misc)
				for _, tid := range []uint32{test, 8433} {
					got, ok := m.Resolve(CPUModeUser, test, tid, 0xa27f94)
					if ok != (tc.wantDSO != "") || got.DSO != tc.wantDSO {
						t.Errorf("tid %d: 0xa27f94 resolves to %v %v, want %q", tid, got, ok, tc.wantDSO)
					}
					if got, ok := m.Resolve(CPUModeUser, test, tid, 0x627f94); !ok || got.DSO != "/tmp/go-build942201489/b312/symbols.test" {
						t.Errorf("tid %d: 0x627f94 resolves to %v %v", tid, got, ok)
					}
				}
				// The go command keeps its own map either way.
				if got, ok := m.Resolve(CPUModeUser, goCmd, 6821, 0xa27f94); !ok || got.DSO != "/usr/local/go/bin/go" {
					t.Errorf("go command: %v %v", got, ok)
				}
			})
		})
	}
}

// TestForkErroneousParent: a known thread ptid of another process than
// the FORK's ppid is replaced (perf's "removing erroneous parent
// thread"), so the child copies the maps of a fresh, empty parent.
func TestForkErroneousParent(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 10, Tid: 11, Addr: 0x1000, Len: 0x1000, Filename: "/bin/old", Prot: 5}))
		m.Fork(30, 20, 30, 11, 0) // ptid 11 now claims pid 20
		if _, ok := m.Resolve(CPUModeUser, 30, 30, 0x1800); ok {
			t.Error("child cloned the maps of the erroneous parent")
		}
		if p, ok := m.Thread(11); !ok || p.Pid != 20 {
			t.Errorf("thread 11: %+v %v", p, ok)
		}
	})
}

// TestUpdateThreadPid: a thread first seen with pid -1 joins its leader's
// maps once a record names its pid (machine__update_thread_pid).
func TestUpdateThreadPid(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 40, Tid: 40, Addr: 0x1000, Len: 0x1000, Filename: "/bin/x", Prot: 5}))
		if _, ok := m.Resolve(CPUModeUser, ^uint32(0), 41, 0x1800); ok {
			t.Fatal("thread of unknown pid found a map")
		}
		if got, ok := m.Resolve(CPUModeUser, 40, 41, 0x1800); !ok || got.DSO != "/bin/x" {
			t.Errorf("after the pid is known: %v %v", got, ok)
		}
	})
}

// Generation changes with every change Resolve could see, and only then:
// callers cache Resolve's answers per generation.
func TestGeneration(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		loads := 0
		m.OnKernelLoad = func(m *Machine) { loads++; m.FixupKernel(0xffffffff81000000, 0xffffffff82000000) }
		changes := []struct {
			what string
			do   func()
		}{
			{"kernel MMAP", func() {
				must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
			}},
			{"new thread", func() { m.SampleThread(7, 7) }},
			{"user MMAP", func() {
				must(t, m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x1000, Filename: "/bin/x", Prot: ProtExec}))
			}},
			{"FORK", func() { m.Fork(8, 7, 8, 7, 0) }},
			{"kernel load", func() { m.Resolve(CPUModeKernel, 7, 7, 0xffffffff81000010) }},
			{"KSYMBOL", func() { must(t, m.Ksymbol(Ksymbol{Addr: 0xffffffffa0000000, Len: 0x100, Type: 1, Name: "bpf_prog_1"})) }},
		}
		for _, c := range changes {
			before := m.Generation()
			c.do()
			if m.Generation() == before {
				t.Errorf("%s: generation unchanged", c.what)
			}
		}
		before := m.Generation()
		m.Resolve(CPUModeUser, 7, 7, 0x400010)
		m.Resolve(CPUModeKernel, 7, 7, 0xffffffff81000010)
		m.SampleThread(7, 7)
		m.Comm(7, 7, "x")
		m.Exit(8, 8)
		if m.Generation() != before || loads != 1 {
			t.Errorf("lookups, COMM and EXIT changed the generation (%d -> %d), %d kernel loads", before, m.Generation(), loads)
		}
		a, b := m.SampleThread(7, 7), m.SampleThread(7, 9)
		if a.MapsID() != b.MapsID() || a.MapsID() == m.SampleThread(8, 8).MapsID() {
			t.Error("threads of a process share an address space, another process has its own")
		}
	})
}

// Overlapping module maps (a kernel from 6.4 on reports a module's total
// size) resolve as perf 6.1's tree of the kernel maps does: the first map
// holding the address on the way down from the root. After the kernel
// map, [moda] and [modb] in either order make [moda] the root, as perf
// script prints (recordings made with both orders); the index alone
// would let the later map win. Without overlaps the index answers.
func TestOverlappingModules(t *testing.T) {
	a := Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x9000, Filename: "[moda]"}
	b := Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0005000, Len: 0x8000, Filename: "[modb]"}
	for _, tc := range []struct {
		name  string
		order []Mmap
		ip    uint64
		want  string
	}{
		{"ab, in both", []Mmap{a, b}, 0xffffffffc0006000, "[moda]"},
		{"ba, in both", []Mmap{b, a}, 0xffffffffc0006000, "[moda]"},
		{"ab, in b alone", []Mmap{a, b}, 0xffffffffc000a000, "[modb]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachImpl(t, func(t *testing.T, m *Machine) {
				must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
				for _, r := range tc.order {
					must(t, m.Mmap(r))
				}
				got, ok := m.Resolve(CPUModeKernel, 1, 1, tc.ip)
				if !ok || got.DSO != tc.want || got.Kind != index.KindModule {
					t.Errorf("%#x: %v %v, want %s", tc.ip, got, ok, tc.want)
				}
				if mods := m.ModuleMaps(); len(mods) != 2 || mods[0].DSO != "[moda]" || mods[0].End != 0xffffffffc0009000 || mods[1].DSO != "[modb]" {
					t.Errorf("module maps %v, want perf's two, whole", mods)
				}
			})
		})
	}
}

// A module's load does not change the map the lookup that loaded it
// found: perf's thread__find_map answers with the map maps__find gave,
// though the section maps the load inserts reshape the tree, and a later
// lookup of the same address takes the new shape's answer. The layout is
// a random recording's (cmd/kbench's TestReportModuleFilesAgainstPerf,
// seed 213), whose address 0xffffffffc0b00b29 perf 6.1 script printed in
// [kmodb] on its first sample there and in [kmoda] on every later one.
func TestOverlappingModuleLoadAnswersFoundMap(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		m.OnModuleLoad = func(m *Machine, mod index.Map) {
			short := mod.DSO
			secs := []index.Map{
				{Start: 0, End: 0x80, Pgoff: 0x3000, Kind: index.KindKernelSection, DSO: short + ".text.unlikely"},
				{Start: 0, End: 0x100, Pgoff: 0x3100, Kind: index.KindKernelSection, DSO: short + ".init.text"},
				{Start: 0, End: 0x100, Pgoff: 0x3200, Kind: index.KindKernelSection, DSO: short + ".data"},
			}
			must(t, m.LoadModule(mod, 0x40, true, secs))
		}
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x27f95a0, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
		for _, mod := range []struct {
			name      string
			addr, len uint64
		}{
			{"[kmodx1]", 0xffffffffc0ae2000, 0xdf000},
			{"[kmodx3]", 0xffffffffc0a66000, 0x7e000},
			{"[kmodb]", 0xffffffffc0b00000, 0x100000},
			{"[kmodx0]", 0xffffffffc0a46000, 0x78000},
			{"[kmoda]", 0xffffffffc0a00000, 0x104000},
			{"[kmodx2]", 0xffffffffc0b05000, 0x9f000},
		} {
			must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: mod.addr, Len: mod.len, Filename: mod.name}))
		}
		// The lookups of ip in turn: [kmodb]'s load, then [kmoda]'s.
		for i, want := range []string{"[kmodb]", "[kmoda]", "[kmoda]"} {
			const ip = 0xffffffffc0b00b29
			if got, ok := m.Resolve(CPUModeKernel, 1, 1, ip); !ok || got.DSO != want || got.Pgoff != 0x40 {
				t.Errorf("lookup %d: %v %v, want %s at pgoff 0x40", i, got, ok, want)
			}
		}
	})
}

// KernelMaps lists every map perf's tree holds, one the index lost to
// overlaps too, by start, as perf's kcore check visits them.
func TestKernelMapsKeepsOverlapped(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0002000, Len: 0x2000, Filename: "[inner]"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x9000, Filename: "[outer]"}))
		var got []string
		for _, mp := range m.KernelMaps() {
			got = append(got, mp.DSO)
		}
		if want := []string{"[kernel.kallsyms]", "[outer]", "[inner]"}; !slices.Equal(got, want) {
			t.Errorf("KernelMaps %q, want %q", got, want)
		}
	})
}

// A View of overlapping kernel maps answers as the machine does.
func TestOverlappingModulesView(t *testing.T) {
	forEachImpl(t, func(t *testing.T, m *Machine) {
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0005000, Len: 0x8000, Filename: "[modb]"}))
		must(t, m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x9000, Filename: "[moda]"}))
		m.LoadKernel()
		v := m.Publish()
		for ip := uint64(0xffffffffc0000000) - 0x1000; ip < 0xffffffffc000e000; ip += 0x800 {
			want, wok := m.Resolve(CPUModeKernel, 1, 1, ip)
			got, ok := v.Resolve(CPUModeKernel, 1, 1, ip)
			if got != want || ok != wok {
				t.Errorf("%#x: View %v %v, machine %v %v", ip, got, ok, want, wok)
			}
		}
	})
}

// The threads findnewThread remembers (Machine.recent) are the ones it
// would find in its map: over random FORKs (which replace a tid's
// thread, and an erroneous parent's), EXITs, COMMs and sample lookups of
// tids that share a slot, every lookup returns the map's thread, and a
// replaced thread is never returned again.
func TestRecentThreadsFollowForks(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 9))
		m := New(mapset.All[0])
		m.RegisterIdle()
		tid := func() uint32 { return uint32(1 + rng.IntN(4)*recentThreads + rng.IntN(3)) }
		replaced := map[*Thread]bool{}
		for i := range 20000 {
			a, b := tid(), tid()
			switch rng.IntN(5) {
			case 0:
				if old, ok := m.threads[a]; ok {
					replaced[old] = true
				}
				if p, ok := m.threads[b]; ok && p.Pid != b && p.Pid != ^uint32(0) {
					replaced[p] = true // an erroneous parent is made anew
				}
				m.Fork(a, b, a, b, 0)
			case 1:
				m.Exit(a, a)
			case 2:
				m.Comm(a, a, "comm")
			default:
				pid := a
				if rng.IntN(4) == 0 {
					pid = ^uint32(0) // unknown until a later sample tells
				}
				got := m.SampleThread(pid, a)
				if want := m.threads[a]; got != want {
					t.Fatalf("seed %d, op %d: SampleThread(%d) is %p, the map's %p", seed, i, a, got, want)
				}
				if replaced[got] {
					t.Fatalf("seed %d, op %d: SampleThread(%d) returned a replaced thread", seed, i, a)
				}
			}
		}
	}
}
