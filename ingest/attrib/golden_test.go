package attrib

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perfswap"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

var update = flag.Bool("update", false, "rewrite testdata/kallsyms and the perf script goldens (needs perf and /proc/kallsyms)")

// recordings are the real perf 6.1 recordings of ingest/perfdata.
func recordings(t *testing.T) []string {
	files, err := filepath.Glob("../perfdata/testdata/*.data")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	return files
}

const kallsymsSubset = "testdata/kallsyms"

func golden(file string) string {
	return filepath.Join("testdata", strings.TrimSuffix(filepath.Base(file), ".data")+".script")
}

// TestUpdateGoldens rewrites the goldens with -update: a kallsyms subset
// (the lines at and right after every symbol start a kernel address of the
// recordings falls after; /proc/kallsyms is 5 MB) and, for each recording,
// perf script -F ip,sym,dso run with that subset as --kallsyms.
func TestUpdateGoldens(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite the goldens")
	}
	full, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	var ips []uint64
	for _, f := range recordings(t) {
		ips = append(ips, kernelIPs(t, f)...)
	}
	sub := subset(full, ips)
	var b strings.Builder
	for _, s := range sub {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(kallsymsSubset, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range recordings(t) {
		out, err := perftest.Script(f, "--kallsyms", kallsymsSubset)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden(f), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kernelIPs returns every address of the recording that might be a kernel
// one: sample IPs and callchain entries above the user half.
func kernelIPs(t *testing.T, file string) []uint64 {
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ips []uint64
	for r.Next() {
		if s, ok := r.Record().(*perfdata.Sample); ok {
			for _, ip := range append([]uint64{s.IP}, s.Callchain...) {
				if ip >= 1<<63 && ip < contextMax {
					ips = append(ips, ip)
				}
			}
		}
	}
	return ips
}

// subset keeps, in file order, every kallsyms line whose address is the
// greatest start <= some ip, or the next greater address after it.
func subset(full []kallsyms.Symbol, ips []uint64) []kallsyms.Symbol {
	addrs := make([]uint64, 0, len(full))
	for _, s := range full {
		addrs = append(addrs, s.Addr)
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	keep := make(map[uint64]bool)
	for _, ip := range ips {
		i, found := slices.BinarySearch(addrs, ip)
		if !found {
			i--
		}
		for _, j := range []int{i, i + 1} {
			if j >= 0 && j < len(addrs) {
				keep[addrs[j]] = true
			}
		}
	}
	var out []kallsyms.Symbol
	for _, s := range full {
		if keep[s.Addr] {
			out = append(out, s)
		}
	}
	return out
}

// TestGoldens compares our perf script output with perf's, recorded in
// testdata with the same kallsyms. Kernel lines and DSO names must match
// exactly. A user symbol may differ only where this machine lacks the DSO
// file the recording saw (a deleted binary, an empty build-id cache): we
// then print [unknown]; those lines are counted and logged.
func TestGoldens(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	total, matched, missingFile := 0, 0, 0
	for _, f := range recordings(t) {
		want, err := os.ReadFile(golden(f))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := ourScript(t, f, ks, mapset.BTree, false)
		gl, wl := lines(got), lines(want)
		if len(gl) != len(wl) {
			t.Errorf("%s: %d lines, perf %d", f, len(gl), len(wl))
			continue
		}
		for i := range wl {
			total++
			switch {
			case gl[i] == wl[i]:
				matched++
			case fileMissing(gl[i], wl[i]):
				missingFile++
			default:
				t.Errorf("%s line %d:\n got %q\nwant %q", filepath.Base(f), i+1, gl[i], wl[i])
			}
		}
	}
	t.Logf("%d/%d lines equal perf script; %d differ only by a user symbol whose DSO file is not on this machine", matched, total, missingFile)
}

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

// fileMissing reports whether got and want differ only in a user-space
// symbol that we printed as [unknown].
func fileMissing(got, want string) bool {
	gf, wf := strings.Fields(got), strings.Fields(want)
	if len(gf) != 3 || len(wf) < 3 || gf[0] != wf[0] || gf[2] != wf[len(wf)-1] || gf[1] != "[unknown]" {
		return false
	}
	dso := strings.Trim(gf[2], "()")
	return strings.HasPrefix(dso, "/") || dso == "[vdso]"
}

// The B-tree and the list reference attribute every recording the same,
// and a byte-swapped copy of a recording attributes the same as the
// original.
func TestImplsAndByteOrderAgree(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range recordings(t) {
		name := filepath.Base(f)
		gotBT, resBT := ourScript(t, f, ks, mapset.BTree, false)
		gotL, resL := ourScript(t, f, ks, mapset.List, false)
		if resBT.Digest() != resL.Digest() || !bytes.Equal(gotBT, gotL) {
			t.Errorf("%s: btree and list differ", name)
		}
		if resBT.Samples == 0 {
			t.Errorf("%s: no samples", name)
		}
		le, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(name, "zstd") {
			continue // perfswap leaves compressed payloads alone
		}
		be := perfswap.ToBigEndian(le)
		r, err := perfdata.NewFileReader(bytes.NewReader(be), int64(len(be)))
		if string(le[8:16]) == "\x10\x00\x00\x00\x00\x00\x00\x00" { // pipe mode
			r, err = perfdata.NewReader(bytes.NewReader(be))
		}
		if err != nil {
			t.Fatalf("%s swapped: %v", name, err)
		}
		var buf bytes.Buffer
		res, err := Run(r, Options{Kallsyms: ks, Script: &buf})
		if err != nil {
			t.Fatalf("%s swapped: %v", name, err)
		}
		if res.Digest() != resBT.Digest() || !bytes.Equal(buf.Bytes(), gotBT) {
			t.Errorf("%s: the byte-swapped copy attributes differently", name)
		}
	}
}

// The canonical attribution names every map with its sample count and
// set digest, and counts [unknown]; a changed sample set changes it.
func TestCanonical(t *testing.T) {
	ks, _ := kallsyms.ReadFile(kallsymsSubset)
	_, res := ourScript(t, "../perfdata/testdata/system.data", ks, mapset.BTree, false)
	c := res.Canonical()
	if !strings.Contains(c, fmt.Sprintf("of %d\n", res.Samples)) || !strings.Contains(c, "map ") || !strings.Contains(c, "sym ") {
		t.Fatalf("canonical:\n%s", c)
	}
	var sum uint64
	for _, bm := range res.ByMap {
		sum += bm.GetCardinality()
	}
	if sum+res.Unknown != res.Samples {
		t.Errorf("maps hold %d + %d unknown of %d samples", sum, res.Unknown, res.Samples)
	}
	for mp, bm := range res.ByMap {
		bm.Add(uint32(res.Samples) + 7)
		if res.Canonical() == c {
			t.Errorf("adding a sample to %s left the canonical text unchanged", mp)
		}
		break
	}
}

// A callchain with an unknown context marker is dropped whole, as perf
// resets its callchain cursor; the sample still prints (empty).
func TestInvalidContextDropsChain(t *testing.T) {
	a := &attributor{m: machine.New(mapset.BTree), sym: newSymbolizer(nil, nil, nil, "", func() []index.Map { return nil })}
	// printed returns what scriptCallchain prints of e after an empty line.
	printed := func(e *event) string {
		var b bytes.Buffer
		a.out = newScriptOut(&b)
		a.out.blank()
		a.scriptCallchain(e)
		if err := a.out.close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, marker := range []uint64{^uint64(0) - 0x12f, contextGuestKernel} {
		e := &event{addrs: []uint64{contextUser, 0x1000, 0x2000, marker}}
		if got := printed(e); got != "\n" {
			t.Errorf("marker %#x: got %q, want the chain dropped", marker, got)
		}
	}
	e := &event{addrs: []uint64{contextUser, 0x1000, 0x2000, contextKernel}}
	e.addrs = e.addrs[:3]
	if got := printed(e); strings.Count(got, "\n") != 3 {
		t.Errorf("valid chain printed %q", got)
	}
}
