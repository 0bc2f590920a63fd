package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// A recording of perf record --call-graph lbr: perf resolves a sample's
// user call stack from its branch stack, in place of its callchain's
// user part (resolve_lbr_callchain_sample), in perf script and in
// children tables, where the caller order resolves the kernel's part in
// user mode. Samples whose callchain has no PERF_CONTEXT_USER, or an
// unknown marker before it, keep their callchain. Tables default to
// branch mode (the recording has branch stacks), as perf's do.
func TestReportLBRCallStack(t *testing.T) {
	const (
		contextKernel = ^uint64(0) - 128 + 1
		contextUser   = ^uint64(0) - 512 + 1
		contextBad    = ^uint64(0) - 300 + 1
	)
	opts := perfdata.WriterOptions{Arch: "x86_64", Callchains: true, BranchSampleType: lbrBranchType(true)}
	k1, k2 := uint64(0xffffffff81000dd0), uint64(0xffffffff810018f0)
	path := writeRecordingWith(t, opts, func(w *perfdata.Writer) {
		kernel := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		user := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		w.WriteMmap(&perfdata.Mmap{Info: kernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000,
			Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text", Prot: 5})
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/app", Prot: 5})
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 7, Tid: 7, Addr: 0x7f0000000000, Len: 0x10000, Filename: "/nonexistent/libc.so.6", Prot: 5})
		lbr := []perfdata.BranchEntry{{From: 0x7f0000000120, To: 0x7f0000000200}, {From: 0x400340, To: 0x7f0000000100}, {From: 0x400210, To: 0x400300}}
		tm := uint64(10)
		for i, s := range []struct {
			mode     perfdata.Info
			ip       uint64
			chain    []uint64
			branches []perfdata.BranchEntry
		}{
			{kernel, k1, []uint64{contextKernel, k1, k2, contextUser, 0x7f0000000200}, lbr},                           // kernel and LBR parts
			{user, 0x7f0000000210, []uint64{contextUser, 0x7f0000000210}, lbr[1:]},                                    // the LBR part alone
			{user, 0x400350, []uint64{contextUser, 0x400350, 0x400360}, lbr[2:]},                                      // one branch
			{kernel, k2, []uint64{contextKernel, k2, k1}, lbr},                                                        // no user part: the callchain
			{kernel, k1, []uint64{contextKernel, k1, contextBad, k2, contextUser, 0x400350}, lbr},                     // an unknown marker first
			{user, 0x900000, []uint64{contextUser, 0x900000}, []perfdata.BranchEntry{{From: 0x900010, To: 0x900000}}}, // outside every map
		} {
			for range 1 + i%3 {
				tm++
				w.WriteSample(&perfdata.Sample{Info: s.mode, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: s.ip, Callchain: s.chain,
					Branches: s.branches, BranchHWIndex: uint64(len(s.branches) - 1)})
			}
		}
		// Empty branch stacks: perf reads a first target past them, in
		// callee order only: the next record's first word (a sample's
		// first field; an MMAP's pid and tid, 0x700000007).
		tm++
		w.WriteSample(&perfdata.Sample{Info: user, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: 0x400350,
			Callchain: []uint64{contextUser, 0x400350}, BranchHWIndex: ^uint64(0)})
		tm++
		w.WriteSample(&perfdata.Sample{Info: kernel, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: k1,
			Callchain: []uint64{contextKernel, k1, contextUser, 0x400350}, BranchHWIndex: ^uint64(0)})
		tm++
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 7, Tid: 7, Addr: 0x7f1000000000, Len: 0x10000, Filename: "/nonexistent/libm.so.6", Prot: 5,
			SampleID: perfdata.SampleID{Pid: 7, Tid: 7, Time: tm}})
		tm++
		w.WriteSample(&perfdata.Sample{Info: user, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: 0x400350,
			Callchain: []uint64{contextUser, 0x400350}, Branches: lbr[2:], BranchHWIndex: 0})
	})
	ks := filepath.Join(foreignDir, "kallsyms")
	script := mustReport(t, nil, "-debugdir", "-", "-kallsyms", ks, "-format", "script", path)
	if !strings.Contains(script, "/nonexistent/libc.so.6") {
		t.Fatalf("no frame from the branch stack in the script:\n%s", script)
	}
	if !strings.Contains(script, "\t       700000007 [unknown] ([unknown])\n") {
		t.Errorf("no first target read past an empty branch stack (an MMAP's pid and tid) in the script:\n%s", script)
	}
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-format", "script", "-G"}, []string{"script", "-F", "ip,sym,dso", "-G"}},
		{[]string{"-children", "-no-branch-stack"}, []string{"report", "--stdio", "--children", "--no-branch-stack", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-no-branch-stack"}, []string{"report", "--stdio", "--no-children", "--no-branch-stack", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children", "-no-branch-stack", "-sort", "pid,sym"}, []string{"report", "--stdio", "--children", "--no-branch-stack", "-n", "-g", "none", "--sort", "pid,sym"}},
	})
}
