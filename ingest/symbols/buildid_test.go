package symbols

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/elfwrite"
)

// TestBuildID: a file's build id is the note of the section perf 6.1's
// elf_read_build_id picks by name (.note.gnu.build-id, else .notes, else
// .note), whatever its type, and no other: a build-id note in a section
// of another name is not one, and a picked section without one leaves
// the file without a build id even if a later one has it.
func TestBuildID(t *testing.T) {
	id := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	other := bytes.Repeat([]byte{0xaa}, 20)
	abiTag := []byte{4, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 'G', 'N', 'U', 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}
	note := func(name string, typ elf.SectionType, data []byte) elfwrite.Section {
		return elfwrite.Section{Name: name, Type: typ, Flags: elf.SHF_ALLOC, Data: data}
	}
	for _, tc := range []struct {
		name     string
		sections []elfwrite.Section
		want     []byte
	}{
		{"gnu build-id after an ABI tag", []elfwrite.Section{note(".note.ABI-tag", elf.SHT_NOTE, abiTag), note(".note.gnu.build-id", elf.SHT_NOTE, elfwrite.BuildIDNote(id))}, id},
		{"gnu build-id before .notes", []elfwrite.Section{note(".notes", elf.SHT_NOTE, elfwrite.BuildIDNote(other)), note(".note.gnu.build-id", elf.SHT_NOTE, elfwrite.BuildIDNote(id))}, id},
		{".notes before .note", []elfwrite.Section{note(".note", elf.SHT_NOTE, elfwrite.BuildIDNote(other)), note(".notes", elf.SHT_NOTE, elfwrite.BuildIDNote(id))}, id},
		{".note, an ABI tag first", []elfwrite.Section{note(".note", elf.SHT_NOTE, append(abiTag, elfwrite.BuildIDNote(id)...))}, id},
		{"picked by name, not type", []elfwrite.Section{note(".notes", elf.SHT_PROGBITS, elfwrite.BuildIDNote(id))}, id},
		{"another name", []elfwrite.Section{note(".note.ABI-tag", elf.SHT_NOTE, abiTag), note(".note.other", elf.SHT_NOTE, elfwrite.BuildIDNote(id))}, nil},
		{"picked section without one", []elfwrite.Section{note(".note.gnu.build-id", elf.SHT_NOTE, abiTag), note(".notes", elf.SHT_NOTE, elfwrite.BuildIDNote(id))}, nil},
		{"none", nil, nil},
	} {
		f := elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: tc.sections}
		b, err := f.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := BuildID(ef); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: build id %x, want %x", tc.name, got, tc.want)
		}
	}
}

// TestBuildIDAgainstPerf writes ELF files whose notes lie in sections of
// random names, types and order, and compares BuildID with the build id
// perf 6.1 reads from each (perf buildid-list -i FILE, which prints a
// file's own build id, filename__read_build_id, and takes a file without
// one for a perf.data file).
func TestBuildIDAgainstPerf(t *testing.T) {
	perf := perfBin(t)
	rng := rand.New(rand.NewPCG(7, 8))
	names := []string{".note.gnu.build-id", ".notes", ".note", ".note.ABI-tag", ".note.other", ".note.gnu.property"}
	abiTag := []byte{4, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 'G', 'N', 'U', 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}
	dir := t.TempDir()
	found := 0
	for i := range 40 {
		var sections []elfwrite.Section
		for _, j := range rng.Perm(len(names))[:1+rng.IntN(len(names))] {
			var data []byte
			switch rng.IntN(3) {
			case 0:
				data = abiTag
			case 1:
				id := make([]byte, 20)
				for k := range id {
					id[k] = byte(rng.IntN(256))
				}
				data = elfwrite.BuildIDNote(id)
			default:
				data = append(slices.Clone(abiTag), elfwrite.BuildIDNote([]byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})...)
			}
			typ := elf.SHT_NOTE
			if rng.IntN(5) == 0 {
				typ = elf.SHT_PROGBITS
			}
			sections = append(sections, elfwrite.Section{Name: names[j], Type: typ, Flags: elf.SHF_ALLOC, Data: data})
		}
		f := elfwrite.File{Type: elf.ET_DYN, Machine: elf.EM_X86_64, Sections: sections}
		path := filepath.Join(dir, fmt.Sprintf("f%d.so", i))
		if err := f.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got := hex.EncodeToString(BuildID(ef))
		ef.Close()
		out, _ := exec.Command(perf, "buildid-list", "-i", path).CombinedOutput()
		want := strings.TrimSpace(string(out))
		if !regexp.MustCompile(`^[0-9a-f]+$`).MatchString(want) {
			want = "" // not a build id: perf read none
		} else {
			found++
		}
		if got != want {
			t.Errorf("file %d (sections %v): build id %q, perf %q", i, sectionNames(sections), got, want)
		}
	}
	if found == 0 || found == 40 {
		t.Errorf("perf read a build id from %d of 40 files: the test needs both kinds", found)
	}
}

func sectionNames(ss []elfwrite.Section) []string {
	var names []string
	for _, s := range ss {
		names = append(names, fmt.Sprintf("%s/%v", s.Name, s.Type))
	}
	return names
}
