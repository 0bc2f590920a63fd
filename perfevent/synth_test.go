package perfevent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/testtree"
)

// fakeRoot builds a proc/sys/lib tree: a kernel, two modules (one with a
// plain and one with a compressed module file), init (pid 1), a kernel
// thread (pid 2), a two-thread process (pid 100, threads 100 and 101)
// whose maps hold every kind of line perf's parser meets, and a process
// (pid 200) whose maps file is missing.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/version": "Linux version 6.1.0-fake (builder@host) (gcc) #1 SMP\n",
		"proc/kallsyms": "ffffffff81000000 T _stext\n" +
			"ffffffff81000000 T _text\n" +
			"ffffffff81001000 t do_one_initcall\n" +
			"ffffffff82200000 T _etext\n" +
			"ffffffff82a00000 D _edata\n" +
			"ffffffffc0100000 t my_mod_fn\t[my_mod]\n",
		// /proc/modules lists newest first; perf writes address order.
		"proc/modules": "other_mod 8192 0 - Live 0xffffffffc0200000\n" +
			"my_mod 16384 0 - Live 0xffffffffc0100000\n",
		"proc/mounts": "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw 0 0\n",
		"lib/modules/6.1.0-fake/kernel/drivers/my-mod.ko":      "",
		"lib/modules/6.1.0-fake/kernel/fs/other_mod.ko.xz":     "",
		"lib/modules/6.1.0-fake/build/ignored/my_mod.ko":       "", // top-level build link: not followed
		"lib/modules/6.1.0-fake/kernel/drivers/notamodule.txt": "",
		"sys/module/my_mod/sections/.text":                     "0xffffffffc0100000\n",
		"sys/module/my_mod/sections/.data":                     "0xffffffffc0103000\n",
		"sys/module/my_mod/sections/.noinstr.text":             "0xffffffffc0101000\n",
		"sys/module/my_mod/sections/.exit.text":                "0xffffffffc0102000\n",
		"sys/module/my_mod/sections/.init.text":                "0xffffffffc0180000\n",
		"proc/1/status":                                        statusFile("systemd", 1, 1, 0, false),
		"proc/1/task/1/status":                                 statusFile("systemd", 1, 1, 0, false),
		"proc/1/task/1/maps":                                   "55d0c0a00000-55d0c0b00000 r-xp 00002000 fe:00 1234                       /usr/lib/systemd/systemd\n",
		"proc/2/status":                                        statusFile("kthreadd", 2, 2, 0, true),
		"proc/2/task/2/status":                                 statusFile("kthreadd", 2, 2, 0, true),
		"proc/2/task/2/maps":                                   "",
		"proc/100/status":                                      statusFile("busy-with-a-long-name", 100, 100, 1, false),
		"proc/100/task/100/status":                             statusFile("busy-with-a-long-name", 100, 100, 1, false),
		// A thread's own /proc/TID (hidden from readdir in a real /proc,
		// here a directory without task/).
		"proc/101/status":          statusFile("worker", 100, 101, 1, false),
		"proc/100/task/101/status": statusFile("worker", 100, 101, 1, false),
		"proc/100/task/100/maps": "00400000-00401000 r--p 00000000 fe:00 42                         /opt/busy\n" +
			"00401000-00402000 r-xp 00001000 fe:00 42                         /opt/busy\n" +
			"00600000-00601000 rw-p 00000000 00:00 0 \n" +
			"00700000-00701000 rwxp 00000000 00:00 0 \n" +
			"7f0000000000-7f0000200000 r-xs 00000000 00:2d 7                          /dev/hugepages/seg\n" +
			"7f0000300000-7f0000301000 r-xp 00000000 fe:00 99                         /tmp/gone (deleted)\n" +
			"garbage line\n" +
			"7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]\n" +
			"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n",
		"proc/200/status":          statusFile("nomaps", 200, 200, 1, false),
		"proc/200/task/200/status": statusFile("nomaps", 200, 200, 1, false),
		"proc/200/task/201/status": statusFile("nomaps2", 200, 201, 1, false),
		"proc/self/status":         statusFile("self", 9, 9, 1, false), // not numeric: skipped
	}
	testtree.Write(t, root, files)
	return root
}

// statusFile is a /proc/PID/status prefix; kernel threads have no VmPeak.
func statusFile(name string, tgid, pid, ppid int, kernel bool) string {
	s := fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\n", name, tgid, pid, ppid)
	if !kernel {
		s += "VmPeak:\t  10000 kB\n"
	}
	return s + "Threads:\t1\n"
}

