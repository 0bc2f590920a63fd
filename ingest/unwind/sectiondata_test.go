package unwind

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// TestSectionDataMatchesDebugELF compares sectionData with debug/elf's
// Section.Data on every section of a program built at test time with
// its debug sections compressed by objcopy (zlib and zstd), of the same
// files with their compressed bytes damaged (both must fail or give the
// same bytes), and of the C library's debug file when there is one.
func TestSectionDataMatchesDebugELF(t *testing.T) {
	files := compressedPrograms(t, "zlib", "zstd")
	if libc := testbuild.LibcDebugFile(); libc != "" {
		files = append(files, libc)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		compared := compareSections(t, file, data)
		if compared == 0 {
			t.Errorf("%s: no compressed section", file)
		}
		// Damage each compressed section's stream in a few places.
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_COMPRESSED == 0 || s.FileSize < 64 {
				continue
			}
			for _, at := range []uint64{30, s.FileSize / 2, s.FileSize - 5} {
				bad := bytes.Clone(data)
				bad[s.Offset+at] ^= 0x5a
				compareSections(t, file+" damaged in "+s.Name, bad)
			}
		}
	}
}

// compressedPrograms builds the inline test program with gcc -g -O2 and
// returns copies of it whose debug sections objcopy compressed, one per
// kind it manages; it skips the test without objcopy or any.
func compressedPrograms(t *testing.T, kinds ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "inl.c", inlineSrc)
	bin := filepath.Join(dir, "inl")
	if err := testbuild.Compile(t, "gcc", "-g", "-O2", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, kind := range kinds {
		out := filepath.Join(dir, "inl."+kind)
		if b, err := exec.Command("objcopy", "--compress-debug-sections="+kind, bin, out).CombinedOutput(); err != nil {
			t.Logf("objcopy --compress-debug-sections=%s: %v: %s", kind, err, b)
			continue
		}
		files = append(files, out)
	}
	if len(files) == 0 {
		t.Skip("objcopy compresses no debug sections here")
	}
	return files
}

// compareSections compares sectionData with Section.Data on every
// section of the ELF file data and returns how many were compressed.
func compareSections(t *testing.T, name string, data []byte) int {
	t.Helper()
	ra := bytes.NewReader(data)
	f, err := elf.NewFile(ra)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			n++
		}
		want, werr := s.Data()
		got, mapping, gerr := sectionData(f, ra, s, nil, "", nil)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) || mapping != nil {
			t.Errorf("%s: section %s: %d bytes (error %v, mapped %v), debug/elf gives %d (error %v)", name, s.Name, len(got), gerr, mapping != nil, len(want), werr)
		}
	}
	return n
}
