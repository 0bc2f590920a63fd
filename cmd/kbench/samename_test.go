package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// perf's dso key compares short names (_sort__dso_cmp without -v): two
// libraries of one file name in different directories (a host's libc and
// a snap's) are one row where their unresolved addresses (or symbols)
// are, in flat, children and sort-key tables.
func TestReportSameShortName(t *testing.T) {
	opts := perfdata.WriterOptions{Arch: "x86_64", Callchains: true}
	const contextUser = ^uint64(0) - 512 + 1
	path := writeRecordingWith(t, opts, func(w *perfdata.Writer) {
		user := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 7, Tid: 7, Addr: 0x7f0000000000, Len: 0x10000, Filename: "/nonexistent/host/libc.so.6", Prot: 5})
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 8, Tid: 8, Addr: 0x7e0000000000, Len: 0x10000, Pgoff: 0x1000, Filename: "/nonexistent/snap/libc.so.6", Prot: 5})
		w.WriteMmap(&perfdata.Mmap{Info: user, Pid: 8, Tid: 8, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/app", Prot: 5})
		for i, s := range []struct {
			pid uint32
			ip  uint64
		}{
			{7, 0x7f0000001230}, {7, 0x7f0000001230}, {8, 0x7e0000000230}, // one address of each libc: 0x1230
			{8, 0x7e0000000400}, {7, 0x7f0000002000}, // other addresses
		} {
			w.WriteSample(&perfdata.Sample{Info: user, Pid: s.pid, Tid: s.pid, Time: uint64(10 + i), Period: 1, IP: s.ip,
				Callchain: []uint64{contextUser, s.ip, 0x400100}})
		}
	})
	table := mustReport(t, nil, "-debugdir", "-", "-kallsyms", "none", "-format", "table", path)
	if !strings.Contains(table, "      3  libc.so.6         [.] 0x0000000000001230\n") {
		t.Errorf("the two libc.so.6's 0x1230 are not one row of 3 samples:\n%s", table)
	}
	ks := filepath.Join(t.TempDir(), "kallsyms") // empty: no kernel samples
	if err := os.WriteFile(ks, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-sort", "dso,sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-sort", "dso"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso"}},
		{[]string{"-no-children", "-sort", "pid,dso"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "pid,dso"}},
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
	})
}
