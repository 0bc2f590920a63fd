package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// A thread's samples from before its first COMM count under the name that
// COMM gives it, as perf's comm__override renames the thread's first
// comm in place; a later COMM is a name of its own, and a child forked
// from a named parent takes the parent's name the same way. Compared
// with perf report by every sort key list with comm.
func TestReportCommOverride(t *testing.T) {
	file := writeRecording(t, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		tm := uint64(100)
		sample := func(pid, tid uint32, n int) {
			for range n {
				tm++
				w.WriteSample(&perfdata.Sample{Info: u, Pid: pid, Tid: tid, Time: tm, Period: 1, IP: 0x400010})
			}
		}
		comm := func(pid, tid uint32, name string) {
			tm++
			w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: perfdata.MiscCommExec}, Pid: pid, Tid: tid, Comm: name, SampleID: perfdata.SampleID{Pid: pid, Tid: tid, Time: tm}})
		}
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 10, Tid: 10, Addr: 0x400000, Len: 0x1000, Filename: "/bin/x", Prot: 5, SampleID: perfdata.SampleID{Pid: 10, Tid: 10, Time: tm}})
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 10, Tid: 10, Addr: 0x500000, Len: 0x1000, Filename: "/nonexistent/a", Prot: 5, SampleID: perfdata.SampleID{Pid: 10, Tid: 10, Time: tm}})
		w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x1000, Filename: "[nosyms]", SampleID: perfdata.SampleID{Time: tm}})
		unresolved := func(kernel bool) { // at 0x100 in its map, by sym alone one row
			tm++
			s := &perfdata.Sample{Info: u, Pid: 10, Tid: 10, Time: tm, Period: 1, IP: 0x500100}
			if kernel {
				s.Info, s.IP = perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}, 0xffffffffc0000100
			}
			w.WriteSample(s)
		}
		sample(10, 10, 3) // ":10", renamed "first" below
		unresolved(true)  // the row's level: it sorts first, by ":10"
		comm(10, 10, "first")
		sample(10, 10, 2)
		unresolved(false)
		unresolved(false)
		tm++
		w.WriteFork(&perfdata.Fork{Pid: 11, Ppid: 10, Tid: 11, Ptid: 10, Time: tm, SampleID: perfdata.SampleID{Pid: 11, Tid: 11, Time: tm}})
		sample(11, 11, 5)
		comm(10, 10, "second") // a new name: the samples before keep "first"
		sample(10, 10, 4)
		sample(12, 12, 1) // ":12" for good
	})
	testTablesAgainstPerf(t, file, "first",
		[]string{"-sort", "comm"},
		[]string{"-sort", "comm,dso,sym"},
		[]string{"-sort", "pid,comm"},
		[]string{"-sort", "comm,sym"},
	)
}

// A FORK that reuses the tid of a thread already sampled makes a new
// thread (machine__process_fork_event removes the old one), named as its
// parent. perf's hist entries keep the thread of the sample that made
// them: by pid, the rows made before the FORK show the old thread's name
// and those made after it the new one's, for one tid. Compared with perf
// report; without the fix every row showed ":11".
func TestReportPidRowsKeepTheirThread(t *testing.T) {
	file := writeRecording(t, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		tm := uint64(100)
		sample := func(ip uint64, n int) {
			for range n {
				tm++
				w.WriteSample(&perfdata.Sample{Info: u, Pid: 10, Tid: 11, Time: tm, Period: 1, IP: ip})
			}
		}
		w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: perfdata.MiscCommExec}, Pid: 10, Tid: 10, Comm: "parent", SampleID: perfdata.SampleID{Pid: 10, Tid: 10, Time: tm}})
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 10, Tid: 10, Addr: 0x500000, Len: 0x10000, Filename: "/nonexistent/a", Prot: 5, SampleID: perfdata.SampleID{Pid: 10, Tid: 10, Time: tm}})
		sample(0x500100, 3) // thread 11 made by its samples: ":11"
		tm++
		w.WriteFork(&perfdata.Fork{Pid: 10, Ppid: 10, Tid: 11, Ptid: 10, Time: tm, SampleID: perfdata.SampleID{Pid: 10, Tid: 11, Time: tm}})
		sample(0x500200, 2) // the new thread 11: "parent"
		sample(0x500100, 1) // counts in the ":11" row
	})
	testTablesAgainstPerf(t, file, "11:parent",
		[]string{"-sort", "pid,sym"},
		[]string{"-sort", "pid,dso,sym"},
		[]string{"-children", "-sort", "pid,sym"},
	)
}

