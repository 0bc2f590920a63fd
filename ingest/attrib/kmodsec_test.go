package attrib

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// writeKmodsecRecording writes a perf.data file holding the kernel and
// module MMAPs of my_mod (ingest/modsec's test object), its KMOD_SEC_MAP
// records of type typ, and kernel samples at ips.
func writeKmodsecRecording(t *testing.T, typ uint32, ips []uint64) string {
	t.Helper()
	ko, err := filepath.Abs("../modsec/testdata/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := modsec.ReadELFSections(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	mod := index.Module{Name: "my_mod", Start: 0xffffffffc0a00000, Size: 0x4000}
	addrs := map[string]uint64{".text": 0xffffffffc0a00000, ".noinstr.text": 0xffffffffc0a05000, ".data": 0xffffffffc0a08000, ".exit.text": 0xffffffffc0a06000}
	recs, err := modsec.Records(mod, addrs, secs, ko)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "kmodsec.data")
	out, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, perfdata.WriterOptions{Arch: "x86_64", Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	kernel := &perfdata.Mmap{Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}
	kernel.Misc = uint16(perfdata.CPUModeKernel)
	must(w.WriteMmap(kernel))
	module := &perfdata.Mmap{Pid: ^uint32(0), Addr: mod.Start, Len: mod.Size, Filename: "[my_mod]"}
	module.Misc = uint16(perfdata.CPUModeKernel)
	must(w.WriteMmap(module))
	for _, r := range recs {
		must(w.WriteRaw(kmodsec.Encode(r, binary.LittleEndian, typ, w.Attr().IDHdrSize())))
	}
	for i, ip := range ips {
		s := &perfdata.Sample{IP: ip, Pid: 1, Tid: 1, Time: uint64(1000 + i), Period: 1}
		s.Misc = uint16(perfdata.CPUModeKernel)
		must(w.WriteSample(s))
	}
	must(w.WriteFinishedRound())
	must(w.Close())
	return name
}

// Samples in a module's .noinstr.text resolve, through the KMOD_SEC_MAP
// records, to [my-mod].noinstr.text and the function there; the rest of
// the module keeps its map. A private type number works the same.
func TestKmodSecMapRecords(t *testing.T) {
	ips := []uint64{0xffffffffc0a05005, 0xffffffffc0a05000, 0xffffffffc0a00009, 0xffffffffc0a06003, 0xffffffffc0a03000}
	want := []string{
		" ffffffffc0a05005 noinstr_fn ([my-mod].noinstr.text)",
		" ffffffffc0a05000 noinstr_first ([my-mod].noinstr.text)",
		" ffffffffc0a00009 [unknown] ([my_mod])",
		" ffffffffc0a06003 exit_fn ([my-mod].exit.text)",
		" ffffffffc0a03000 [unknown] ([my_mod])",
	}
	for _, typ := range []uint32{kmodsec.DefaultType, 90} {
		file := writeKmodsecRecording(t, typ, ips)
		for _, im := range mapset.All {
			r, err := perfdata.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			res, err := Run(r, Options{Impl: im, Script: &buf, KmodSecType: typ, DebugDir: "-"})
			r.Close()
			if err != nil {
				t.Fatalf("type %d impl=%s: %v", typ, im.Name, err)
			}
			if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("type %d impl=%s:\n%s\nwant\n%s", typ, im.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if res.Unknown != 0 {
				t.Errorf("type %d: %d unknown", typ, res.Unknown)
			}
		}
	}
	// Read as another type, the records are ignored: .noinstr.text lies
	// outside the module map and the sample has no map.
	file := writeKmodsecRecording(t, 90, ips[:1])
	r, _ := perfdata.Open(file)
	defer r.Close()
	var buf bytes.Buffer
	if _, err := Run(r, Options{Script: &buf, DebugDir: "-"}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != " ffffffffc0a05005 [unknown] ([unknown])\n" {
		t.Errorf("records of another type were applied: %s", buf.String())
	}
}

// A record of the KMOD_SEC_MAP type that does not decode ends the run
// with an error naming its offset.
func TestKmodSecMapBadRecord(t *testing.T) {
	name := filepath.Join(t.TempDir(), "bad.data")
	out, _ := os.Create(name)
	w, _ := perfdata.NewWriter(out, perfdata.WriterOptions{})
	bad := make([]byte, 56)
	binary.LittleEndian.PutUint32(bad, 90)
	binary.LittleEndian.PutUint16(bad[6:], 56)
	binary.LittleEndian.PutUint16(bad[40:], 200) // sec_name_len past the end
	if err := w.WriteRaw(bad); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out.Close()
	r, _ := perfdata.Open(name)
	defer r.Close()
	_, err := Run(r, Options{KmodSecType: 90, DebugDir: "-"})
	if err == nil || !strings.Contains(err.Error(), "file offset") {
		t.Errorf("err = %v", err)
	}
}
