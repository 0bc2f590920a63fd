package kcore

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

// k1Segments are the arm64 kcore program headers of reference vector K1,
// in file order: text, vmalloc, modules, RAM, vmemmap.
func k1Segments() []index.Segment {
	const pageOffset, d = 0xffff000000000000, 0x2000
	segs := []index.Segment{
		{Vaddr: 0xffff800080000000, Size: 0xffff8000822f0000 - 0xffff800080000000},
		{Vaddr: 0xffff800080000000, Size: 0xfffffdffbf800000 - 0xffff800080000000},
		{Vaddr: 0xffff800000000000, Size: 0x80000000},
		{Vaddr: 0xffff000000000000, Size: 0x1ac00000},
		{Vaddr: 0xfffffdffc0000000, Size: 0x6b0000},
	}
	for i := range segs {
		segs[i].Offset = segs[i].Vaddr - pageOffset + d
	}
	return segs
}

func seg(vaddr, size, off uint64) index.Segment {
	return index.Segment{Vaddr: vaddr, Size: size, Offset: off}
}

func writeHeaders(t testing.TB, segs []index.Segment, m elf.Machine, bo binary.ByteOrder) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHeaders(&b, segs, m, bo); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func equalSegs(a, b []index.Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    elf.Machine
		bo   binary.ByteOrder
	}{
		{"arm64 little-endian", elf.EM_AARCH64, binary.LittleEndian},
		{"ppc64 big-endian", elf.EM_PPC64, binary.BigEndian},
		{"x86_64 native", elf.EM_X86_64, binary.NativeEndian},
	} {
		t.Run(tt.name, func(t *testing.T) {
			segs := k1Segments()
			data := writeHeaders(t, segs, tt.m, tt.bo)
			if len(data) != 64+56*len(segs) {
				t.Fatalf("wrote %d bytes", len(data))
			}
			f, err := ReadELF(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if f.Class != elf.ELFCLASS64 || f.Type != elf.ET_CORE || f.Machine != tt.m {
				t.Errorf("header %v %v %v", f.Class, f.Type, f.Machine)
			}
			if want := elf.ELFDATA2MSB; (tt.bo == binary.BigEndian) != (f.Data == want) {
				t.Errorf("data %v", f.Data)
			}
			for _, exe := range []bool{false, true} {
				if got := Segments(f.Progs, exe); !equalSegs(got, segs) {
					t.Errorf("Segments(exe=%v) = %v, want %v", exe, got, segs)
				}
			}
			// debug/elf agrees.
			ef, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range ef.Progs {
				if p.ProgHeader != f.Progs[i] {
					t.Errorf("prog %d: debug/elf %+v, ReadELF %+v", i, p.ProgHeader, f.Progs[i])
				}
			}
			if err := Validate(segs); err != nil {
				t.Error(err)
			}
		})
	}
	if err := WriteHeaders(&bytes.Buffer{}, make([]index.Segment, 0xffff), elf.EM_X86_64, binary.LittleEndian); err == nil {
		t.Error("WriteHeaders accepted 0xffff segments")
	}
}

