package modsec

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// Load addresses of the test module, laid out as the kernel would: .text
// at the module base, the other core sections after it, .init.text in a
// separate (freed) allocation.
const (
	modBase   = 0xffffffffc0a00000
	noinstrAt = 0xffffffffc0a00020
	exitAt    = 0xffffffffc0a00050
	dataAt    = 0xffffffffc0a02000
	initAt    = 0xffffffffc0a10000
)

func testModule() index.Module {
	return index.Module{Name: "my_mod", Start: modBase, Size: 0x3000}
}

func testSysfs() fstest.MapFS {
	dir := SysfsDir("my-mod") + "/"
	file := func(a uint64) *fstest.MapFile {
		return &fstest.MapFile{Data: fmt.Appendf(nil, "0x%016x\n", a)}
	}
	return fstest.MapFS{
		dir + ".text":                    file(modBase),
		dir + ".noinstr.text":            file(noinstrAt),
		dir + ".exit.text":               file(exitAt),
		dir + ".data":                    file(dataAt),
		dir + ".init.text":               file(initAt),
		dir + ".note.gnu.build-id":       file(0xffffffffc0a01000), // not in the .ko: ignored
		"sys/module/my_mod/refcnt":       &fstest.MapFile{Data: []byte("0\n")},
		"sys/module/other/sections/.bss": file(1),
	}
}

// objects returns the module objects to test: the committed one, and one
// built now with gcc when it is installed.
func objects(t *testing.T) []string {
	objs := []string{filepath.Join("testdata", "my-mod.ko")}
	if _, err := testbuild.Tool("gcc"); err != nil {
		t.Log("gcc not found; testing the committed object only")
		return objs
	}
	out := filepath.Join(t.TempDir(), "my-mod.ko")
	if err := testbuild.Compile(t, "gcc", "-c", "-O1", "-fno-asynchronous-unwind-tables", "-fno-ident", "-o", out, filepath.Join("testdata", "mod.c")); err != nil {
		t.Fatal(err)
	}
	return append(objs, out)
}

// symbol returns the named symbol of the ELF file and its section header,
// read independently of the package under test.
func symbol(t *testing.T, f *elf.File, name string) (elf.Symbol, *elf.Section) {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s, f.Sections[s.Section]
		}
	}
	t.Fatalf("no symbol %s", name)
	return elf.Symbol{}, nil
}

// objdumpBytes returns the bytes of function fn as objdump -d prints them,
// or nil when objdump is not installed.
func objdumpBytes(t *testing.T, ko, section, fn string) []byte {
	t.Helper()
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		return nil
	}
	out, err := exec.Command(objdump, "-d", "--insn-width=16", "-j", section, ko).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var code []byte
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasSuffix(line, "<"+fn+">:"):
			in = true
		case in && strings.TrimSpace(line) == "":
			return code
		case in:
			// "   5:\t85 ff                \ttest   %edi,%edi"
			f := strings.Split(line, "\t")
			if len(f) < 2 {
				continue
			}
			for _, h := range strings.Fields(f[1]) {
				b, err := hex.DecodeString(h)
				if err != nil {
					t.Fatalf("objdump line %q: %v", line, err)
				}
				code = append(code, b...)
			}
		}
	}
	if !in {
		t.Fatalf("objdump: no function %s", fn)
	}
	return code
}

func readAt(t *testing.T, path string, off uint64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
	return b
}

func find(t *testing.T, maps []index.Map, a uint64) (index.Map, bool) {
	t.Helper()
	var found []index.Map
	for _, m := range maps {
		if m.Contains(a) {
			found = append(found, m)
		}
	}
	if len(found) > 1 {
		t.Fatalf("overlapping maps at %#x: %v", a, found)
	}
	if len(found) == 0 {
		return index.Map{}, false
	}
	return found[0], true
}

