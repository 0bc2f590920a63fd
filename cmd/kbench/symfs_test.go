package main

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// TestReportSymfsAgainstPerf compares -symfs with perf's --symfs, both
// without -kallsyms: perf then looks for the kernel's symbols nowhere
// (dso__load_kernel_sym: "do not try local files if a symfs was given")
// and keeps its build-id cache in SYMFS/.debug (symbol__config_symfs), so
// neither ~/.debug nor /proc/kallsyms may play a part. The second symfs
// holds, in that cache only, a DSO of the recording found on this machine
// with the recorded build id: its symbols must appear.
func TestReportSymfsAgainstPerf(t *testing.T) {
	file := testdataDir + "callchain.data"
	empty := t.TempDir()
	cached := t.TempDir()
	dso := cacheOneDSO(t, file, filepath.Join(cached, ".debug"))
	symfsDirs := []string{empty}
	if dso != "" {
		symfsDirs = append(symfsDirs, cached)
	}
	outputs := map[string]string{}
	for _, symfs := range symfsDirs {
		for _, format := range []string{"table", "script"} {
			t.Run(filepath.Base(symfs)+"/"+format, func(t *testing.T) {
				var want string
				var err error
				if format == "table" {
					want, err = perftest.ReportTable(file, "--symfs", symfs)
				} else {
					want, err = perftest.Script(file, "--symfs", symfs)
				}
				if errors.Is(err, perftest.ErrNotInstalled) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				got := mustReport(t, nil, "-format", format, "-symfs", symfs, file)
				if format == "table" {
					got = strings.Join(linediff.ReportRows(got), "\n")
					want = strings.Join(linediff.ReportRows(want), "\n")
				}
				if d := linediff.First(got, want); d != "" {
					t.Errorf("differs from perf with --symfs: %s", d)
				}
				if !strings.Contains(got, "[k] 0xffff") && !strings.Contains(got, "[unknown] ([kernel.kallsyms])") {
					t.Errorf("kernel samples have symbols with -symfs and no -kallsyms:\n%.600s", got)
				}
				outputs[symfs+format] = got
			})
		}
	}
	if dso != "" && outputs[empty+"table"] == outputs[cached+"table"] {
		t.Errorf("%s in SYMFS/.debug changed no row: the build-id cache below -symfs was not used", dso)
	}
}

// cacheOneDSO copies into the build-id cache dir the first user DSO of
// the recording whose file here has the recorded build id, in the old
// layout (.build-id/xx/rest a regular file), and returns its name; "" for
// none.
func cacheOneDSO(t *testing.T, file, dir string) string {
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, b := range r.Features().BuildIDs {
		if !strings.HasPrefix(b.Filename, "/") || b.CPUMode() == perfdata.CPUModeKernel {
			continue
		}
		f, err := elf.Open(b.Filename)
		if err != nil {
			continue
		}
		id := symbols.BuildID(f)
		f.Close()
		if len(id) == 0 || !bytes.Equal(id, b.BuildID) {
			continue
		}
		data, err := os.ReadFile(b.Filename)
		if err != nil {
			continue
		}
		hexID := hex.EncodeToString(id)
		link := filepath.Join(dir, ".build-id", hexID[:2], hexID[2:])
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(link, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return b.Filename
	}
	return ""
}
