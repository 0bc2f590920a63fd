package attrib_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// x86_64Kcore are the program headers of an x86_64 /proc/kcore (4-level
// paging, no KASLR, 6 GiB of RAM) in the order fs/proc/kcore.c writes
// them: kernel text [_text, _end), vmalloc, modules, RAM, vmemmap and the
// vsyscall page, every offset vaddr - PAGE_OFFSET + the header size.
func x86_64Kcore() []index.Segment {
	const pageOffset, dataOff = 0xffff888000000000, 0x4000
	seg := func(vaddr, size uint64) index.Segment {
		return index.Segment{Vaddr: vaddr, Size: size, Offset: vaddr - pageOffset + dataOff}
	}
	return []index.Segment{
		seg(0xffffffff81000000, 0x2a00000),
		seg(0xffffc90000000000, 0x1fffffffffff),
		seg(0xffffffffa0000000, 0x5f000000),
		seg(0xffff888000100000, 0x17fe00000),
		seg(0xffffea0000004000, 0x6000000),
		seg(0xffffffffff600000, 0x1000),
	}
}

const kcoreRealGolden = "testdata/kcore-real.golden"

// TestKcoreRealRecordings attributes the committed perf 6.1 recordings
// of this machine with a header-only kcore ELF (x86_64Kcore) and an
// empty modules file beside a copy of their kallsyms, and compares the
// script output with perf script (live when perf is installed, else the
// digests in testdata/kcore-real.golden, made by perf with -update-kcore).
func TestKcoreRealRecordings(t *testing.T) {
	files, err := filepath.Glob("../perfdata/testdata/*.data")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	dir := t.TempDir()
	ks, err := os.ReadFile("testdata/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	var kc bytes.Buffer
	if err := kcore.WriteHeaders(&kc, x86_64Kcore(), elf.EM_X86_64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"kallsyms": ks, "kcore": kc.Bytes(), "modules": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ksPath := filepath.Join(dir, "kallsyms")
	golden := newPerfGolden(t, kcoreRealGolden, "perf 6.1 script -F ip,sym,dso --kallsyms DIR/kallsyms, DIR holding testdata/kallsyms, x86_64Kcore and an empty modules")
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			want, err := perftest.Script(file, "--kallsyms", ksPath)
			havePerf := err == nil
			golden.record(t, base, want, havePerf)
			for _, impl := range mapset.All {
				r, err := perfdata.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				res, err := attrib.Run(r, attrib.Options{Impl: impl, LoadKallsyms: attrib.LoadKallsymsFile(ksPath), KallsymsFile: ksPath,
					Script: &out, FetchInsn: true})
				r.Close()
				if err != nil {
					t.Fatal(err)
				}
				got := out.String()
				if res.KernelSymbols != "" && !strings.HasPrefix(res.KernelSymbols, "kcore ") {
					t.Errorf("%s: kernel symbols from %q, want kcore", impl.Name, res.KernelSymbols)
				}
				golden.check(t, base, impl.Name, got, want, havePerf)
			}
		})
	}
	golden.write(t)
}
