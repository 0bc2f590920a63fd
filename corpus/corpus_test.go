package corpus

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kmapindex/kmapindex/ingest/kcore"
)

func kcoreBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := kcore.WriteHeaders(&b, defaultSegments(), elf.EM_AARCH64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

const readelfK1 = `
Elf file type is CORE (Core file)
Entry point 0x0
There are 5 program headers, starting at offset 64

Program Headers:
  Type           Offset   VirtAddr           PhysAddr           FileSiz  MemSiz   Flg Align
  LOAD           0x800080002000 0xffff800080000000 0x0000000000000000 0x22f0000 0x22f0000 RWE 0x1000
  LOAD           0x800080002000 0xffff800080000000 0x0000000000000000 0x7dff3f800000 0x7dff3f800000 RWE 0x1000
  LOAD           0x800000002000 0xffff800000000000 0x0000000000000000 0x80000000 0x80000000 RWE 0x1000
  LOAD           0x002000 0xffff000000000000 0x0000000000000000 0x1ac00000 0x1ac00000 RWE 0x1000
  LOAD           0xfdffc0002000 0xfffffdffc0000000 0x0000000000000000 0x6b0000 0x6b0000 RWE 0x1000
`

func TestLoadFS(t *testing.T) {
	k := kcoreBytes(t)
	tests := []struct {
		name  string
		files fstest.MapFS
		check func(t *testing.T, c *Corpus)
		err   string // substring of the error, "" for success
	}{
		{name: "empty directory", files: fstest.MapFS{"c/other": file("x")},
			check: func(t *testing.T, c *Corpus) {
				if c.HasMeta || c.HasKallsyms || c.HasModules || c.HasKcore || c.BPF != nil {
					t.Errorf("%+v", c)
				}
			}},
		{name: "meta with unknown fields and generator params",
			files: fstest.MapFS{"c/corpus.json": file(`{"name":"n","arch":"x86_64","future":1,"generator":{"seed":7,"modules":100}}`)},
			check: func(t *testing.T, c *Corpus) {
				if c.Meta.Name != "n" || c.Meta.Arch != "x86_64" || string(c.Meta.Generator) != `{"seed":7,"modules":100}` {
					t.Errorf("%+v", c.Meta)
				}
			}},
		{name: "readelf text only", files: fstest.MapFS{"c/kcore.readelf": file(readelfK1)},
			check: func(t *testing.T, c *Corpus) {
				if !c.HasKcore || !slices.Equal(c.Segments, defaultSegments()) {
					t.Errorf("%v", c.Segments)
				}
			}},
		{name: "kcore and readelf text agree", files: fstest.MapFS{"c/kcore": {Data: k}, "c/kcore.readelf": file(readelfK1)},
			check: func(t *testing.T, c *Corpus) {
				if !slices.Equal(c.Segments, defaultSegments()) {
					t.Errorf("%v", c.Segments)
				}
			}},
		{name: "kcore and readelf text disagree",
			files: fstest.MapFS{"c/kcore": {Data: k}, "c/kcore.readelf": file(strings.Replace(readelfK1, "0x6b0000 0x6b0000", "0x6c0000 0x6c0000", 1))},
			err:   "c: kcore and kcore.readelf describe different segments"},
		{name: "bad json", files: fstest.MapFS{"c/corpus.json": file(`{"name":`)}, err: "c/corpus.json: unexpected EOF"},
		{name: "bad kallsyms line", files: fstest.MapFS{"c/kallsyms": file("1 T a\n10000000000000000 T b\n")},
			err: "kallsyms c/kallsyms:2: address overflows"},
		{name: "restricted kallsyms", files: fstest.MapFS{"c/kallsyms": file("0000000000000000 T _text\n0000000000000000 T _stext\n")},
			err: "c/kallsyms: all 2 addresses are 0"},
		{name: "bad modules line", files: fstest.MapFS{"c/modules": file("m 99999999999999999999 0 - Live 0x1\n")},
			err: "modules c/modules:1: value out of range"},
		{name: "restricted modules", files: fstest.MapFS{"c/modules": file("m 4096 0 - Live 0x0000000000000000\n")},
			err: "c/modules: all 1 module addresses are 0"},
		{name: "truncated kcore", files: fstest.MapFS{"c/kcore": {Data: k[:100]}}, err: "c/kcore: malformed kcore headers"},
		{name: "kcore that is text", files: fstest.MapFS{"c/kcore": file(readelfK1)}, err: "c/kcore: malformed kcore headers: offset 0: bad ELF magic"},
		{name: "bad readelf text", files: fstest.MapFS{"c/kcore.readelf": file("nothing\n")}, err: "c/kcore.readelf: readelf text: line 1: no"},
		{name: "kcore breaking the linear rule",
			files: fstest.MapFS{"c/kcore.readelf": file(strings.Replace(readelfK1, "0x800080002000 0xffff800080000000", "0x800080003000 0xffff800080000000", 1))},
			err:   "c/kcore.readelf: kcore segments 0 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadFS(tt.files, "c")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// plainFS hides io.ReaderAt and io.Seeker from the files it opens.
type plainFS struct{ fs.FS }

type plainFile struct{ f fs.File }

func (p plainFile) Stat() (fs.FileInfo, error) { return p.f.Stat() }
func (p plainFile) Read(b []byte) (int, error) { return p.f.Read(b) }
func (p plainFile) Close() error               { return p.f.Close() }

func (p plainFS) Open(name string) (fs.File, error) {
	f, err := p.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return plainFile{f}, nil
}

func TestLoadFSWithoutReaderAt(t *testing.T) {
	c, err := LoadFS(plainFS{DefaultFS()}, DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Segments, defaultSegments()) {
		t.Errorf("segments %v", c.Segments)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("testdata/does-not-exist"); err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist") {
		t.Errorf("err = %v", err)
	}
	if _, err := Load("default/kallsyms"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadFS(DefaultFS(), "../x"); err == nil {
		t.Error("LoadFS accepted ../x")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kallsyms"), []byte("1 T a\n2 T "+strings.Repeat("n", 600)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "kallsyms") + ":2:"
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
}

// Errors name the corpus by its absolute path: "corpus .: …" said nothing.
func TestLoadErrorNamesDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetaFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Skip(err)
	}
	_, err = Load(rel)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, MetaFile)) {
		t.Errorf("error %v, want one naming %s", err, filepath.Join(dir, MetaFile))
	}
}
