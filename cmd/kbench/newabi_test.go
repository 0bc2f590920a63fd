package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// widenAttrs returns a copy of the file-mode recording b whose attrs are
// extra bytes longer (zeros, as a newer perf's unused fields), written in
// a new attrs section at the end of the file.
func widenAttrs(t *testing.T, b []byte, extra int) []byte {
	t.Helper()
	le := binary.LittleEndian
	if string(b[:8]) != perfdata.Magic || le.Uint64(b[8:]) != 104 {
		t.Fatal("not a little-endian file-mode recording")
	}
	attrSize, off, size := le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	out := bytes.Clone(b)
	newOff := uint64(len(out))
	for p := off; p < off+size; p += attrSize {
		attr := b[p : p+attrSize-16]
		ids := b[p+attrSize-16 : p+attrSize]
		wide := append(bytes.Clone(attr), make([]byte, extra)...)
		le.PutUint32(wide[4:], uint32(len(wide)))
		out = append(append(out, wide...), ids...)
	}
	le.PutUint64(out[16:], attrSize+uint64(extra))
	le.PutUint64(out[24:], newOff)
	le.PutUint64(out[32:], uint64(len(out))-newOff)
	return out
}

// A recording whose perf_event_attr is larger than perf 6.1's (as perf
// builds with newer kernel headers write) is refused by perf 6.1; kbench
// reads it as the original, with a warning that says so.
func TestReportNewerAttrABI(t *testing.T) {
	orig := testdataDir + "busy.data"
	data := mustRead(t, orig)
	dir := t.TempDir()
	wideFile := filepath.Join(dir, "wide.data")
	if err := os.WriteFile(wideFile, widenAttrs(t, data, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-format", "script", "-kallsyms", kallsymsSubset, "-debugdir", "-"}
	want := mustReport(t, nil, append(args, orig)...)
	got, stderr, err := report(t, nil, append(args, wideFile)...)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Error("the widened recording does not read as the original")
	}
	if !strings.Contains(stderr, "perf_event_attr has 136 bytes, 8 more than perf 6.1 reads") {
		t.Errorf("no warning: %q", stderr)
	}
	if _, stderr, _ := report(t, nil, append(args, orig)...); strings.Contains(stderr, "perf_event_attr") {
		t.Errorf("warning for the original: %q", stderr)
	}
	if _, err := exec.LookPath("perf"); err != nil {
		return
	}
	// perf reads the attrs moved to the end of the file, at their size,
	// and refuses them 8 bytes longer.
	moved := filepath.Join(dir, "moved.data")
	if err := os.WriteFile(moved, widenAttrs(t, data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		refuse bool
	}{{moved, false}, {wideFile, true}} {
		cmd := exec.Command("perf", "script", "-i", tc.file)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if refused := err != nil && strings.Contains(string(out), "incompatible file format"); refused != tc.refuse {
			t.Errorf("perf script %s: refused %v, want %v (%v): %.200s", tc.file, refused, tc.refuse, err, out)
		}
	}
}

// A file-mode recording whose data size is 0 (perf record killed before
// it wrote the header again, and the features after the data) has no
// record perf 6.1 reads: kbench reads none either, with perf's warning.
func TestReportDataSizeZero(t *testing.T) {
	orig := mustRead(t, testdataDir+"busy.data")
	le := binary.LittleEndian
	end := le.Uint64(orig[40:]) + le.Uint64(orig[48:]) // header.data: offset, size
	data := bytes.Clone(orig[:end])
	le.PutUint64(data[48:], 0)
	file := filepath.Join(t.TempDir(), "unfinished.data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-format", "script", "-kallsyms", kallsymsSubset, "-debugdir", "-"}
	got, stderr, err := report(t, nil, append(args, file)...)
	if err != nil {
		t.Fatal(err)
	}
	if got != "" || !strings.Contains(stderr, "the data size field is 0") {
		t.Errorf("output %q, stderr %q", got, stderr)
	}
	if _, stderr, _ := report(t, nil, append(args, testdataDir+"busy.data")...); strings.Contains(stderr, "data size") {
		t.Errorf("warning for the original: %q", stderr)
	}
	// perf script prints nothing and fails, as the warning says.
	switch out, err := perftest.Script(file); {
	case errors.Is(err, perftest.ErrNotInstalled):
	case err == nil:
		t.Errorf("perf script did not fail (the warning says it does); printed %d bytes", len(out))
	case strings.TrimSpace(out) != "":
		t.Errorf("perf script printed %d bytes", len(out))
	}
}