// describe prints a record as perf script -D would show its fields.
func describe(r perfdata.Record) string {
	switch x := r.(type) {
	case *perfdata.Mmap:
		s := fmt.Sprintf("%s misc=%#x %d/%d [%#x(%#x) @ %#x]", x.Type, x.Misc, int32(x.Pid), x.Tid, x.Addr, x.Len, x.Pgoff)
		if x.Type == perfdata.RecordMmap2 {
			s += fmt.Sprintf(" %x:%x %d prot=%d flags=%#x", x.Maj, x.Min, x.Ino, x.Prot, x.Flags)
		}
		return s + " " + x.Filename
	case *perfdata.Comm:
		return fmt.Sprintf("COMM misc=%#x %s:%d/%d", x.Misc, x.Comm, x.Pid, x.Tid)
	case *perfdata.Fork:
		return fmt.Sprintf("FORK misc=%#x (%d:%d):(%d:%d) time=%d", x.Misc, x.Pid, x.Tid, x.Ppid, x.Ptid, x.Time)
	}
	return fmt.Sprintf("%T", r)
}

func TestSynthesize(t *testing.T) {
	kernel := []string{
		"MMAP misc=0x1 -1/0 [0xffffffff81000000(0x1a00000) @ 0xffffffff81000000] [kernel.kallsyms]_text",
		"MMAP misc=0x1 -1/0 [0xffffffffc0100000(0x4000) @ 0x0] /lib/modules/6.1.0-fake/kernel/drivers/my-mod.ko",
		"MMAP misc=0x1 -1/0 [0xffffffffc0200000(0x2000) @ 0x0] /lib/modules/6.1.0-fake/kernel/fs/other_mod.ko.xz",
	}
	busyMaps := []string{
		"MMAP2 misc=0x2 100/100 [0x401000(0x1000) @ 0x1000] fe:0 42 prot=5 flags=0x2 /opt/busy",
		"MMAP2 misc=0x2 100/100 [0x700000(0x1000) @ 0x0] 0:0 0 prot=7 flags=0x2 //anon",
		"MMAP2 misc=0x2 100/100 [0x7f0000000000(0x200000) @ 0x0] 0:2d 7 prot=5 flags=0x40001 //anon",
		"MMAP2 misc=0x2 100/100 [0x7f0000300000(0x1000) @ 0x0] fe:0 99 prot=5 flags=0x2 /tmp/gone (deleted)",
		"MMAP2 misc=0x2 100/100 [0x7fff00000000(0x2000) @ 0x0] 0:0 0 prot=5 flags=0x2 [vdso]",
		"MMAP2 misc=0x2 100/100 [0xffffffffff600000(0x1000) @ 0x0] 0:0 0 prot=4 flags=0x2 [vsyscall]",
	}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	tests := []struct {
		name  string
		opts  SynthOptions
		edit  func(root string)
		want  []string
		warns int
	}{
		{name: "kernel only", want: kernel},
		{
			name: "system wide",
			opts: SynthOptions{SystemWide: true},
			want: cat(kernel, []string{
				"FORK misc=0x2000 (1:1):(0:0) time=0",
				"COMM misc=0x0 systemd:1/1",
				"MMAP2 misc=0x2 1/1 [0x55d0c0a00000(0x100000) @ 0x2000] fe:0 1234 prot=5 flags=0x2 /usr/lib/systemd/systemd",
				"FORK misc=0x2000 (2:2):(0:0) time=0",
				"COMM misc=0x0 kthreadd:2/2",
				"FORK misc=0x2000 (100:100):(1:1) time=0",
				"COMM misc=0x0 busy-with-a-lon:100/100",
			}, busyMaps, []string{
				"FORK misc=0x2000 (100:101):(100:100) time=0",
				"COMM misc=0x0 worker:100/101",
				// pid 200's maps are missing: perf stops at them, and
				// thread 201 gets nothing.
				"FORK misc=0x2000 (200:200):(1:1) time=0",
				"COMM misc=0x0 nomaps:200/200",
			}),
		},
		{
			name: "thread map with its leader",
			opts: SynthOptions{Threads: []int{101}},
			want: cat(kernel, []string{
				"COMM misc=0x0 worker:100/101",
				"COMM misc=0x0 busy-with-a-lon:100/100",
			}, busyMaps),
		},
		{
			name: "thread map",
			opts: SynthOptions{Threads: []int{100, 101}},
			want: cat(kernel, []string{"COMM misc=0x0 busy-with-a-lon:100/100"}, busyMaps,
				[]string{"COMM misc=0x0 worker:100/101"}),
		},
		{
			name:  "thread map stops at unreadable maps",
			opts:  SynthOptions{Threads: []int{200, 100}},
			want:  cat(kernel, []string{"COMM misc=0x0 nomaps:200/200"}),
			warns: 1,
		},
		{
			name: "command",
			opts: SynthOptions{Comm: []int{101}},
			want: cat(kernel, []string{"COMM misc=0x0 worker:100/101"}),
		},
		{
			name: "no _edata: _etext ends the kernel",
			edit: func(root string) {
				rewrite(t, root, "proc/kallsyms", "ffffffff82a00000 D _edata\n", "")
			},
			want: cat([]string{"MMAP misc=0x1 -1/0 [0xffffffff81000000(0x1200000) @ 0xffffffff81000000] [kernel.kallsyms]_text"}, kernel[1:]),
		},
		{
			name: "no _edata or _etext: the first module ends the kernel; _stext names it",
			edit: func(root string) {
				rewrite(t, root, "proc/kallsyms", "ffffffff82a00000 D _edata\n", "")
				rewrite(t, root, "proc/kallsyms", "ffffffff82200000 T _etext\n", "")
				rewrite(t, root, "proc/kallsyms", "ffffffff81000000 T _text\n", "")
			},
			want: cat([]string{"MMAP misc=0x1 -1/0 [0xffffffff81000000(0x3f100000) @ 0xffffffff81000000] [kernel.kallsyms]_stext"}, kernel[1:]),
		},
		{
			name: "no module files: [name]",
			edit: func(root string) {
				if err := os.RemoveAll(filepath.Join(root, "lib")); err != nil {
					t.Fatal(err)
				}
			},
			want: cat(kernel[:1], []string{
				"MMAP misc=0x1 -1/0 [0xffffffffc0100000(0x4000) @ 0x0] [my_mod]",
				"MMAP misc=0x1 -1/0 [0xffffffffc0200000(0x2000) @ 0x0] [other_mod]",
			}),
		},
		{
			name: "no kallsyms, no modules",
			edit: func(root string) {
				os.Remove(filepath.Join(root, "proc/kallsyms"))
				os.Remove(filepath.Join(root, "proc/modules"))
			},
			warns: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeRoot(t)
			if tc.edit != nil {
				tc.edit(root)
			}
			tc.opts.Root = root
			var got []string
			warns, err := Synthesize(tc.opts, func(r perfdata.Record) error {
				got = append(got, describe(r))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(warns) != tc.warns {
				t.Errorf("warnings %q, want %d", warns, tc.warns)
			}
		})
	}
}

func rewrite(t *testing.T, root, name, old, new string) {
	t.Helper()
	p := filepath.Join(root, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", name, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSynthesizeCallbackError(t *testing.T) {
	root := fakeRoot(t)
	stop := fmt.Errorf("stop")
	n := 0
	_, err := Synthesize(SynthOptions{Root: root, SystemWide: true}, func(perfdata.Record) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	if err != stop || n != 5 {
		t.Fatalf("err %v after %d records, want stop after 5", err, n)
	}
}

func TestKmodSecRecords(t *testing.T) {
	root := fakeRoot(t)
	ko, err := os.ReadFile("../ingest/modsec/testdata/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib/modules/6.1.0-fake/kernel/drivers/my-mod.ko"), ko, 0o644); err != nil {
		t.Fatal(err)
	}
	recs, warns, err := KmodSecRecords(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d %#x %#x %#x %s %s", r.Pid, r.Start, r.Len, r.Pgoff, r.Section, r.Path))
	}
	// my-mod.ko: .data (8 bytes at 0x54), .noinstr.text (0x2a at 0x5c),
	// .exit.text (0xb at 0xbe); .text is the module map's, .init.text is
	// skipped, .bss is empty.
	const path = "/lib/modules/6.1.0-fake/kernel/drivers/my-mod.ko"
	want := []string{
		"-1 0xffffffffc0103000 0x8 0x54 .data " + path,
		"-1 0xffffffffc0101000 0x2a 0x5c .noinstr.text " + path,
		"-1 0xffffffffc0102000 0xb 0xbe .exit.text " + path,
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// other_mod has only a compressed file.
	if len(warns) != 1 || !strings.Contains(warns[0], "other_mod") {
		t.Errorf("warnings %q, want one for other_mod", warns)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-3": {0, 1, 2, 3}, "0-1,4,6-7": {0, 1, 4, 6, 7}} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUList(in); err == nil {
			t.Errorf("ParseCPUList(%q): no error", in)
		}
	}
}
