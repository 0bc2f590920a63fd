package capture

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/internal/testtree"
)

const fakeRelease = "6.1.0-test"

const fakeKallsyms = `ffffffff81000000 T _text
ffffffff81000000 T _stext
ffffffff81001000 T do_work
ffffffff82000000 T _etext
ffffffff82800000 D _edata
ffffffff83000000 B _end
ffffffffc0000000 t my_fn	[my_mod]
ffffffffc0010000 t other_fn	[other]
`

const fakeModules = `my_mod 12288 0 - Live 0xffffffffc0000000
other 4096 0 - Live 0xffffffffc0010000
zz 4096 0 - Live 0xffffffffc0020000
big 4096 0 - Live 0xffffffffc0030000
`

// fakeSections are the sysfs section addresses of my_mod.
var fakeSections = map[string]uint64{
	".text":         0xffffffffc0000000,
	".noinstr.text": 0xffffffffc0000100,
	".exit.text":    0xffffffffc0000200,
	".data":         0xffffffffc0002000,
	".init.text":    0xffffffffc0008000,
	"__mcount_loc":  0xffffffffc0003000,
}

var fakeSegments = []index.Segment{
	{Vaddr: 0xffff888000000000, Size: 0x100000000, Offset: 0x1000},
	{Vaddr: 0xffffffff81000000, Size: 0x2000000, Offset: 0x7fff81001000},
	{Vaddr: 0xffffffffc0000000, Size: 0x3f000000, Offset: 0x7fffc0001000},
}

// fakeRoot builds a machine's kernel files below a temporary directory:
// kallsyms, modules, kcore headers, sysfs sections for four modules, and
// lib/modules with my-mod.ko (twice, one listed in modules.dep), a
// compressed zz.ko.xz, an oversized big.ko and nothing for "other".
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	ko, err := os.ReadFile(filepath.Join("..", "..", "ingest", "modsec", "testdata", "my-mod.ko"))
	if err != nil {
		t.Fatal(err)
	}
	var kc bytes.Buffer
	if err := kcore.WriteHeaders(&kc, fakeSegments, elf.EM_X86_64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	mods := "lib/modules/" + fakeRelease + "/"
	files := map[string]string{
		"proc/sys/kernel/hostname":             "testhost\n",
		"proc/sys/kernel/osrelease":            fakeRelease + "\n",
		"proc/sys/kernel/arch":                 "x86_64\n",
		"proc/kallsyms":                        fakeKallsyms,
		"proc/modules":                         fakeModules,
		"proc/kcore":                           kc.String(),
		"sys/module/other/sections/.text":      "0xffffffffc0010000\n",
		"sys/module/zz/sections/.text":         "0xffffffffc0020000\n",
		"sys/module/big/sections/.text":        "0xffffffffc0030000\n",
		"sys/module/builtin/parameters/debug":  "N\n",
		mods + "kernel/drivers/misc/my-mod.ko": string(ko),
		mods + "updates/my-mod.ko":             string(ko),
		mods + "kernel/zz.ko.xz":               "\xfd7zXZ\x00",
		mods + "modules.dep":                   "kernel/drivers/misc/my-mod.ko:\nkernel/zz.ko.xz:\n",
	}
	for sec, addr := range fakeSections {
		files["sys/module/my_mod/sections/"+sec] = fmt.Sprintf("0x%016x\n", addr)
	}
	testtree.Write(t, root, files)
	// An unreadable section entry: a dangling symbolic link.
	if err := os.Symlink("nowhere", filepath.Join(root, "sys/module/my_mod/sections/.bad")); err != nil {
		t.Fatal(err)
	}
	// A module file over the size limit, sparse.
	big := filepath.Join(root, mods, "extra", "big.ko")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxKo + 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return root
}

func hasNote(notes []string, parts ...string) bool {
	return slices.ContainsFunc(notes, func(n string) bool {
		for _, p := range parts {
			if !strings.Contains(n, p) {
				return false
			}
		}
		return true
	})
}