// elf32 builds a 32-bit ELF file holding only its header and progs.
func elf32(t testing.TB, progs []elf.ProgHeader, m elf.Machine, bo binary.ByteOrder) []byte {
	t.Helper()
	h := elf.Header32{Type: uint16(elf.ET_CORE), Machine: uint16(m), Version: 1, Phoff: 52,
		Ehsize: 52, Phentsize: 32, Phnum: uint16(len(progs))}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS32)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	if bo == binary.BigEndian {
		h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	h.Ident[elf.EI_VERSION] = 1
	b, err := binary.Append(nil, bo, &h)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range progs {
		p32 := elf.Prog32{Type: uint32(p.Type), Flags: uint32(p.Flags), Off: uint32(p.Off), Vaddr: uint32(p.Vaddr),
			Paddr: uint32(p.Paddr), Filesz: uint32(p.Filesz), Memsz: uint32(p.Memsz), Align: uint32(p.Align)}
		if b, err = binary.Append(b, bo, &p32); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// progs32 exercises the flag and size rules of elf_read_maps.
var progs32 = []elf.ProgHeader{
	{Type: elf.PT_NOTE, Flags: 0, Off: 0x100, Filesz: 0x40},
	{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W | elf.PF_X, Off: 0x1000, Vaddr: 0xc0000000, Paddr: 0, Filesz: 0x100000, Memsz: 0x100000, Align: 0x1000},
	{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0x200000, Vaddr: 0xc1000000, Filesz: 0x2000, Memsz: 0x3000, Align: 0x1000},
	{Type: elf.PT_LOAD, Flags: elf.PF_X, Off: 0x300000, Vaddr: 0xc2000000, Filesz: 0x5000, Memsz: 0x4000, Align: 0},
	{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0x400000, Vaddr: 0xc3000000, Filesz: 0, Memsz: 0x1000, Align: 0x1000},
	{Type: elf.PT_LOAD, Flags: elf.PF_W, Off: 0x500000, Vaddr: 0xc4000000, Filesz: 0x1000, Memsz: 0x1000, Align: 0x1000},
}

func TestELF32(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		data := elf32(t, progs32, elf.EM_386, bo)
		f, err := ReadELF(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if f.Class != elf.ELFCLASS32 || len(f.Progs) != len(progs32) {
			t.Fatalf("%v: class %v, %d progs", bo, f.Class, len(f.Progs))
		}
		for i := range progs32 {
			if f.Progs[i] != progs32[i] {
				t.Errorf("%v prog %d = %+v, want %+v", bo, i, f.Progs[i], progs32[i])
			}
		}
	}
}

func TestSegments(t *testing.T) {
	data := []index.Segment{seg(0xc0000000, 0x100000, 0x1000), seg(0xc1000000, 0x2000, 0x200000)}
	exe := []index.Segment{seg(0xc0000000, 0x100000, 0x1000), seg(0xc2000000, 0x4000, 0x300000)}
	if got := Segments(progs32, false); !equalSegs(got, data) {
		t.Errorf("Segments(exe=false) = %v, want %v", got, data)
	}
	if got := Segments(progs32, true); !equalSegs(got, exe) {
		t.Errorf("Segments(exe=true) = %v, want %v", got, exe)
	}
	if got := Segments(nil, false); got != nil {
		t.Errorf("Segments(nil) = %v", got)
	}
}

func TestReadELFErrors(t *testing.T) {
	good := writeHeaders(t, k1Segments(), elf.EM_AARCH64, binary.LittleEndian)
	// Every truncation is an error, never a panic.
	for n := range len(good) {
		if _, err := ReadELF(bytes.NewReader(good[:n])); !errors.Is(err, ErrFormat) {
			t.Fatalf("truncated to %d bytes: err = %v", n, err)
		}
	}
	g32 := elf32(t, progs32, elf.EM_386, binary.LittleEndian)
	for n := range len(g32) {
		if _, err := ReadELF(bytes.NewReader(g32[:n])); !errors.Is(err, ErrFormat) {
			t.Fatalf("32-bit truncated to %d bytes: err = %v", n, err)
		}
	}
	patch := func(src []byte, off int, b ...byte) []byte {
		c := bytes.Clone(src)
		copy(c[off:], b)
		return c
	}
	le := binary.LittleEndian
	for _, tt := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"magic", patch(good, 1, 'e'), "magic"},
		{"class", patch(good, elf.EI_CLASS, 3), "class"},
		{"data", patch(good, elf.EI_DATA, 0), "data encoding"},
		{"version", patch(good, elf.EI_VERSION, 2), "version"},
		{"phentsize", patch(good, 54, 40, 0), "e_phentsize"},
		{"phoff past end", patch(good, 32, le.AppendUint64(nil, 1<<40)...), "truncated"},
		{"phoff overflow", patch(good, 32, le.AppendUint64(nil, 1<<63)...), "overflows"},
		{"pn_xnum without sections", patch(good, 56, 0xff, 0xff), "PN_XNUM"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadELF(bytes.NewReader(tt.data))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
	// No program headers at all is not an error.
	f, err := ReadELF(bytes.NewReader(patch(good, 56, 0, 0)))
	if err != nil || len(f.Progs) != 0 {
		t.Fatalf("phnum 0: %v, %v", f, err)
	}
}

func TestPNXNUM(t *testing.T) {
	segs := k1Segments()[:3]
	data := writeHeaders(t, segs, elf.EM_AARCH64, binary.LittleEndian)
	le := binary.LittleEndian
	shoff := uint64(len(data))
	le.PutUint64(data[40:], shoff) // e_shoff
	le.PutUint16(data[56:], 0xffff)
	le.PutUint16(data[58:], 64) // e_shentsize
	le.PutUint16(data[60:], 0)  // e_shnum (in sh_size when large)
	data, _ = binary.Append(data, le, &elf.Section64{Info: uint32(len(segs))})
	f, err := ReadELF(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := Segments(f.Progs, false); !equalSegs(got, segs) {
		t.Fatalf("got %v", got)
	}
	// A huge count in sh_info fails at the end of the file without
	// allocating for it.
	le.PutUint32(data[shoff+44:], 0xffffffff)
	if _, err := ReadELF(bytes.NewReader(data)); !errors.Is(err, ErrFormat) {
		t.Fatalf("huge PN_XNUM count: err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	k1 := k1Segments()
	for _, tt := range []struct {
		name string
		segs []index.Segment
		msg  string // "" for valid
	}{
		{"K1", k1, ""},
		{"none", nil, ""},
		{"disjoint with different deltas", []index.Segment{seg(0x1000, 0x1000, 0), seg(0x2000, 0x1000, 0x9000)}, ""},
		{"nested, same delta", []index.Segment{seg(0x1000, 0x10000, 0x100), seg(0x2000, 0x1000, 0x1100)}, ""},
		{"nested, other delta", []index.Segment{seg(0x1000, 0x10000, 0x100), seg(0x5000, 0x1000, 0x9999), seg(0x20000, 1, 0)},
			"segments 0 [0x1000,0x11000) off 0x100 and 1 [0x5000,0x6000) off 0x9999 overlap"},
		{"partial overlap found across a gap", []index.Segment{seg(0x9000, 0x1000, 0), seg(0x1000, 0x9000, 0x1000)},
			"segments 0 [0x9000,0xa000) off 0x0 and 1 [0x1000,0xa000) off 0x1000 overlap"},
		{"end at 2^64-1", []index.Segment{seg(0xfffffffffffff000, 0xfff, 0)}, ""},
		{"end at 2^64", []index.Segment{seg(0xfffffffffffff000, 0x1000, 0)}, "overflows 2^64"},
		{"empty", []index.Segment{seg(0x1000, 0, 0)}, "empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.segs)
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
	// K1 with the vmalloc segment at another offset breaks the rule.
	bad := k1Segments()
	bad[1].Offset += 0x1000
	if err := Validate(bad); err == nil || !strings.Contains(err.Error(), "segments 0 ") || !strings.Contains(err.Error(), " and 1 ") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	segs := k1Segments()
	elfPath := dir + "/kcore"
	if err := os.WriteFile(elfPath, writeHeaders(t, segs, elf.EM_AARCH64, binary.LittleEndian), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(elfPath)
	if err != nil || !equalSegs(got, segs) {
		t.Fatalf("ELF: %v, %v", got, err)
	}
	got, err = ReadFile("testdata/k1.readelf-lW.txt")
	if err != nil || !equalSegs(got, segs) {
		t.Fatalf("readelf text: %v, %v", got, err)
	}
	bad := dir + "/bad"
	if err := os.WriteFile(bad, []byte("\x7fELF\x02\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v, want it to name %s", err, bad)
	}
}

// readelf runs the system readelf, skipping the test when there is none.
func readelf(t *testing.T, data []byte, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("readelf not installed")
	}
	f := t.TempDir() + "/elf"
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, append(args, f)...).Output()
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && len(out) > 0) {
		// readelf -a exits 1 after complaining about note data the
		// header-only file does not hold; its listing is still complete.
		t.Fatalf("readelf %v: %v", args, err)
	}
	return string(out)
}

func checkProgs(t *testing.T, got, want []elf.ProgHeader) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d program headers, want %d", len(got), len(want))
	}
	for i := range got {
		w := want[i]
		w.Flags &= elf.PF_R | elf.PF_W | elf.PF_X // readelf shows only these
		if _, known := readelfTypes[strings.TrimPrefix(w.Type.String(), "PT_")]; !known {
			w.Type = TypeUnknown
		}
		if got[i] != w {
			t.Errorf("program header %d = %+v, want %+v", i, got[i], w)
		}
	}
}

// TestRealReadelf checks ParseReadelf against the text the installed
// readelf prints for files whose headers ReadELF reads directly.
func TestRealReadelf(t *testing.T) {
	type file struct {
		name string
		data []byte
	}
	files := []file{
		{"arm64 LE", writeHeaders(t, k1Segments(), elf.EM_AARCH64, binary.LittleEndian)},
		{"s390x BE", writeHeaders(t, k1Segments(), elf.EM_S390, binary.BigEndian)},
		{"i386 32-bit LE", elf32(t, progs32, elf.EM_386, binary.LittleEndian)},
		{"ppc 32-bit BE", elf32(t, progs32, elf.EM_PPC, binary.BigEndian)},
		{"one header", writeHeaders(t, k1Segments()[:1], elf.EM_X86_64, binary.LittleEndian)},
	}
	if data, err := os.ReadFile("/bin/ls"); err == nil {
		files = append(files, file{"/bin/ls", data})
	}
	for _, f := range files {
		ef, err := ReadELF(bytes.NewReader(f.data))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, args := range [][]string{{"-l"}, {"-lW"}, {"-a"}, {"-aW"}} {
			t.Run(f.name+" "+strings.Join(args, " "), func(t *testing.T) {
				text := readelf(t, f.data, args...)
				got, err := ParseReadelf(strings.NewReader(text))
				if err != nil {
					t.Fatalf("%v\n%s", err, text)
				}
				checkProgs(t, got, ef.Progs)
			})
		}
	}
}

func TestCommittedReadelfText(t *testing.T) {
	want := k1Segments()
	for _, name := range []string{"k1.readelf-l.txt", "k1.readelf-lW.txt"} {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		progs, err := ParseReadelf(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := Segments(progs, false); !equalSegs(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestParseReadelfErrors(t *testing.T) {
	const head = "Program Headers:\n  Type           Offset   VirtAddr           PhysAddr           FileSiz  MemSiz   Flg Align\n"
	const head2 = "Program Headers:\n  Type           Offset             VirtAddr           PhysAddr\n" +
		"                 FileSiz            MemSiz              Flags  Align\n"
	for _, tt := range []struct {
		name string
		in   string
		msg  string // "" for success
		n    int
	}{
		{"no block", "ELF Header:\n  Magic: 7f 45\n", "no \"Program Headers:\" block", 0},
		{"empty input", "", "no \"Program Headers:\" block", 0},
		{"no program headers", "\nThere are no program headers in this file.\n", "", 0},
		{"one line", head + "  LOAD           0x002000 0xffff000000000000 0x0000000000000000 0x1ac00000 0x1ac00000 RWE 0x1000\n", "", 1},
		{"flags with spaces, align 0", head + "  LOAD           0x002000 0x1000 0x0 0x10 0x10 R E 0\n  LOAD 0x0 0x1 0x0 0x1 0x1     0x8\n", "", 2},
		{"unaligned type column", "Program Headers:\n LOAD 0x0 0x1000 0x0 0x10 0x10 RWE 0x1000\n", "", 1},
		{"two lines without column headers", "Program Headers:\n  LOAD 0x0 0x1000 0x0\n       0x10 0x10 RW 0x1000\n", "", 1},
		{"announced count matches", "There is 1 program header, starting at offset 64\n" + head +
			"  LOAD 0x0 0x1000 0x0 0x10 0x10 RWE 0x1000\n", "", 1},
		{"announced count differs", "There are 2 program headers, starting at offset 64\n" + head +
			"  LOAD 0x0 0x1000 0x0 0x10 0x10 RWE 0x1000\n\n Section to Segment mapping:\n", "found 1 program headers, the text announces 2", 0},
		{"bad number", head + "  LOAD           0x00200g 0x1000 0x0 0x10 0x10 RWE 0x1000\n", "line 3: bad number", 0},
		{"decimal number", head + "  LOAD           12 0x1000 0x0 0x10 0x10 RWE 0x1000\n", "line 3: bad number", 0},
		{"overflow", head + "  LOAD           0x10000000000000000 0x1000 0x0 0x10 0x10 RWE 0x1000\n", "overflows", 0},
		{"bad flags", head + "  LOAD           0x0 0x1000 0x0 0x10 0x10 RWX 0x1000\n", "bad flags", 0},
		{"too many flags", head + "  LOAD           0x0 0x1000 0x0 0x10 0x10 RWE R 0x1000\n", "more than three", 0},
		{"too few fields", head + "  LOAD           0x0 0x1000 0x0 0x10\n", "found 4 fields", 0},
		{"two-line missing second", head2 + "  LOAD           0x0000000000002000 0xffff800080000000 0x0000000000000000\n\n", "without its second line", 0},
		{"two-line at EOF", head2 + "  LOAD           0x0000000000002000 0xffff800080000000 0x0000000000000000\n", "ends inside", 0},
		{"two-line wrong count", head2 + "  LOAD           0x0 0x1 0x0 0x0\n", "want Offset VirtAddr PhysAddr", 0},
		{"long line", "Program Headers:\n  " + strings.Repeat("x", maxLine) + "\n", "longer than", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReadelf(strings.NewReader(tt.in))
			if tt.msg == "" {
				if err != nil || len(got) != tt.n {
					t.Fatalf("got %v, %v; want %d headers", got, err, tt.n)
				}
				return
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
}
