package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testtree"
)

func TestCaptureUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		nil,
		{"-bogus"},
		{"-o"},
		{"-root", dir},
		{"-o", filepath.Join(dir, "c"), "extra"},
	} {
		var out, errb bytes.Buffer
		if err := runCapture(args, &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("%q: err %v, want errUsage", args, err)
		}
		if !strings.Contains(errb.String(), "usage: kbench capture") {
			t.Errorf("%q: no usage on stderr: %q", args, errb.String())
		}
	}
}

func TestCaptureNonEmptyOut(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := runCapture([]string{"-root", t.TempDir(), "-o", dir}, &out, &errb)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), dir) {
		t.Errorf("err %v, want one naming %s", err, dir)
	}
}

func TestCaptureFakeRoot(t *testing.T) {
	root := t.TempDir()
	testtree.Write(t, root, map[string]string{
		"proc/sys/kernel/hostname":  "h\n",
		"proc/sys/kernel/osrelease": "6.1.0\n",
		"proc/sys/kernel/arch":      "x86_64\n",
		"proc/kallsyms": "ffffffff81000000 T _text\nffffffff81000000 T _stext\n" +
			"ffffffff81001000 T f\nffffffff82000000 T _etext\nffffffff83000000 B _end\n",
	})
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "c")
	if err := runCapture([]string{"-root", root, "-o", dir}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, want := range []string{
		"captured h (kernel 6.1.0, x86_64) into " + dir,
		"  kallsyms ", "  corpus.json ", "total",
		"modules: not captured", "kcore: not captured",
		"check: loaded 5 symbols, 0 modules, 0 kcore segments",
		"check: kernel maps (impl=btree): 1 maps, sha256=",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCaptureKmodsecAgrees checks that the records capture writes are
// those "kbench kmodsec write" makes from the captured corpus.
func TestCaptureKmodsecAgrees(t *testing.T) {
	ko, err := os.ReadFile(filepath.Join("..", "..", "ingest", "modsec", "testdata", "my-mod.ko"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	testtree.Write(t, root, map[string]string{
		"proc/sys/kernel/osrelease":                 "6.1.0\n",
		"proc/modules":                              "my_mod 12288 0 - Live 0xffffffffc0000000\n",
		"sys/module/my_mod/sections/.text":          "0xffffffffc0000000\n",
		"sys/module/my_mod/sections/.data":          "0xffffffffc0002000\n",
		"sys/module/my_mod/sections/.noinstr.text":  "0xffffffffc0000100\n",
		"lib/modules/6.1.0/kernel/misc/my-mod.ko":   string(ko),
		"lib/modules/6.1.0/kernel/misc/unused-x.ko": "not loaded, never read",
	})
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "c")
	if err := runCapture([]string{"-root", root, "-o", dir}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "1 module files, 0 kcore segments, 2 KMOD_SEC_MAP records") {
		t.Errorf("output:\n%s", out.String())
	}
	file := filepath.Join(t.TempDir(), "k.data")
	args := []string{"write", "-corpus", dir, "-o", file}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		args = append(args, "-be")
	}
	if err := runKmodsec(args, &out, &errb); err != nil {
		t.Fatalf("kmodsec write: %v\n%s", err, errb.String())
	}
	a, err1 := os.ReadFile(filepath.Join(dir, "kmodsec.data"))
	b, err2 := os.ReadFile(file)
	if err1 != nil || err2 != nil || len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("capture's kmodsec.data (%d bytes, %v) differs from kmodsec write's (%d bytes, %v)", len(a), err1, len(b), err2)
	}
}

// TestCaptureThisMachine runs the command on the machine the test runs on;
// whatever it finds, a capture that writes is a success.
func TestCaptureThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("not linux")
	}
	if _, err := os.Stat("/proc/kallsyms"); err != nil {
		t.Skip(err)
	}
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "c")
	if err := runCapture([]string{"-o", dir}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "  kallsyms ") || !strings.Contains(out.String(), "check: ") {
		t.Errorf("output:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
