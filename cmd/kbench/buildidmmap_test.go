package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
)

// A recording made with perf record --buildid-mmap has no build-id
// table: the kernel's build id is in its MMAP2 record, and perf 6.1
// gives it to the kernel's DSO (machine__process_kernel_mmap_event),
// whose build id decides the kallsyms perf reads (dso__find_kallsyms).
// By default, /proc/kallsyms serves a recording of the running kernel
// only: one of another kernel, with no copy in the build-id cache,
// gets no kernel symbols, as perf prints "No kallsyms or vmlinux with
// build-id ... was found" and the bare addresses.
func TestReportKernelMmapBuildID(t *testing.T) {
	dir := t.TempDir()
	running := bytes.Repeat([]byte{0x12}, 20)
	other := bytes.Repeat([]byte{0x34}, 20)
	fakeHost(t, dir, "ffffffff81000000 T _text\nffffffff81000100 T fake_kernel_func\nffffffff81002000 T _etext\n", running)

	record := func(id []byte) string {
		return writeRecording(t, func(w *perfdata.Writer) {
			k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
			mmap := &perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x2000, Pgoff: 0xffffffff81000000,
				Filename: "[kernel.kallsyms]_text", SampleID: perfdata.SampleID{Pid: ^uint32(0), Tid: ^uint32(0)}}
			if id != nil {
				mmap.Misc |= perfdata.MiscMmapBuildID
				mmap.BuildID = id
			}
			w.WriteMmap(mmap)
			for n := range 4 {
				w.WriteSample(&perfdata.Sample{Info: k, Time: uint64(100 + n), Period: 1, IP: 0xffffffff81000180 + uint64(n)})
			}
		})
	}
	for _, tc := range []struct {
		name    string
		id      []byte
		symbols bool
	}{
		{"running kernel", running, true},
		{"no build id", nil, true},
		// An all-zero id is none (build_id__is_defined).
		{"zero build id", make([]byte, 20), true},
		{"another kernel", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := record(tc.id)
			got := mustReport(t, nil, "-format", "script", "-debugdir", "-", file)
			if strings.Contains(got, "fake_kernel_func") != tc.symbols {
				t.Errorf("kernel symbols from /proc/kallsyms: %v, want %v:\n%s", !tc.symbols, tc.symbols, got)
			}
			if tc.symbols {
				return
			}
			// perf reads the real /sys/kernel/notes, whose build id is not
			// other either: the same answer.
			if perf, err := exec.LookPath("perf"); err == nil {
				want, err := exec.Command(perf, "script", "-F", "ip,sym,dso", "-i", file).Output()
				if err == nil && string(want) != got {
					t.Errorf("differs from perf script: %s", linediff.First(got, string(want)))
				}
			}
		})
	}
}
