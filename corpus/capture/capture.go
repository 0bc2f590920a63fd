// Package capture snapshots the running machine's kernel address space
// (kallsyms, modules, module sections, module files, kcore headers) into a
// corpus directory that package corpus loads.
package capture

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/ingest/modules"
)

// MaxKo is the largest module file Run copies into a corpus;
// larger ones are left out with a note, and their modules get no
// KMOD_SEC_MAP records.
const MaxKo = 4 << 20

// Bounds on what Run reads from one source file.
const (
	maxCaptureText  = 1 << 30 // kallsyms, modules
	maxCaptureSysfs = 4096    // one sysfs attribute (a page)
)

// Options says what Run snapshots and where it writes.
type Options struct {
	// Root is the file system root the kernel files are read below: "/"
	// (the default) for the running machine; tests point it at a fake
	// tree holding proc/, sys/ and lib/modules/.
	Root string
	// Out is the corpus directory to write. Run creates it; an
	// existing directory must be empty.
	Out string
	// Now gives the capture time for corpus.json; time.Now by default.
	Now func() time.Time
}

// File is one file Run wrote.
type File struct {
	Name string // slash-separated, relative to the corpus directory
	Size int64  // bytes
}

// Report says what Run wrote and what it could not capture.
type Report struct {
	Out     string      // the corpus directory
	Host    string      // host name
	Release string      // kernel release (uname -r)
	Arch    string      // machine (uname -m)
	Meta    corpus.Meta // what corpus.json holds besides the notes

	// Files lists every file written, in the order written; corpus.json
	// is last.
	Files []File
	// Notes name every piece that is missing or unusable, and why. They
	// are also corpus.json's "notes".
	Notes []string

	Symbols  int // lines of kallsyms
	Modules  int // lines of modules
	Sections int // modules whose sys/module/NAME/sections were copied
	KoFiles  int // module files copied into ko/
	Segments int // readable PT_LOAD segments written to kcore
	Records  int // KMOD_SEC_MAP records written to kmodsec.data
}

// captureMeta is corpus.json as Run writes it: Meta and the notes.
// Load reads it as a Meta and ignores the notes.
type captureMeta struct {
	corpus.Meta
	Notes []string `json:"notes,omitempty"`
}

// Run snapshots the kernel address space of the machine whose files
// lie below opts.Root into the corpus directory opts.Out:
//
//	kallsyms                     ROOT/proc/kallsyms
//	modules                      ROOT/proc/modules
//	sys/module/NAME/sections/S   ROOT/sys/module/NAME/sections/S
//	ko/BASE.ko                   the loaded modules' files, found below
//	                             ROOT/lib/modules/RELEASE/ (uncompressed,
//	                             smaller than MaxKo)
//	kcore                        the ELF header and readable PT_LOAD
//	                             program headers of ROOT/proc/kcore
//	kmodsec.data                 KMOD_SEC_MAP records (kmodsec.DefaultType,
//	                             native byte order, path "ko/BASE.ko") for
//	                             every module with sections and a ko file
//	corpus.json                  Meta plus "notes"
//
// The host name, kernel release and machine come from
// ROOT/proc/sys/kernel/{hostname,osrelease,arch}, falling back to
// os.Hostname and runtime.GOARCH.
//
// A source that is missing, unreadable or unusable (kptr_restrict zeros,
// a compressed module file) is not an error: Run writes what it can
// and records a note. The error result is for what prevents a capture at
// all: a bad Root or Out, or a failure writing Out, in which case Out may
// hold a partial corpus.
func Run(opts Options) (*Report, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	if opts.Out == "" {
		return nil, errors.New("capture: no output directory")
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if info, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("capture: root: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("capture: root %s: not a directory", root)
	}
	if err := prepareCaptureDir(opts.Out); err != nil {
		return nil, err
	}

	c := &capturer{root: root, rep: &Report{Out: opts.Out}}
	c.identify()
	if err := c.kallsyms(); err != nil {
		return nil, err
	}
	mods, err := c.modules()
	if err != nil {
		return nil, err
	}
	if err := c.sections(mods); err != nil {
		return nil, err
	}
	if err := c.koFiles(mods); err != nil {
		return nil, err
	}
	if err := c.kcore(); err != nil {
		return nil, err
	}
	if err := c.kmodsec(mods); err != nil {
		return nil, err
	}
	if err := c.meta(now()); err != nil {
		return nil, err
	}
	return c.rep, nil
}

// prepareCaptureDir creates dir, or checks that it is an empty directory.
func prepareCaptureDir(dir string) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("capture: %s: not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("capture: %s is not empty (%d entries); give a new or empty directory", dir, len(ents))
	}
	return nil
}

// capturer holds the state of one Run.
type capturer struct {
	root string
	rep  *Report
}

