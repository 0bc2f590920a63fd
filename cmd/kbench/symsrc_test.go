package main

import (
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

var symbolFileSeeds = flag.Int("symbol-file-seeds", 12, "TestReportSymbolFilesAgainstPerf: the number of random layouts")

// TestReportSymbolFilesAgainstPerf compares kbench report with perf on
// random recordings (writeRandomRecording) whose shared library is
// stripped, with its symbols in files laid out at random where perf
// 6.1's dso__load looks for them, below a symfs: the .gnu_debuglink file
// beside the library or in its .debug directory, the build-id cache's
// elf and debug entries, /usr/lib/debug by path (with .debug and
// without) and by build id, and .debug/ beside the library by its own
// name. Each file present is the library's debug file with its symbols
// renamed by a letter of its own, so the tables say which file perf
// took; some carry another build id, which perf refuses. Without any,
// perf names the library's functions from its .dynsym.
func TestReportSymbolFilesAgainstPerf(t *testing.T) {
	lib, segs, ksFile, ks := randomInputs(t)
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy: not installed")
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(objcopy, args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %q: %v\n%s", args, err, out)
		}
	}
	work := t.TempDir()
	debug := filepath.Join(work, "libsyms.so.debug")
	run("--only-keep-debug", lib, debug)
	stripped := filepath.Join(work, "libsyms.so")
	run("--strip-all", "--add-gnu-debuglink="+debug, lib, stripped)
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	id := symbols.BuildID(f)
	f.Close()
	if len(id) == 0 {
		t.Skip("the library has no build id")
	}
	// variant writes the debug file with its functions renamed fNN → LNN
	// to path, under another build id when wrongID.
	variant := func(path string, letter byte, wrongID bool) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{}
		for i := range 40 {
			args = append(args, fmt.Sprintf("--redefine-sym=f%02d=%c%02d", i, letter, i))
		}
		run(append(args, debug, path)...)
		if wrongID {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			other := bytes.Clone(id)
			other[0] ^= 0xff
			if err := os.WriteFile(path, bytes.Replace(b, id, other, 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := fmt.Sprintf("%x", id)
	dir, base := filepath.Dir(lib), filepath.Base(lib)
	seeds := *symbolFileSeeds
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 31))
			symfs := t.TempDir()
			b, err := os.ReadFile(stripped)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(symfs+lib), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(symfs+lib, b, 0o755); err != nil {
				t.Fatal(err)
			}
			cache := filepath.Join(symfs, ".debug", ".build-id", h[:2], h[2:])
			places := []string{
				symfs + dir + "/libsyms.so.debug",         // DEBUGLINK, beside
				symfs + dir + "/.debug/libsyms.so.debug",  // DEBUGLINK, in .debug
				cache + "/elf",                            // BUILD_ID_CACHE
				cache + "/debug",                          // BUILD_ID_CACHE_DEBUGINFO
				symfs + "/usr/lib/debug" + lib + ".debug", // FEDORA_DEBUGINFO
				symfs + "/usr/lib/debug" + lib,            // UBUNTU_DEBUGINFO
				symfs + "/usr/lib/debug/.build-id/" + h[:2] + "/" + h[2:] + ".debug", // BUILDID_DEBUGINFO
				symfs + dir + "/.debug/" + base,                                      // OPENEMBEDDED_DEBUGINFO
			}
			var laid []string
			for i, p := range places {
				if rng.IntN(5) < 2 {
					wrong := rng.IntN(4) == 0
					variant(p, byte('a'+i), wrong)
					laid = append(laid, fmt.Sprintf("%c%s", 'a'+i, map[bool]string{true: "(other id)", false: ""}[wrong]))
				}
			}
			t.Logf("files: %v", laid)
			data := filepath.Join(t.TempDir(), "perf.data")
			chains := seed%2 == 1
			writeRandomRecording(t, data, rng, randomRecording{chains: chains, cpus: true}, lib, segs, ks)
			for _, c := range randomComparisons {
				switch c.name {
				case "table", "sym", "script", "dsos":
				case "children":
					if !chains {
						continue
					}
				default:
					continue
				}
				c.run(t, data, perftest.Options{NoBuildIDCache: true}, []string{"--kallsyms", ksFile, "--symfs", symfs}, []string{"-kallsyms", ksFile, "-symfs", symfs})
			}
		})
	}
}
