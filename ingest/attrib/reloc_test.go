package attrib_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// TestRelocatedKallsyms attributes the committed recordings with a
// kallsyms file from "another boot": every kernel symbol moved by the
// same KASLR-like offset. perf subtracts the difference between the
// reference symbol there and in the recording's kernel MMAP
// (kallsyms__delta) and names the same symbols; so must kbench. Compared
// with perf script when it is installed, else with the output for the
// unshifted file (which the relocation must reproduce exactly).
func TestRelocatedKallsyms(t *testing.T) {
	files, err := filepath.Glob("../perfdata/testdata/*.data")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	syms, err := kallsyms.ReadFile("testdata/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	const shift = 0x2e00000
	var b strings.Builder
	for _, s := range syms {
		if s.Module == "" {
			s.Addr += shift
		}
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	dir := t.TempDir()
	shifted := filepath.Join(dir, "kallsyms.shifted") // not "kallsyms": no kcore lookup
	if err := os.WriteFile(shifted, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, perfErr := exec.LookPath("perf")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := ""
			if perfErr == nil {
				out, err := perftest.Script(file, "--kallsyms", shifted)
				if err != nil {
					t.Skip(err)
				}
				want = out
			} else {
				want = script(t, file, "testdata/kallsyms", mapset.BTree)
			}
			for _, impl := range mapset.All {
				if d := linediff.First(script(t, file, shifted, impl), want); d != "" {
					t.Errorf("%s: %s", impl.Name, d)
				}
			}
		})
	}
}

// script is kbench report -format script on file with the kallsyms file ks.
func script(t *testing.T, file, ks string, impl mapset.Impl) string {
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	if _, err := attrib.Run(r, attrib.Options{Impl: impl, LoadKallsyms: attrib.LoadKallsymsFile(ks), KallsymsFile: ks, Script: &out, FetchInsn: true}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