// src returns the path of the kernel file rel (slash-separated) below root.
func (c *capturer) src(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

// note records a missing or unusable piece.
func (c *capturer) note(format string, args ...any) {
	c.rep.Notes = append(c.rep.Notes, fmt.Sprintf(format, args...))
}

// write stores data as the corpus file rel (slash-separated).
func (c *capturer) write(rel string, data []byte) error {
	dst := filepath.Join(c.rep.Out, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	c.rep.Files = append(c.rep.Files, File{Name: rel, Size: int64(len(data))})
	return nil
}

// readSource reads the file at name, refusing more than limit bytes.
// Files in /proc and /sys report no useful size, so it reads to EOF.
func readSource(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, nil
}

// readLine returns the first line of a small text file, trimmed.
func readLine(name string) (string, error) {
	data, err := readSource(name, maxCaptureSysfs)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("%s: empty", name)
	}
	return line, nil
}

// identify fills in the host name, kernel release and machine.
func (c *capturer) identify() {
	r := c.rep
	var err error
	if r.Host, err = readLine(c.src("proc/sys/kernel/hostname")); err != nil {
		if r.Host, err = os.Hostname(); err != nil || r.Host == "" {
			r.Host = "unknown"
		}
	}
	if r.Release, err = readLine(c.src("proc/sys/kernel/osrelease")); err != nil {
		r.Release = ""
		c.note("kernel release unknown (%v): module files not searched", err)
	}
	if r.Arch, err = readLine(c.src("proc/sys/kernel/arch")); err != nil {
		r.Arch = unameMachine(runtime.GOARCH)
		c.note("arch %q guessed from GOARCH %s (%v)", r.Arch, runtime.GOARCH, err)
	}
}

// unameMachine returns how uname -m usually spells the machine of a
// GOARCH (its 64-bit or little-endian flavour where uname has one).
func unameMachine(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "386":
		return "i686"
	case "arm64":
		return "aarch64"
	case "arm":
		return "armv7l"
	case "loong64":
		return "loongarch64"
	case "mips64le":
		return "mips64"
	case "mipsle":
		return "mips"
	}
	return goarch // ppc64, ppc64le, riscv64, s390x, mips, mips64 match
}

// kallsyms copies proc/kallsyms and notes whether a corpus can use it.
func (c *capturer) kallsyms() error {
	name := c.src("proc/kallsyms")
	data, err := readSource(name, maxCaptureText)
	if err != nil {
		c.note("kallsyms: not captured: %v", err)
		return nil
	}
	if err := c.write(corpus.KallsymsFile, data); err != nil {
		return err
	}
	syms, err := kallsyms.ReadAll(bytes.NewReader(data))
	switch {
	case err != nil:
		c.note("kallsyms: %s does not parse, and Load will refuse the corpus: %v", name, err)
	case len(syms) == 0:
		c.note("kallsyms: %s is empty", name)
	case kallsyms.Restricted(syms):
		c.note("kallsyms: all %d addresses in %s are 0 (kptr_restrict in force; capture as root or with kernel.kptr_restrict=0); Load will refuse the corpus",
			len(syms), name)
	}
	c.rep.Symbols = len(syms)
	return nil
}

// modules copies proc/modules and returns the modules it lists (nil when
// there is no usable file).
func (c *capturer) modules() ([]index.Module, error) {
	name := c.src("proc/modules")
	data, err := readSource(name, maxCaptureText)
	if err != nil {
		c.note("modules: not captured: %v", err)
		return nil, nil
	}
	if err := c.write(corpus.ModulesFile, data); err != nil {
		return nil, err
	}
	mods, err := modules.Parse(bytes.NewReader(data))
	if err != nil {
		c.note("modules: %s does not parse, and Load will refuse the corpus: %v", name, err)
		return nil, nil
	}
	c.rep.Modules = len(mods)
	if modules.Restricted(mods) {
		c.note("modules: all %d module addresses in %s are 0 (kptr_restrict in force); Load will refuse the corpus, and no section records are made",
			len(mods), name)
		return nil, nil
	}
	return mods, nil
}

