package gen_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// small are the parameters of the unit-test corpora.
func small(arch string, seed uint64) gen.Params {
	return gen.Params{Arch: arch, Modules: 50, BPF: 12, Procs: 12, Samples: 1000, Seed: seed, KernelSymbols: 2000}
}

func generate(t *testing.T, p gen.Params) (string, *gen.Summary) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "corpus")
	s, err := gen.Generate(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// hashDir returns the SHA-256 of every file below dir.
func hashDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := sha256.Sum256(b)
		sums[rel] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestDeterministic(t *testing.T) {
	for _, cc := range []bool{false, true} {
		p := small("x86_64", 42)
		p.Callchains = cc
		d1, _ := generate(t, p)
		d2, _ := generate(t, p)
		h1, h2 := hashDir(t, d1), hashDir(t, d2)
		if len(h1) != len(h2) {
			t.Fatalf("callchains=%v: %d files vs %d", cc, len(h1), len(h2))
		}
		for name, sum := range h1 {
			if h2[name] != sum {
				t.Errorf("callchains=%v: %s differs between two runs with the same seed", cc, name)
			}
		}
		p.Seed = 43
		d3, _ := generate(t, p)
		h3 := hashDir(t, d3)
		for _, name := range []string{"kallsyms", "modules", "kcore", "perf.data", "kmodsec.data", "corpus.json"} {
			if h3[name] == h1[name] {
				t.Errorf("callchains=%v: %s is the same for seeds 42 and 43", cc, name)
			}
		}
	}
}

func TestBadParams(t *testing.T) {
	tests := []struct {
		name string
		p    gen.Params
		want string
	}{
		{"unknown arch", gen.Params{Arch: "vax"}, "unknown architecture"},
		{"negative modules", gen.Params{Arch: "x86_64", Modules: -1}, "modules"},
		{"negative samples", gen.Params{Arch: "x86_64", Samples: -5}, "samples"},
		{"negative procs", gen.Params{Arch: "x86_64", Procs: -1}, "processes"},
		{"absurd modules", gen.Params{Arch: "x86_64", Modules: math.MaxInt32}, "modules"},
		{"absurd samples", gen.Params{Arch: "x86_64", Samples: 1 << 62}, "samples"},
		{"too many sections", gen.Params{Arch: "x86_64", Sections: gen.MaxSections + 1}, "sections"},
		{"modules beyond the area", gen.Params{Arch: "ppc64le", Modules: gen.MaxModules}, "do not fit"},
		{"miss rate", gen.Params{Arch: "x86_64", MissRate: 0.9}, "miss rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gen.Generate(tc.p, filepath.Join(t.TempDir(), "c"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if _, err := gen.Generate(small("x86_64", 1), dir); err == nil {
		t.Error("generated into a non-empty directory")
	}
}

// TestArches loads every architecture's corpus and checks its kernel
// maps, kcore and perf.data.
func TestArches(t *testing.T) {
	for _, arch := range gen.Arches() {
		t.Run(arch, func(t *testing.T) {
			dir, sum := generate(t, small(arch, 7))
			c, err := corpus.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var meta gen.Params
			if err := json.Unmarshal(c.Meta.Generator, &meta); err != nil || meta.Arch != arch || meta.Seed != 7 || c.Meta.Provenance != "kbench gen" {
				t.Errorf("corpus.json: %+v, params %+v, %v", c.Meta, meta, err)
			}
			if len(c.Modules) != 50 || len(c.BPF) != 12 || !c.HasKcore || len(c.Segments) != sum.KcoreSegments {
				t.Errorf("loaded %d modules, %d BPF, kcore %v with %d segments", len(c.Modules), len(c.BPF), c.HasKcore, len(c.Segments))
			}
			for _, s := range c.Segments {
				if s.Offset-s.Vaddr != c.Segments[0].Offset-c.Segments[0].Vaddr {
					t.Errorf("segment %v breaks the linear rule of %v", s, c.Segments[0])
				}
			}
			// Section maps from sysfs + .ko, and the same from kmodsec.data.
			mods, skipped, err := c.ModuleSections("/lib/modules/6.1.0-gen/kernel/gen/")
			if err != nil || len(skipped) != 0 || len(mods) != 50 {
				t.Fatalf("ModuleSections: %d modules, skipped %v, %v", len(mods), skipped, err)
			}
			recs, ok, err := c.KmodsecRecords(kmodsec.DefaultType)
			if err != nil || !ok {
				t.Fatalf("kmodsec.data: %v", err)
			}
			var fromSysfs []kmodsec.Record
			for _, m := range mods {
				fromSysfs = append(fromSysfs, m.Records...)
			}
			if len(recs) != len(fromSysfs) || len(recs) != sum.SectionMaps {
				t.Fatalf("kmodsec.data has %d records, sysfs+ko give %d, summary %d", len(recs), len(fromSysfs), sum.SectionMaps)
			}
			for i := range recs {
				if recs[i].Map() != fromSysfs[i].Map() {
					t.Fatalf("record %d: kmodsec.data %v, sysfs+ko %v", i, recs[i].Map(), fromSysfs[i].Map())
				}
			}

			var digests []string
			var final []index.Map
			for _, impl := range mapset.All {
				ms, err := c.KernelMaps(impl)
				if err != nil {
					t.Fatalf("%s: %v", impl.Name, err)
				}
				if err := index.CheckOrdered(ms.Slice()); err != nil {
					t.Errorf("%s: %v", impl.Name, err)
				}
				digests = append(digests, ms.Digest())
				final = ms.Slice()
			}
			if digests[0] != digests[1] {
				t.Errorf("kernel map digests differ: btree %s, list %s", digests[0], digests[1])
			}
			checkKernelMap(t, arch, c, final)
			checkObjectCode(t, c, final)
			checkPerf(t, dir, sum)
		})
	}
}

// checkKernelMap checks where the kernel map lands.
func checkKernelMap(t *testing.T, arch string, c *corpus.Corpus, maps []index.Map) {
	t.Helper()
	text, _ := c.Landmarks.TextAddr()
	var kernel index.Map
	for _, m := range maps {
		if m.Kind == index.KindKernel {
			kernel = m
		}
	}
	if !kernel.Contains(text) {
		t.Fatalf("kernel map %v does not hold the text address %#x", kernel, text)
	}
	var seg index.Segment
	for _, s := range c.Segments {
		if s.Contains(text) && (seg.Size == 0 || s.Size < seg.Size) {
			seg = s
		}
	}
	if kernel.Start != seg.Vaddr || kernel.End != seg.End() || kernel.Pgoff != seg.Offset {
		t.Errorf("kernel map %v is not the smallest segment holding _stext, %v", kernel, seg)
	}
	switch arch {
	case "ppc64le":
		// the linear-map segment holding _stext
		if kernel.Start != 0xc000000000000000 || kernel.Size() < 1<<30 {
			t.Errorf("ppc64le kernel map %v is not the linear segment at PAGE_OFFSET", kernel)
		}
	case "aarch64":
		// the text segment, nested inside vmalloc
		if kernel.Start != c.Landmarks.Text.Addr || kernel.End != c.Landmarks.End.Addr {
			t.Errorf("arm64 kernel map %v is not [_text, _end)", kernel)
		}
		nested := false
		for _, s := range c.Segments {
			if s.Vaddr == 0xffff800080000000 && s.Size > kernel.Size() && s.Contains(kernel.Start) {
				nested = true
			}
		}
		if !nested {
			t.Errorf("arm64 kernel map %v is not inside a vmalloc segment", kernel)
		}
	}
}

// checkObjectCode checks the object-code invariant at random covered
// addresses outside BPF maps.
func checkObjectCode(t *testing.T, c *corpus.Corpus, maps []index.Map) {
	t.Helper()
	ms := mapset.BTree.New()
	for _, m := range maps {
		if err := ms.Insert(m); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, s := range c.Segments {
		for i := 0; i < 200; i++ {
			var a uint64
			switch i {
			case 0:
				a = s.Vaddr
			case 1:
				a = s.End() - 1
			default:
				a = s.Vaddr + r.Uint64N(s.Size)
			}
			m, ok := ms.Find(a)
			if !ok {
				t.Fatalf("address %#x of segment %v is in no map", a, s)
			}
			if m.Kind == index.KindBPFProg {
				continue
			}
			if got, want := m.MapIP(a), s.FileOffset(a); got != want {
				t.Fatalf("address %#x: map %v gives offset %#x, segment %v says %#x", a, m, got, s, want)
			}
			checked++
		}
	}
	// and inside the BPF programs' neighbourhood
	if checked == 0 {
		t.Error("no address checked")
	}
}

// checkPerf reads perf.data through attrib with both implementations.
func checkPerf(t *testing.T, dir string, sum *gen.Summary) {
	t.Helper()
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, impl := range mapset.All {
		r, err := perfdata.Open(filepath.Join(dir, "perf.data"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := attrib.Run(r, attrib.Options{Impl: impl, Kallsyms: c.Symbols, DebugDir: "-"})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if int64(res.Samples) != sum.Samples {
			t.Errorf("%s: %d samples, generated %d", impl.Name, res.Samples, sum.Samples)
		}
		if int64(res.Unknown) != sum.Misses {
			t.Errorf("%s: %d [unknown], generated %d misses", impl.Name, res.Unknown, sum.Misses)
		}
		digests = append(digests, res.Digest())
	}
	if digests[0] != digests[1] {
		t.Errorf("attribution digests differ: btree %s, list %s", digests[0], digests[1])
	}
	if share := float64(sum.Misses) / float64(sum.Samples); share < 0.003 || share > 0.04 {
		t.Errorf("miss share %.3f, want about 0.015", share)
	}
}

// field splits a perf script -F ip,sym,dso line into ip, symbol, dso.
func fields(line string) (ip, sym, dso string) {
	line = strings.TrimSpace(line)
	ip, rest, _ := strings.Cut(line, " ")
	if i := strings.LastIndex(rest, " ("); i >= 0 {
		return ip, rest[:i], strings.TrimSuffix(rest[i+2:], ")")
	}
	return ip, rest, ""
}

// TestPerfScript compares perf script with ingest/attrib on every
// architecture's perf.data, line by line: ip and dso everywhere, symbol
// for kernel samples (perf gets the corpus kallsyms, alone in a directory
// so that it does not pick up the kcore beside it).
func TestPerfScript(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	for _, arch := range gen.Arches() {
		for _, cc := range []bool{false, true} {
			p := small(arch, 11)
			p.Callchains = cc
			dir, sum := generate(t, p)
			ksDir := t.TempDir()
			ks, err := os.ReadFile(filepath.Join(dir, "kallsyms"))
			if err != nil {
				t.Fatal(err)
			}
			ksFile := filepath.Join(ksDir, "kallsyms")
			os.WriteFile(ksFile, ks, 0o644)
			want, stderr, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "script", "-i", filepath.Join(dir, "perf.data"), "-F", "ip,sym,dso", "-G", "--kallsyms", ksFile)
			if err != nil {
				t.Fatalf("%s: %v", arch, err)
			}
			if s := strings.TrimSpace(stderr); s != "" {
				t.Logf("%s: perf script stderr: %s", arch, s)
			}
			c, err := corpus.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := perfdata.Open(filepath.Join(dir, "perf.data"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			_, err = attrib.Run(r, attrib.Options{Kallsyms: c.Symbols, DebugDir: "-", Script: &got, HideCallchain: true})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			gl, wl := lines(got.Bytes()), lines([]byte(want))
			if int64(len(wl)) != sum.Samples || len(gl) != len(wl) {
				t.Fatalf("%s: perf script printed %d samples, attrib %d, generated %d", arch, len(wl), len(gl), sum.Samples)
			}
			var ipDSO, kernel, kernelSym, same, shown int
			for i := range wl {
				gip, gsym, gdso := fields(gl[i])
				wip, wsym, wdso := fields(wl[i])
				if gip == wip && gdso == wdso {
					ipDSO++
				} else if shown++; shown < 5 {
					t.Errorf("%s sample %d: ours %q, perf %q", arch, i, gl[i], wl[i])
				}
				if gl[i] == wl[i] {
					same++
				}
				if strings.HasPrefix(wip, "ffff") || strings.HasPrefix(wip, "c00") || strings.HasPrefix(wdso, "[") {
					kernel++
					if gsym == wsym {
						kernelSym++
					} else if shown++; shown < 5 {
						t.Errorf("%s sample %d: ours %q, perf %q", arch, i, gl[i], wl[i])
					}
				}
			}
			t.Logf("%s callchains=%v: %d samples; ip+dso equal %d; kernel-side symbols equal %d/%d; whole lines equal %d",
				arch, cc, len(wl), ipDSO, kernelSym, kernel, same)
		}
	}
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}