func TestCaptureFakeTree(t *testing.T) {
	root := fakeRoot(t)
	out := filepath.Join(t.TempDir(), "corpus")
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	rep, err := Run(Options{Root: root, Out: out, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("notes:\n%s", strings.Join(rep.Notes, "\n"))

	// The report.
	if rep.Host != "testhost" || rep.Release != fakeRelease || rep.Arch != "x86_64" {
		t.Errorf("identity %q %q %q", rep.Host, rep.Release, rep.Arch)
	}
	if rep.Symbols != 8 || rep.Modules != 4 || rep.Sections != 4 || rep.KoFiles != 1 || rep.Segments != 3 || rep.Records != 3 {
		t.Errorf("counts: %+v", rep)
	}
	var names []string
	for _, f := range rep.Files {
		names = append(names, f.Name)
		info, err := os.Stat(filepath.Join(out, filepath.FromSlash(f.Name)))
		if err != nil || info.Size() != f.Size {
			t.Errorf("%s: reported %d bytes, on disk %v %v", f.Name, f.Size, info, err)
		}
	}
	for _, want := range []string{corpus.KallsymsFile, corpus.ModulesFile, corpus.KcoreFile, "kmodsec.data", corpus.MetaFile,
		"ko/my-mod.ko", "sys/module/my_mod/sections/.noinstr.text", "sys/module/other/sections/.text"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not written; files %q", want, names)
		}
	}
	if names[len(names)-1] != corpus.MetaFile {
		t.Errorf("last file %s, want %s", names[len(names)-1], corpus.MetaFile)
	}
	for _, not := range []string{"ko/big.ko", "ko/zz.ko", "sys/module/my_mod/sections/.bad"} {
		if slices.Contains(names, not) {
			t.Errorf("%s written", not)
		}
	}
	for _, want := range [][]string{
		{"compressed", "zz"},
		{"big", "limit", "not copied"},
		{"no module file", "other"},
		{"my_mod", "modules.dep", "kernel/drivers/misc/my-mod.ko"},
		{"1 unreadable section entry in 1 module (first: ", ".bad"},
		{"big", "does not list"},
	} {
		if !hasNote(rep.Notes, want...) {
			t.Errorf("no note with %q in\n%s", want, strings.Join(rep.Notes, "\n"))
		}
	}
	if hasNote(rep.Notes, "kcore") || hasNote(rep.Notes, "kallsyms") || hasNote(rep.Notes, "arch") {
		t.Errorf("unexpected notes:\n%s", strings.Join(rep.Notes, "\n"))
	}

	// The files round-trip through Load.
	c, err := corpus.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	wantMods, err := modules.Parse(strings.NewReader(fakeModules))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Segments, fakeSegments) || !slices.Equal(c.Modules, wantMods) || len(c.Symbols) != 8 {
		t.Errorf("loaded segments %v modules %v, %d symbols", c.Segments, c.Modules, len(c.Symbols))
	}
	if c.Meta.Name != "testhost-2024-05-06" || c.Meta.Arch != "x86_64" ||
		c.Meta.Provenance != "kbench capture on testhost, kernel "+fakeRelease+", 2024-05-06T07:08:09Z" ||
		!strings.Contains(c.Meta.Description, "3 KMOD_SEC_MAP records") {
		t.Errorf("meta %+v", c.Meta)
	}
	var digests []string
	for _, impl := range mapset.All {
		ms, err := c.KernelMaps(impl)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, ms.Digest())
	}
	if digests[0] != digests[1] {
		t.Errorf("btree and list kernel maps differ")
	}

	// corpus.json carries the notes.
	raw, err := os.ReadFile(filepath.Join(out, corpus.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Notes []string }
	if err := json.Unmarshal(raw, &meta); err != nil || !slices.Equal(meta.Notes, rep.Notes) {
		t.Errorf("corpus.json notes %q (%v), report %q", meta.Notes, err, rep.Notes)
	}

	// Copies are exact.
	for src, dst := range map[string]string{
		"lib/modules/" + fakeRelease + "/kernel/drivers/misc/my-mod.ko": "ko/my-mod.ko",
		"sys/module/my_mod/sections/.data":                              "sys/module/my_mod/sections/.data",
		"proc/kallsyms":                                                 corpus.KallsymsFile,
		"proc/modules":                                                  corpus.ModulesFile,
	} {
		a, err1 := os.ReadFile(filepath.Join(root, src))
		b, err2 := os.ReadFile(filepath.Join(out, dst))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s -> %s: copy differs (%v, %v)", src, dst, err1, err2)
		}
	}

	// kmodsec.data holds my_mod's records, as modsec builds them.
	f, err := os.Open(filepath.Join(out, "kmodsec.data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, order, err := kmodsec.ReadStream(f, kmodsec.DefaultType)
	if err != nil {
		t.Fatal(err)
	}
	if order.Uint16([]byte{1, 0}) != binary.NativeEndian.Uint16([]byte{1, 0}) {
		t.Errorf("records in %v, want native byte order", order)
	}
	kof, err := os.Open(filepath.Join(out, "ko", "my-mod.ko"))
	if err != nil {
		t.Fatal(err)
	}
	defer kof.Close()
	secs, err := modsec.ReadELFSections(kof)
	if err != nil {
		t.Fatal(err)
	}
	myMod := wantMods[0]
	wantRecs, err := modsec.Records(myMod, fakeSections, secs, "ko/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs, wantRecs) {
		t.Errorf("records\n got %+v\nwant %+v", recs, wantRecs)
	}
	_, secMaps, err := modsec.Build(myMod, fakeSections, secs, "ko/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	var gotMaps []index.Map
	for _, r := range recs {
		gotMaps = append(gotMaps, r.Map())
	}
	if !reflect.DeepEqual(gotMaps, secMaps) || len(secMaps) != 3 {
		t.Errorf("record maps\n got %v\nwant %v", gotMaps, secMaps)
	}
}

func TestCaptureRestricted(t *testing.T) {
	root := t.TempDir()
	testtree.Write(t, root, map[string]string{
		"proc/sys/kernel/osrelease":        fakeRelease + "\n",
		"proc/kallsyms":                    "0000000000000000 T _text\n0000000000000000 T _stext\n",
		"proc/modules":                     "my_mod 12288 0 - Live 0x0000000000000000\n",
		"sys/module/my_mod/sections/.text": "0x0000000000000000\n",
	})
	out := t.TempDir() // exists, empty: accepted
	rep, err := Run(Options{Root: root, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"kallsyms", "kptr_restrict"},
		{"modules", "kptr_restrict"},
		{"kcore", "not captured"},
		{"arch", "GOARCH"},
	} {
		if !hasNote(rep.Notes, want...) {
			t.Errorf("no note with %q in\n%s", want, strings.Join(rep.Notes, "\n"))
		}
	}
	if rep.Meta.Arch == "" || rep.Meta.Name == "" {
		t.Errorf("meta %+v", rep.Meta)
	}
	if _, err := corpus.Load(out); err == nil || !strings.Contains(err.Error(), "kptr_restrict") {
		t.Errorf("Load of a restricted capture: %v", err)
	}
}

func TestCaptureRefuses(t *testing.T) {
	root := t.TempDir()
	full := t.TempDir()
	testtree.Write(t, full, map[string]string{"x": "1"})
	file := filepath.Join(full, "x")
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"non-empty out", Options{Root: root, Out: full}, full},
		{"out is a file", Options{Root: root, Out: file}, file},
		{"no out", Options{Root: root}, "no output directory"},
		{"missing root", Options{Root: filepath.Join(root, "none"), Out: filepath.Join(root, "o")}, "none"},
		{"root is a file", Options{Root: file, Out: filepath.Join(root, "o")}, file},
	} {
		if _, err := Run(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "o")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output created for a bad root: %v", err)
	}
}

// TestCaptureMachine captures the machine the test runs on.
func TestCaptureMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("not linux")
	}
	if _, err := os.Stat("/proc/kallsyms"); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "c")
	rep, err := Run(Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Files, func(f File) bool { return f.Name == corpus.KallsymsFile && f.Size > 0 }) {
		t.Errorf("no kallsyms in %v", rep.Files)
	}
	if rep.Symbols == 0 || rep.Release == "" || rep.Arch == "" {
		t.Errorf("report %+v", rep)
	}
	for _, file := range []string{"kcore", "modules"} {
		if _, err := os.Stat("/proc/" + file); errors.Is(err, fs.ErrNotExist) && !hasNote(rep.Notes, file, "not captured") {
			t.Errorf("/proc/%s is missing and no note says so:\n%s", file, strings.Join(rep.Notes, "\n"))
		}
	}
	if _, err := corpus.Load(out); err != nil && !hasNote(rep.Notes, "Load will refuse") {
		t.Errorf("Load: %v, and no note foresaw it", err)
	}
}