// sections copies every readable file of sys/module/*/sections.
func (c *capturer) sections(mods []index.Module) error {
	dir := c.src(corpus.SysModuleDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if len(mods) > 0 || !errors.Is(err, fs.ErrNotExist) {
			c.note("sys/module: no section addresses captured: %v", err)
		}
		return nil
	}
	copied := make(map[string]bool)
	var unreadable, unreadableMods int
	var firstErr error
	for _, e := range ents {
		mod := e.Name()
		secDir := filepath.Join(dir, mod, "sections")
		secs, err := os.ReadDir(secDir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // built-in modules have no sections
		}
		if err != nil {
			unreadable++
			unreadableMods++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		bad := false
		for _, s := range secs {
			if s.IsDir() {
				continue
			}
			data, err := readSource(filepath.Join(secDir, s.Name()), maxCaptureSysfs)
			if err != nil {
				unreadable++
				bad = true
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			if err := c.write(path.Join(corpus.SysModuleDir, mod, "sections", s.Name()), data); err != nil {
				return err
			}
			copied[mod] = true
		}
		if bad {
			unreadableMods++
		}
	}
	if unreadable > 0 {
		c.note("sys/module: skipped %s in %s (first: %v)",
			plural(unreadable, "unreadable section entry"), plural(unreadableMods, "module"), firstErr)
	}
	var missing []string
	for _, m := range mods {
		if !copied[m.Name] {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		c.note("sys/module: no section addresses for %s", nameList(missing))
	}
	c.rep.Sections = len(copied)
	return nil
}

// nameList formats a list of module names for a note, eliding after ten.
func nameList(names []string) string {
	const show = 10
	s := plural(len(names), "module") + ": " + strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		s += fmt.Sprintf(", ... (%d more)", len(names)-show)
	}
	return s
}

// plural returns "1 module", "2 modules", "2 entries" and so on.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// compressedKo lists the compressed module file suffixes Run knows of
// and does not read.
var compressedKo = []string{".ko.xz", ".ko.zst", ".ko.gz"}

// koFiles copies the module file of every module in mods to
// ko/BASE.ko.
func (c *capturer) koFiles(mods []index.Module) error {
	if len(mods) == 0 {
		return nil
	}
	if c.rep.Release == "" {
		c.note("ko: no module files captured: kernel release unknown")
		return nil
	}
	base := c.src(path.Join("lib/modules", c.rep.Release))
	plain, compressed, walkErrs, err := findKo(base)
	if err != nil {
		c.note("ko: no module files captured: %v", err)
		return nil
	}
	if len(walkErrs) > 0 {
		c.note("ko: skipped %s below %s (first: %v)", plural(len(walkErrs), "unreadable entry"), base, walkErrs[0])
	}
	dep := readModulesDep(filepath.Join(base, "modules.dep"))
	var missing, packed []string
	for _, m := range mods {
		cands := plain[m.Name]
		if len(cands) == 0 {
			if len(compressed[m.Name]) > 0 {
				packed = append(packed, m.Name)
			} else {
				missing = append(missing, m.Name)
			}
			continue
		}
		rel := cands[0]
		if len(cands) == 1 && len(dep) > 0 && !dep[rel] {
			c.note("ko: module %s: took %s, which %s does not list (stale?)", m.Name, rel, filepath.Join(base, "modules.dep"))
		}
		if len(cands) > 1 {
			chosen := false
			for _, cand := range cands {
				if dep[cand] {
					rel, chosen = cand, true
					break
				}
			}
			how := "the first by name"
			if chosen {
				how = "the one in modules.dep"
			}
			c.note("ko: module %s has %d files below %s (%s); took %s, %s", m.Name, len(cands), base, strings.Join(cands, ", "), rel, how)
		}
		name := filepath.Join(base, filepath.FromSlash(rel))
		info, err := os.Stat(name)
		if err != nil {
			c.note("ko: module %s: %v", m.Name, err)
			continue
		}
		if info.Size() > MaxKo {
			c.note("ko: module %s: %s is %d bytes, more than the %d-byte limit: not copied, and no section records made",
				m.Name, name, info.Size(), MaxKo)
			continue
		}
		data, err := readSource(name, MaxKo)
		if err != nil {
			c.note("ko: module %s: %v", m.Name, err)
			continue
		}
		dst := path.Join(corpus.KoDir, path.Base(rel))
		if err := c.write(dst, data); err != nil {
			return err
		}
		c.rep.KoFiles++
	}
	if len(packed) > 0 {
		c.note("ko: compressed module files (%s) are not supported; not copied for %s",
			strings.Join(compressedKo, ", "), nameList(packed))
	}
	if len(missing) > 0 {
		c.note("ko: no module file below %s for %s", base, nameList(missing))
	}
	return nil
}

// findKo walks dir for module files and returns, by kernel name, the
// slash-separated paths below dir of the plain .ko files and of the
// compressed ones, each sorted; errors on entries below dir are returned,
// not fatal. Symbolic links (build, source) are not followed.
func findKo(dir string) (plain, compressed map[string][]string, walkErrs []error, err error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, nil, err
	}
	plain = make(map[string][]string)
	compressed = make(map[string][]string)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			walkErrs = append(walkErrs, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		b := d.Name()
		if strings.HasSuffix(b, ".ko") {
			if n, err := modsec.KernelName(b); err == nil {
				plain[n] = append(plain[n], rel)
			}
			return nil
		}
		for _, suf := range compressedKo {
			if stem, ok := strings.CutSuffix(b, suf); ok {
				if n, err := modsec.KernelName(stem + ".ko"); err == nil {
					compressed[n] = append(compressed[n], rel)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, m := range []map[string][]string{plain, compressed} {
		for _, v := range m {
			slices.Sort(v)
		}
	}
	return plain, compressed, walkErrs, nil
}

// readModulesDep returns the module paths modules.dep lists (the part of
// each line before the colon). A missing or unreadable file gives an
// empty set.
func readModulesDep(name string) map[string]bool {
	dep := make(map[string]bool)
	f, err := os.Open(name)
	if err != nil {
		return dep
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if p, _, ok := strings.Cut(sc.Text(), ":"); ok {
			dep[p] = true
		}
	}
	return dep
}

// kcore writes the ELF header and readable PT_LOAD program headers of
// proc/kcore.
func (c *capturer) kcore() error {
	name := c.src("proc/kcore")
	f, err := os.Open(name)
	if err != nil {
		c.note("kcore: not captured: %v", err)
		return nil
	}
	defer f.Close()
	kf, err := kcore.ReadELF(f)
	if err != nil {
		c.note("kcore: not captured: %s: %v", name, err)
		return nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if kf.Data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	segs := kcore.Segments(kf.Progs, false)
	var buf bytes.Buffer
	if err := kcore.WriteHeaders(&buf, segs, kf.Machine, order); err != nil {
		c.note("kcore: not captured: %s: %v", name, err)
		return nil
	}
	if err := c.write(corpus.KcoreFile, buf.Bytes()); err != nil {
		return err
	}
	c.rep.Segments = len(segs)
	if len(segs) == 0 {
		c.note("kcore: %s has no readable PT_LOAD segment", name)
	} else if err := kcore.Validate(segs); err != nil {
		c.note("kcore: %s: %v; Load will refuse the corpus", name, err)
	}
	return nil
}

// kmodsec writes the KMOD_SEC_MAP records of every module in mods with
// copied section addresses and a copied module file, read back from the
// corpus being written (Corpus.ModuleSections).
func (c *capturer) kmodsec(mods []index.Module) error {
	written := &corpus.Corpus{FS: os.DirFS(c.rep.Out), Dir: ".", Modules: mods, HasModules: true}
	ms, _, err := written.ModuleSections(corpus.KoDir + "/")
	if err != nil {
		c.note("kmodsec: no KMOD_SEC_MAP records: %v", err)
		return nil
	}
	var recs []kmodsec.Record
	for _, m := range ms {
		recs = append(recs, m.Records...)
	}
	if len(recs) == 0 {
		if len(mods) > 0 {
			c.note("kmodsec: no KMOD_SEC_MAP records: no module has both non-zero section addresses and a module file")
		}
		return nil
	}
	var buf bytes.Buffer
	if err := kmodsec.WriteStream(&buf, recs, binary.NativeEndian, kmodsec.DefaultType); err != nil {
		return fmt.Errorf("capture: %s: %w", corpus.KmodsecFile, err)
	}
	if err := c.write(corpus.KmodsecFile, buf.Bytes()); err != nil {
		return err
	}
	c.rep.Records = len(recs)
	return nil
}

// meta writes corpus.json.
func (c *capturer) meta(at time.Time) error {
	r := c.rep
	at = at.UTC()
	release := r.Release
	if release == "" {
		release = "unknown"
	}
	var parts []string
	if r.Symbols > 0 {
		parts = append(parts, fmt.Sprintf("kallsyms (%d symbols)", r.Symbols))
	}
	if r.Modules > 0 {
		parts = append(parts, fmt.Sprintf("%d modules", r.Modules))
	}
	if r.Sections > 0 {
		parts = append(parts, fmt.Sprintf("section addresses of %d modules", r.Sections))
	}
	if r.KoFiles > 0 {
		parts = append(parts, fmt.Sprintf("%d module files", r.KoFiles))
	}
	if r.Segments > 0 {
		parts = append(parts, fmt.Sprintf("kcore headers (%d segments)", r.Segments))
	}
	if r.Records > 0 {
		parts = append(parts, fmt.Sprintf("%d KMOD_SEC_MAP records", r.Records))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing usable")
	}
	r.Meta = corpus.Meta{
		Name:        r.Host + "-" + at.Format("2006-01-02"),
		Arch:        r.Arch,
		Description: fmt.Sprintf("The kernel address space of %s (%s, %s): %s.", r.Host, release, r.Arch, strings.Join(parts, ", ")),
		Provenance:  fmt.Sprintf("kbench capture on %s, kernel %s, %s", r.Host, release, at.Format(time.RFC3339)),
	}
	data, err := json.MarshalIndent(captureMeta{Meta: r.Meta, Notes: r.Notes}, "", "  ")
	if err != nil {
		return fmt.Errorf("capture: %s: %w", corpus.MetaFile, err)
	}
	return c.write(corpus.MetaFile, append(data, '\n'))
}