func buildFrom(t *testing.T, ko string) (index.Map, []index.Map, []Section) {
	t.Helper()
	f, err := os.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	secs, err := ReadELFSections(f)
	if err != nil {
		t.Fatal(err)
	}
	sysfs, err := ReadSysfs(testSysfs(), SysfsDir("my_mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, maps, err := Build(testModule(), sysfs, secs, ko)
	if err != nil {
		t.Fatal(err)
	}
	return mod, maps, secs
}

// TestObjectCode is the object-code check: an address inside a function
// resolves to the map its section belongs to, and MapIP gives the file
// offset where the function's bytes are.
func TestObjectCode(t *testing.T) {
	for _, ko := range objects(t) {
		t.Run(filepath.Base(filepath.Dir(ko)), func(t *testing.T) {
			mod, secMaps, _ := buildFrom(t, ko)
			all := append([]index.Map{mod}, secMaps...)
			ef, err := elf.Open(ko)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			tests := []struct {
				sym, section, dso string
				base              uint64 // sysfs address of the section
				code              bool
			}{
				{"noinstr_fn", ".noinstr.text", "[my-mod].noinstr.text", noinstrAt, true},
				{"noinstr_first", ".noinstr.text", "[my-mod].noinstr.text", noinstrAt, true},
				{"text_fn", ".text", "[my_mod]", modBase, true},
				{"exit_fn", ".exit.text", "[my-mod].exit.text", exitAt, true},
				{"first", ".data", "[my-mod].data", dataAt, false},
			}
			for _, tt := range tests {
				sym, sec := symbol(t, ef, tt.sym)
				if sec.Name != tt.section {
					t.Fatalf("%s is in %s, want %s", tt.sym, sec.Name, tt.section)
				}
				if sym.Size < 2 {
					t.Fatalf("%s has size %d", tt.sym, sym.Size)
				}
				// An address in the middle of the symbol.
				delta := sym.Size / 2
				addr := tt.base + sym.Value + delta
				m, ok := find(t, all, addr)
				if !ok {
					t.Errorf("%s: no map at %#x", tt.sym, addr)
					continue
				}
				if m.DSO != tt.dso {
					t.Errorf("%s: map %v, want dso %s", tt.sym, m, tt.dso)
				}
				wantOff := sec.Offset + sym.Value + delta
				if got := m.MapIP(addr); got != wantOff {
					t.Errorf("%s: MapIP(%#x) = %#x, want file offset %#x", tt.sym, addr, got, wantOff)
					continue
				}
				// The bytes at MapIP are the symbol's bytes.
				fileBytes := readAt(t, ko, m.MapIP(addr), int(sym.Size-delta))
				data, err := sec.Data()
				if err != nil {
					t.Fatal(err)
				}
				if want := data[sym.Value+delta : sym.Value+sym.Size]; !bytes.Equal(fileBytes, want) {
					t.Errorf("%s: bytes at MapIP % x, section data % x", tt.sym, fileBytes, want)
				}
				if tt.code {
					if dump := objdumpBytes(t, ko, tt.section, tt.sym); dump != nil && !bytes.Equal(fileBytes, dump[delta:]) {
						t.Errorf("%s: bytes at MapIP % x, objdump % x", tt.sym, fileBytes, dump[delta:])
					}
				}
				// The start of the symbol maps back (UnmapIP) to its address.
				if got := m.UnmapIP(sec.Offset + sym.Value); got != tt.base+sym.Value {
					t.Errorf("%s: UnmapIP = %#x", tt.sym, got)
				}
			}
			// .init.text is freed after init: no map covers it.
			sym, _ := symbol(t, ef, "init_fn")
			if m, ok := find(t, all, initAt+sym.Value); ok {
				t.Errorf("init_fn resolves to %v", m)
			}
			// The data value really is there.
			sym, sec := symbol(t, ef, "first")
			m, _ := find(t, all, dataAt+sym.Value)
			if v := binary.LittleEndian.Uint32(readAt(t, ko, m.MapIP(dataAt+sym.Value), 4)); v != 7 || sec.Name != ".data" {
				t.Errorf("first = %d in %s", v, sec.Name)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	ko := filepath.Join("testdata", "my-mod.ko")
	mod, maps, secs := buildFrom(t, ko)
	sec := func(name string) Section {
		for _, s := range secs {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no section %s", name)
		return Section{}
	}
	text, noinstr, data, exit := sec(".text"), sec(".noinstr.text"), sec(".data"), sec(".exit.text")
	wantMod := index.Map{Start: modBase, End: modBase + text.Size, Pgoff: text.Offset,
		Mapping: index.MappingDSO, Kind: index.KindModule, DSO: "[my_mod]"}
	if mod != wantMod {
		t.Errorf("module map %v, want %v", mod, wantMod)
	}
	sm := func(addr uint64, s Section) index.Map {
		return index.Map{Start: addr, End: addr + s.Size, Pgoff: s.Offset,
			Mapping: index.MappingDSO, Kind: index.KindModuleSection, DSO: "[my-mod]" + s.Name}
	}
	// File order: .data, (.bss is empty), .noinstr.text, (.init.text), .exit.text.
	want := []index.Map{sm(dataAt, data), sm(noinstrAt, noinstr), sm(exitAt, exit)}
	if !reflect.DeepEqual(maps, want) {
		t.Errorf("section maps:\n%s\nwant:\n%s", index.Canonical(maps), index.Canonical(want))
	}
	for _, m := range append(maps, mod) {
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
	}

	// Records describe the same maps and survive encoding.
	recs, err := Records(testModule(), mustSysfs(t), secs, "/lib/modules/6.2.0/extra/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(maps) {
		t.Fatalf("%d records, %d maps", len(recs), len(maps))
	}
	for i, r := range recs {
		if r.Map() != maps[i] {
			t.Errorf("record %d map %v, want %v", i, r.Map(), maps[i])
		}
		if r.Pid != -1 || r.Misc != kmodsec.MiscKernel {
			t.Errorf("record %d: pid %d misc %d", i, r.Pid, r.Misc)
		}
		got, err := kmodsec.Decode(kmodsec.Encode(r, binary.BigEndian, 90, 0), binary.BigEndian, 0)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("record %d round trip: %+v, %v", i, got, err)
		}
	}
}

func mustSysfs(t *testing.T) map[string]uint64 {
	t.Helper()
	m, err := ReadSysfs(testSysfs(), SysfsDir("my_mod"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuildErrors(t *testing.T) {
	secs := []Section{{Name: ".text", Size: 0x10, Offset: 0x40, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR}}
	tests := []struct {
		name  string
		mod   index.Module
		sysfs map[string]uint64
		secs  []Section
		ko    string
		msg   string
	}{
		{"name mismatch", testModule(), nil, secs, "/m/other.ko", `is module "other", not "my_mod"`},
		{"not a .ko", testModule(), nil, secs, "/m/my-mod.o", "not a module file name"},
		{"empty text", index.Module{Name: "my_mod", Start: 1}, nil, nil, "/m/my-mod.ko", "empty range"},
		{"section wraps", testModule(), map[string]uint64{".data": ^uint64(0)},
			[]Section{{Name: ".data", Size: 2, Flags: elf.SHF_ALLOC}}, "/m/my-mod.ko", "wraps around"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Build(tt.mod, tt.sysfs, tt.secs, tt.ko)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want one containing %q", err, tt.msg)
			}
		})
	}
	// Build accepts a bare file name; Records needs the RFC's '/'.
	if _, _, err := Build(testModule(), nil, secs, "my-mod.ko"); err != nil {
		t.Errorf("Build with a bare name: %v", err)
	}
	if _, err := Records(testModule(), nil, secs, "my-mod.ko"); err == nil || !strings.Contains(err.Error(), "no '/'") {
		t.Errorf("Records with a bare name: %v", err)
	}
}

func TestSelect(t *testing.T) {
	const (
		A  = elf.SHF_ALLOC
		AX = elf.SHF_ALLOC | elf.SHF_EXECINSTR
		WA = elf.SHF_ALLOC | elf.SHF_WRITE
	)
	secs := []Section{
		{Name: ""},
		{Name: ".text", Size: 0x100, Offset: 0x40, Flags: AX},
		{Name: ".rela.text", Size: 0x30, Offset: 0x800, Flags: elf.SHF_INFO_LINK},
		{Name: ".text.unlikely", Size: 0x20, Offset: 0x140, Flags: AX},
		{Name: ".init.text", Size: 0x20, Offset: 0x160, Flags: AX},
		{Name: ".init.data", Size: 0x8, Offset: 0x180, Flags: WA},
		{Name: ".init_array", Size: 0x8, Offset: 0x188, Flags: WA},
		{Name: ".exit.text", Size: 0x10, Offset: 0x190, Flags: AX},
		{Name: ".exit.data", Size: 0x8, Offset: 0x1a0, Flags: WA},
		{Name: ".rodata", Size: 0x30, Offset: 0x1a8, Flags: A},
		{Name: ".rodata", Size: 0x99, Offset: 0x9999, Flags: A}, // duplicate: first wins
		{Name: ".data", Size: 0, Offset: 0x1d8, Flags: WA},      // empty
		{Name: ".bss", Size: 0x40, Offset: 0x1d8, Flags: WA, Type: elf.SHT_NOBITS},
		{Name: "__mcount_loc", Size: 0x18, Offset: 0x1d8, Flags: A},
		{Name: ".comment", Size: 0x10, Offset: 0x1f0, Flags: elf.SHF_MERGE | elf.SHF_STRINGS},
		{Name: ".gnu.linkonce.this_module", Size: 0x380, Offset: 0x200, Flags: WA},
	}
	sysfs := map[string]uint64{
		".text": 0xc000, ".text.unlikely": 0xc100, ".init.text": 0xf000, ".init.data": 0xf100,
		".init_array": 0xf200, ".exit.text": 0xc120, ".rodata": 0xd000, ".data": 0xe000,
		".bss": 0xe100, "__mcount_loc": 0, // restricted: 0 is no address
		".comment": 0xe200, // not ALLOC
		// .exit.data and .gnu.linkonce.this_module: no sysfs entry
	}
	placed, text := Select(sysfs, secs)
	var got []string
	for _, p := range placed {
		got = append(got, fmt.Sprintf("%s@%#x+%#x@%#x", p.Name, p.Addr, p.Size, p.Offset))
	}
	want := []string{
		".text.unlikely@0xc100+0x20@0x140",
		".exit.text@0xc120+0x10@0x190",
		".rodata@0xd000+0x30@0x1a8",
		".bss@0xe100+0x40@0x1d8",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Select:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if text == nil || text.Offset != 0x40 {
		t.Errorf("text = %+v", text)
	}
}

func TestReadSysfs(t *testing.T) {
	got, err := ReadSysfs(testSysfs(), "sys/module/my_mod/sections")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{".text": modBase, ".noinstr.text": noinstrAt, ".exit.text": exitAt,
		".data": dataAt, ".init.text": initAt, ".note.gnu.build-id": 0xffffffffc0a01000}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadSysfs = %v", got)
	}

	dir := "sys/module/m/sections/"
	tests := []struct {
		name string
		fs   fstest.MapFS
		msg  string
		want map[string]uint64
	}{
		{"restricted", fstest.MapFS{dir + ".text": {Data: []byte("0x0000000000000000\n")}}, "", map[string]uint64{".text": 0}},
		{"no newline", fstest.MapFS{dir + ".text": {Data: []byte("0xffffffffc0000000")}}, "", map[string]uint64{".text": 0xffffffffc0000000}},
		{"subdir ignored", fstest.MapFS{dir + ".text": {Data: []byte("0x10\n")}, dir + "sub/x": {Data: []byte("junk")}}, "", map[string]uint64{".text": 0x10}},
		{"missing dir", fstest.MapFS{}, "reading section addresses", nil},
		{"no 0x", fstest.MapFS{dir + ".text": {Data: []byte("ffffffffc0000000\n")}}, `.text: "ffffffffc0000000" is not a 0x-prefixed address`, nil},
		{"bad hex", fstest.MapFS{dir + ".data": {Data: []byte("0xzz\n")}}, "sys/module/m/sections/.data: bad address", nil},
		{"overflow", fstest.MapFS{dir + ".data": {Data: []byte("0x1ffffffffffffffff\n")}}, "bad address", nil},
		{"huge", fstest.MapFS{dir + ".data": {Data: bytes.Repeat([]byte("0"), 1<<20)}}, "more than 256 bytes", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSysfs(tt.fs, "sys/module/m/sections")
			if tt.msg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("error %v, want one containing %q", err, tt.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReadSysfs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestReadSysfsRealDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, SysfsDir("kvm-amd"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".noinstr.text"), []byte("0xffffffffc0e5a000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSysfs(os.DirFS(root), "sys/module/kvm_amd/sections")
	if err != nil || got[".noinstr.text"] != 0xffffffffc0e5a000 {
		t.Errorf("ReadSysfs = %v, %v", got, err)
	}
}

func TestReadELFSections(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "my-mod.ko"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	secs, err := ReadELFSections(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range secs {
		names = append(names, s.Name)
	}
	for _, want := range []string{".text", ".data", ".noinstr.text", ".init.text", ".exit.text", ".symtab"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no section %s in %v", want, names)
		}
	}

	// Not ET_REL: the test binary itself.
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	ef, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if _, err := ReadELFSections(ef); err == nil || !strings.Contains(err.Error(), "want ET_REL") || !strings.Contains(err.Error(), "offset 0x10") ||
		!(strings.Contains(err.Error(), "ET_EXEC") || strings.Contains(err.Error(), "ET_DYN")) {
		t.Errorf("executable: error %v", err)
	}
	// Not ELF at all.
	if _, err := ReadELFSections(bytes.NewReader([]byte("not an ELF file at all"))); err == nil || !strings.Contains(err.Error(), "reading module ELF") || !strings.Contains(err.Error(), "byte 0") {
		t.Errorf("garbage: error %v", err)
	}
}

func TestKernelName(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"kvm-amd.ko", "kvm_amd", ""},
		{"/lib/modules/6.2/kernel/arch/x86/kvm/kvm-amd.ko", "kvm_amd", ""},
		{"nf_tables.ko.zst", "nf_tables", ""},
		{"a-b-c.ko.xz", "a_b_c", ""},
		{"vmlinux", "", "not a module file name"},
		{".ko", "", "not a module file name"},
	}
	for _, tt := range tests {
		got, err := KernelName(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("KernelName(%q) error %v", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("KernelName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got := SysfsDir("kvm-amd"); got != "sys/module/kvm_amd/sections" {
		t.Errorf("SysfsDir = %q", got)
	}
}
