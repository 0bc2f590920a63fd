package corpus_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/internal/testtree"
)

const (
	noinstrAt = 0xffffffffc0a05000 // sysfs .noinstr.text
	initAt    = 0xffffffffc0a09000 // sysfs .init.text: skipped (freed after init)
)

// sectionCorpus writes an x86_64 corpus with one module, my_mod, whose
// .ko is ingest/modsec's committed ET_REL object.
func sectionCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ko, err := os.ReadFile("../ingest/modsec/testdata/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kallsyms":                         "ffffffff81000000 T _text\nffffffff81000000 T _stext\nffffffff82000000 T _etext\n",
		"modules":                          "my_mod 16384 0 - Live 0xffffffffc0a00000\n",
		"sys/module/my_mod/sections/.text": "0xffffffffc0a00000\n",
		"sys/module/my_mod/sections/.noinstr.text": "0xffffffffc0a05000\n",
		"sys/module/my_mod/sections/.data":         "0xffffffffc0a08000\n",
		"sys/module/my_mod/sections/.exit.text":    "0xffffffffc0a06000\n",
		"sys/module/my_mod/sections/.init.text":    "0xffffffffc0a09000\n",
		"ko/my-mod.ko":                             string(ko),
	}
	testtree.Write(t, dir, files)
	return dir
}

// symbolBytes returns a function's bytes from the .ko, found through its
// symbol table: the independent truth for the object-code check.
func symbolBytes(t *testing.T, ko, name string) []byte {
	t.Helper()
	f, err := elf.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			b, err := f.Sections[s.Section].Data()
			if err != nil {
				t.Fatal(err)
			}
			return b[s.Value : s.Value+s.Size]
		}
	}
	t.Fatalf("no symbol %s", name)
	return nil
}

func TestKernelMapsWithSections(t *testing.T) {
	dir := sectionCorpus(t)
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "ffffffff81000000-ffffffff82000000 0 identity kernel [kernel.kallsyms]\n" +
		"ffffffffc0a00000-ffffffffc0a00013 40 dso module [my_mod]\n" +
		"ffffffffc0a05000-ffffffffc0a0502a 5c dso section [my-mod].noinstr.text\n" +
		"ffffffffc0a06000-ffffffffc0a0600b be dso section [my-mod].exit.text\n" +
		"ffffffffc0a08000-ffffffffc0a08008 54 dso section [my-mod].data\n"
	for _, im := range mapset.All {
		ms, err := c.KernelMaps(im)
		if err != nil {
			t.Fatal(err)
		}
		if got := ms.Canonical(); got != want {
			t.Errorf("impl=%s\n%swant\n%s", im.Name, got, want)
		}
		// Object-code check: noinstr_fn (offset 5 in .noinstr.text) read
		// from the .ko at map_ip of its runtime address.
		ko := filepath.Join(dir, "ko", "my-mod.ko")
		fn := symbolBytes(t, ko, "noinstr_fn")
		m, ok := ms.Find(noinstrAt + 5)
		if !ok || m.DSO != "[my-mod].noinstr.text" {
			t.Fatalf("Find = %v %v", m, ok)
		}
		raw, _ := os.ReadFile(ko)
		off := m.MapIP(noinstrAt + 5)
		if got := raw[off : off+uint64(len(fn))]; !bytes.Equal(got, fn) {
			t.Errorf("bytes at file offset %#x = % x, want % x", off, got, fn)
		}
		if _, ok := ms.Find(initAt); ok {
			t.Error(".init.text got a map")
		}
	}
}

// The same section maps come from kmodsec.data alone (a corpus without
// sysfs and .ko files), written by the records ModuleSections makes.
func TestKernelMapsFromKmodsecData(t *testing.T) {
	dir := sectionCorpus(t)
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, skipped, err := c.ModuleSections("/lib/modules/6.1/extra/")
	if err != nil || len(mods) != 1 || len(skipped) != 0 {
		t.Fatalf("ModuleSections = %v, %v, %v", mods, skipped, err)
	}
	var buf bytes.Buffer
	if err := kmodsec.WriteStream(&buf, mods[0].Records, binary.LittleEndian, kmodsec.DefaultType); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "sys"))
	os.RemoveAll(filepath.Join(dir, "ko"))
	if err := os.WriteFile(filepath.Join(dir, "kmodsec.data"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.KernelMaps(mapset.BTree)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ms.Find(noinstrAt + 5)
	if !ok || m.Kind != index.KindModuleSection || m.DSO != "[my-mod].noinstr.text" || m.MapIP(noinstrAt+5) != 0x61 {
		t.Errorf("Find = %v %v", m, ok)
	}
}
