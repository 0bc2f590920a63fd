package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// perf 6.1 symbolizes [vdso] maps with its own vdso only when the
// recording names no vdso by build id: a build-id entry for [vdso] makes
// a DSO of that name that no file holds but the build-id cache. Read
// without the cache, such a recording's vdso frames are [unknown] to
// perf, even where its own vdso has the recorded build id; one recorded
// with --no-buildid has them named. A program calling clock_gettime is
// recorded both ways and compared with perf, neither with a cache.
func TestReportVDSOByBuildIDLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "cg.c", `#include <time.h>
int main(void) {
	struct timespec t;
	long s = 0;
	for (long i = 0; i < 5000000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		s += t.tv_nsec;
	}
	return s == 42;
}
`)
	bin := filepath.Join(dir, "cg")
	if err := testbuild.Compile(t, "gcc", "-O2", "-o", bin, src); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		named bool // vdso frames named
	}{
		{"build-id table", []string{"-F", "4999", "-g", "--no-buildid-cache"}, false},
		{"no build ids", []string{"-F", "4999", "-g", "--no-buildid"}, true},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".data")
		perfRecordOrSkip(t, file, tc.args, bin)
		script := mustReport(t, nil, "-debugdir", "-", "-kallsyms", "/proc/kallsyms", "-format", "script", file)
		if !strings.Contains(script, "([vdso])") {
			t.Fatalf("%s: no [vdso] frame: the test tests nothing", tc.name)
		}
		if named := strings.Contains(script, "__vdso_clock_gettime ([vdso])"); named != tc.named {
			t.Errorf("%s: vdso frames named %v, want %v", tc.name, named, tc.named)
		}
		compareWithPerf(t, file, "/proc/kallsyms", []perfComparison{
			{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
			{[]string{"-children"}, []string{"report", "--stdio", "--sort", "dso,sym", "--children", "-n", "-g", "none"}},
		})
	}
}