// perf's tree of hist entries by comm breaks when a thread's first COMM
// renames its entry in place: here the root, ":10", becomes "gamma",
// and the search for ":11" then misses the entry a guest sample made (a
// filtered one, hidden) and makes a second, visible one. perf shows
// ":11" with the user samples; keyed by name, kbench hid it.
func TestReportCommTreeAfterRename(t *testing.T) {
	file := writeRecording(t, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		guest := perfdata.Info{Misc: uint16(perfdata.CPUModeGuestUser)}
		tm := uint64(100)
		sample := func(info perfdata.Info, pid uint32, ip uint64) {
			tm++
			w.WriteSample(&perfdata.Sample{Info: info, Pid: pid, Tid: pid, Time: tm, Period: 1, IP: ip})
		}
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 11, Tid: 11, Addr: 0x400000, Len: 0x1000, Filename: "/nonexistent/a", Prot: 5, SampleID: perfdata.SampleID{Pid: 11, Tid: 11, Time: tm}})
		sample(u, 10, 0x500000)     // ":10", the root
		sample(guest, 11, 0x500000) // ":11", right of it, hidden
		tm++
		w.WriteComm(&perfdata.Comm{Pid: 10, Tid: 10, Comm: "gamma", SampleID: perfdata.SampleID{Pid: 10, Tid: 10, Time: tm}})
		for range 3 {
			sample(u, 11, 0x400100) // a second ":11", left of "gamma"
		}
	})
	testTablesAgainstPerf(t, file, ":11",
		[]string{"-sort", "comm"},
		[]string{"-sort", "comm,pid"},
	)
}

// By sym without dso, samples without a symbol are one row per address,
// whatever their DSOs and levels (sort__sym_cmp compares nothing else),
// showing the first one's level; with dso they are apart.
func TestReportSortSymUnresolved(t *testing.T) {
	file := writeRecording(t, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		tm := uint64(100)
		for i, dso := range []string{"/nonexistent/a", "/nonexistent/b", "/nonexistent/c"} {
			pid := uint32(10 + i)
			w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: 0x400000 + uint64(i)<<20, Len: 0x1000, Filename: dso, Prot: 5, SampleID: perfdata.SampleID{Pid: pid, Tid: pid, Time: tm}})
		}
		w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x1000, Filename: "[nosyms]", SampleID: perfdata.SampleID{Time: tm}})
		for n := range 24 {
			tm++
			s := &perfdata.Sample{Info: u, Pid: uint32(10 + n%3), Tid: uint32(10 + n%3), Time: tm, Period: 1, IP: 0x400100 + uint64(n%3)<<20 + uint64(n%2)*8}
			if n%5 == 0 {
				s.Info, s.IP = k, 0xffffffffc0000100
			}
			w.WriteSample(s)
		}
	})
	testTablesAgainstPerf(t, file, "0x0000000000000100",
		[]string{"-sort", "sym"},
		[]string{"-sort", "pid,sym"},
		[]string{"-sort", "dso,sym"},
	)
}

// writeRecording writes an x86_64 recording with write into a temporary
// file and returns its path.
func writeRecording(t *testing.T, write func(w *perfdata.Writer)) string {
	t.Helper()
	return writeRecordingWith(t, perfdata.WriterOptions{Arch: "x86_64", Hostname: "test", Version: "6.1"}, write)
}

// writeRecordingWith is writeRecording with the writer's options opts.
func writeRecordingWith(t *testing.T, opts perfdata.WriterOptions, write func(w *perfdata.Writer)) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	write(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}
