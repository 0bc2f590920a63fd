package resolver_test

import (
	"fmt"
	"sync"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/resolver"
)

// A minimal profiler loop: one goroutine applies the side-band events as
// they arrive and publishes a version after each batch; workers resolve
// samples against whatever version is current, without locks.
func Example() {
	r := resolver.New(resolver.Options{})

	// At start: the kernel map, its symbols, and a process's maps.
	r.Mmap(resolver.Mmap{CPUMode: resolver.CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000,
		Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"})
	r.LoadKallsyms([]kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81000100, Type: 'T', Name: "do_syscall_64"},
		{Addr: 0xffffffff81000400, Type: 'T', Name: "_etext"},
	})
	r.Comm(42, 42, "server")
	r.Mmap(resolver.Mmap{CPUMode: resolver.CPUModeUser, Pid: 42, Tid: 42, Addr: 0x400000, Len: 0x10000,
		Pgoff: 0, Filename: "/usr/bin/server", Prot: 4})
	r.Publish()

	type sample struct {
		cpumode  uint8
		pid, tid uint32
		ip       uint64
	}
	samples := []sample{
		{resolver.CPUModeUser, 42, 43, 0x401234}, // thread 43 of process 42
		{resolver.CPUModeKernel, 42, 43, 0xffffffff81000180},
	}
	out := make([]string, len(samples))
	var wg sync.WaitGroup
	for i, s := range samples {
		wg.Go(func() {
			v := r.View() // the current version; it never changes under us
			loc := v.Resolve(s.cpumode, s.pid, s.tid, s.ip)
			sym := loc.Symbol.Name
			if sym == "" {
				sym = "[unknown]" // /usr/bin/server is not on this machine
			}
			out[i] = fmt.Sprintf("%#x: %s+%#x %s", s.ip, loc.Map.DSO, loc.Offset, sym)
		})
	}
	wg.Wait()
	for _, line := range out {
		fmt.Println(line)
	}

	// Meanwhile the writer goes on: the process maps a library.
	r.Mmap(resolver.Mmap{CPUMode: resolver.CPUModeUser, Pid: 42, Tid: 42, Addr: 0x7f0000000000, Len: 0x2000,
		Pgoff: 0x1000, Filename: "/usr/lib/libz.so.1", Prot: 4})
	old := r.View()
	r.Publish()
	_, inOld := old.Find(resolver.CPUModeUser, 42, 42, 0x7f0000000010)
	loc := r.View().Resolve(resolver.CPUModeUser, 42, 42, 0x7f0000000010)
	fmt.Println(inOld, loc.Map.DSO, fmt.Sprintf("%#x", loc.Offset))
	// Output:
	// 0x401234: /usr/bin/server+0x1234 [unknown]
	// 0xffffffff81000180: [kernel.kallsyms]+0xffffffff81000180 do_syscall_64
	// false /usr/lib/libz.so.1 0x1010
}
