package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/testtree"
)

// kmodsecTestCorpus writes a corpus directory with two modules: my_mod, with a
// ko file and sysfs sections, and absent_mod, with neither.
func kmodsecTestCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ko, err := os.ReadFile(filepath.Join("..", "..", "ingest", "modsec", "testdata", "my-mod.ko"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"modules": "my_mod 12288 0 - Live 0xffffffffc0a00000\n" +
			"absent_mod 4096 0 - Live 0xffffffffc0b00000\n",
		"ko/my-mod.ko":                               string(ko),
		"ko/README":                                  "not a module",
		"sys/module/my_mod/sections/.text":           "0xffffffffc0a00000\n",
		"sys/module/my_mod/sections/.noinstr.text":   "0xffffffffc0a00020\n",
		"sys/module/my_mod/sections/.exit.text":      "0xffffffffc0a00050\n",
		"sys/module/my_mod/sections/.data":           "0xffffffffc0a02000\n",
		"sys/module/my_mod/sections/.init.text":      "0xffffffffc0a10000\n",
		"sys/module/my_mod/sections/.gnu.linkonce.x": "0xffffffffc0a03000\n",
	}
	testtree.Write(t, dir, files)
	return dir
}

func kmodsecRun(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = runKmodsec(args, &o, &e)
	return o.String(), e.String(), err
}

func TestKmodsecWriteDump(t *testing.T) {
	corpus := kmodsecTestCorpus(t)
	// Offsets and sizes from the committed my-mod.ko (readelf -S).
	const body = "# pid\tstart\tlen\tpgoff\tsection\tpath\n" +
		"-1\t0xffffffffc0a02000\t0x8\t0x54\t.data\tko/my-mod.ko\n" +
		"-1\t0xffffffffc0a00020\t0x2a\t0x5c\t.noinstr.text\tko/my-mod.ko\n" +
		"-1\t0xffffffffc0a00050\t0xb\t0xbe\t.exit.text\tko/my-mod.ko\n"
	tests := []struct {
		name  string
		flags []string
		typ   uint32
		order binary.ByteOrder
	}{
		{"default", nil, 83, binary.LittleEndian},
		{"big-endian private type", []string{"-be", "-type", "90"}, 90, binary.BigEndian},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "kmodsec.data")
			args := append([]string{"write", "-corpus", corpus, "-o", out}, tt.flags...)
			stdout, stderr, err := kmodsecRun(t, args...)
			if err != nil {
				t.Fatalf("write: %v\n%s", err, stderr)
			}
			if !strings.Contains(stdout, "wrote 3 records for 1 modules") {
				t.Errorf("write stdout %q", stdout)
			}
			if !strings.Contains(stderr, "skipped 1 modules: absent_mod (no ko file)") {
				t.Errorf("write stderr %q", stderr)
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			recs, order, err := kmodsec.ReadStream(f, tt.typ)
			f.Close()
			if err != nil || order != tt.order || len(recs) != 3 {
				t.Fatalf("ReadStream: %d records, %v, %v", len(recs), order, err)
			}
			if dso := recs[1].Map().DSO; dso != "[my-mod].noinstr.text" {
				t.Errorf("DSO %q", dso)
			}

			dumpArgs := []string{"dump", out}
			if tt.typ != 83 {
				dumpArgs = []string{"dump", "-type", "90", out}
			}
			stdout, _, err = kmodsecRun(t, dumpArgs...)
			if err != nil {
				t.Fatal(err)
			}
			orderName := "little-endian"
			if tt.order == binary.BigEndian {
				orderName = "big-endian"
			}
			want := "# " + out + ": 3 records of type " + map[uint32]string{83: "83", 90: "90"}[tt.typ] + ", " + orderName + "\n" + body
			if stdout != want {
				t.Errorf("dump:\n%s\nwant:\n%s", stdout, want)
			}
		})
	}
}

func TestKmodsecPrefix(t *testing.T) {
	corpus := kmodsecTestCorpus(t)
	out := filepath.Join(t.TempDir(), "k.data")
	if _, _, err := kmodsecRun(t, "write", "-corpus", corpus, "-o", out, "-prefix", "/lib/modules/6.2.0/extra/"); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := kmodsecRun(t, "dump", out)
	if err != nil || !strings.Contains(stdout, "\t.data\t/lib/modules/6.2.0/extra/my-mod.ko\n") {
		t.Errorf("dump = %q, %v", stdout, err)
	}
}

func TestKmodsecErrors(t *testing.T) {
	corpus := kmodsecTestCorpus(t)
	tmp := t.TempDir()
	perfData := filepath.Join(tmp, "perf.data")
	if err := os.WriteFile(perfData, append([]byte("PERFILE2"), make([]byte, 96)...), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(tmp, "garbage")
	if err := os.WriteFile(garbage, []byte("this is not a record stream"), 0o644); err != nil {
		t.Fatal(err)
	}
	noModules := t.TempDir()
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no subcommand", nil, "missing subcommand"},
		{"unknown", []string{"frob"}, `unknown subcommand "frob"`},
		{"dump no file", []string{"dump"}, "want exactly one FILE"},
		{"dump missing", []string{"dump", filepath.Join(tmp, "nope")}, "no such file"},
		{"dump perf.data", []string{"dump", perfData}, "header size 0"},
		{"dump garbage", []string{"dump", garbage}, "neither is the record type 83"},
		{"dump bad type", []string{"dump", "-type", "4294967296", garbage}, "does not fit in 32 bits"},
		{"write no corpus", []string{"write", "-o", filepath.Join(tmp, "x")}, "-corpus and -o are required"},
		{"write no output", []string{"write", "-corpus", corpus}, "-corpus and -o are required"},
		{"write no modules", []string{"write", "-corpus", noModules, "-o", filepath.Join(tmp, "x")}, "modules"},
		{"write bad prefix", []string{"write", "-corpus", corpus, "-o", filepath.Join(tmp, "x"), "-prefix", "ko"}, "has no '/'"},
		{"bad flag", []string{"write", "-frob"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := kmodsecRun(t, tt.args...)
			// Usage errors print their complaint and return errUsage.
			if err == nil || !strings.Contains(err.Error()+" "+stderr, tt.msg) {
				t.Errorf("error %v (stderr %q), want one containing %q", err, stderr, tt.msg)
			}
		})
	}
}

// dump reads KMOD_SEC_MAP records out of a perf.data file too.
func TestKmodsecDumpPerfData(t *testing.T) {
	name := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	rec := kmodsec.Record{Misc: 1, Pid: -1, Start: 0xffffffffc0e5a000, Len: 0x5c3, Pgoff: 0x1c040, Section: ".noinstr.text", Path: "/lib/modules/6.2.0-rc1/kernel/arch/x86/kvm/kvm-amd.ko"}
	if err := w.WriteRaw(kmodsec.Encode(rec, binary.LittleEndian, kmodsec.DefaultType, w.Attr().IDHdrSize())); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out, errb bytes.Buffer
	if err := runKmodsec([]string{"dump", name}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	want := "-1\t0xffffffffc0e5a000\t0x5c3\t0x1c040\t.noinstr.text\t/lib/modules/6.2.0-rc1/kernel/arch/x86/kvm/kvm-amd.ko\n"
	if !strings.Contains(out.String(), "1 records of type 83") || !strings.HasSuffix(out.String(), want) {
		t.Errorf("dump:\n%s", out.String())
	}
}
