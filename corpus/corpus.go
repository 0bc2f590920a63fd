// Package corpus loads kmapindex corpora: directories that hold what a
// host's kernel address space is made of, in the files the kernel itself
// exposes.
//
// Every file is optional:
//
//	kallsyms       /proc/kallsyms: symbols, landmarks and BPF programs
//	modules        /proc/modules
//	kcore          the ELF header and program headers of /proc/kcore
//	kcore.readelf  the same as `readelf -l` or `readelf -lW` prints it
//	corpus.json    name, arch, description, provenance, generator parameters
//
// Load reads a directory on disk and LoadFS one inside any fs.FS, such as
// the embedded default corpus ([Default]). Other corpus files
// (sys/module/..., ko/..., kmodsec.data, perf.data, expected/) are left to
// their own readers, which can open them through Corpus.FS and Corpus.Dir.
//
// Loading refuses input perf could not use: kallsyms or modules whose
// addresses all read 0 (kptr_restrict), and kcore segments that break the
// linear offset rule or overflow 2^64 ([kcore.Validate]). Every error names
// the file.
package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// File names inside a corpus directory.
const (
	KallsymsFile     = "kallsyms"
	ModulesFile      = "modules"
	KcoreFile        = "kcore"
	KcoreReadelfFile = "kcore.readelf"
	MetaFile         = "corpus.json"
)

// Meta is corpus.json. Unknown fields are ignored.
type Meta struct {
	Name        string `json:"name"`
	Arch        string `json:"arch,omitempty"` // as uname -m or GOARCH spells it: arm64, x86_64, ...
	Description string `json:"description,omitempty"`
	// Provenance says where the files come from: a host and kernel, a
	// paper's vectors, a generator run.
	Provenance string `json:"provenance,omitempty"`
	// Generator holds the parameters of the generator that wrote the
	// corpus, in the generator's own format.
	Generator json.RawMessage `json:"generator,omitempty"`
}

// Corpus is a loaded corpus.
type Corpus struct {
	FS  fs.FS  // where the files are
	Dir string // the corpus directory within FS

	Meta    Meta
	HasMeta bool

	Symbols     []kallsyms.Symbol // kallsyms, in file order
	Landmarks   index.Landmarks
	HasKallsyms bool

	Modules    []index.Module // /proc/modules, in file order
	HasModules bool

	// Segments are the readable PT_LOAD segments of kcore or
	// kcore.readelf, in file order. They satisfy kcore.Validate; there may
	// be none (perf then refuses the kcore, and so does index.LoadKcore).
	Segments []index.Segment
	HasKcore bool

	// BPF are the BPF program and image maps derived from kallsyms; see
	// kallsyms.BPFMaps for how their lengths are approximated.
	BPF []index.Map
}

// Load reads the corpus in directory dir.
func Load(dir string) (*Corpus, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	display := dir
	if abs, err := filepath.Abs(dir); err == nil {
		display = abs // errors name the directory, not "."
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("corpus %s: not a directory", display)
	}
	return load(os.DirFS(dir), ".", display)
}

// LoadFS reads the corpus in directory name of fsys.
func LoadFS(fsys fs.FS, name string) (*Corpus, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("corpus %s: invalid path", name)
	}
	return load(fsys, name, name)
}

// load reads the corpus at name in fsys; errors name files below display.
func load(fsys fs.FS, name, display string) (*Corpus, error) {
	c := &Corpus{FS: fsys, Dir: name}
	dpath := func(file string) string { return filepath.Join(display, file) }
	open := func(file string) (fs.File, bool, error) {
		f, err := regular.OpenFS(fsys, path.Join(name, file))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("corpus: %w", err)
		}
		return f, true, nil
	}

	// corpus.json
	if f, ok, err := open(MetaFile); err != nil {
		return nil, err
	} else if ok {
		dec := json.NewDecoder(f)
		err := dec.Decode(&c.Meta)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", dpath(MetaFile), err)
		}
		c.HasMeta = true
	}

	// kallsyms
	if f, ok, err := open(KallsymsFile); err != nil {
		return nil, err
	} else if ok {
		syms, err := kallsyms.ReadAll(f)
		f.Close()
		if err != nil {
			var pe *kallsyms.ParseError
			if errors.As(err, &pe) {
				pe.File = dpath(KallsymsFile)
				return nil, pe
			}
			return nil, fmt.Errorf("corpus %s: %w", dpath(KallsymsFile), err)
		}
		if kallsyms.Restricted(syms) {
			return nil, fmt.Errorf("corpus %s: all %d addresses are 0 (read with kptr_restrict in force?)",
				dpath(KallsymsFile), len(syms))
		}
		c.Symbols, c.HasKallsyms = syms, true
		c.Landmarks = kallsyms.Landmarks(syms)
		c.BPF = kallsyms.BPFMaps(syms)
	}

	// modules
	if f, ok, err := open(ModulesFile); err != nil {
		return nil, err
	} else if ok {
		mods, err := modules.Parse(f)
		f.Close()
		if err != nil {
			var pe *modules.ParseError
			if errors.As(err, &pe) {
				pe.File = dpath(ModulesFile)
				return nil, pe
			}
			return nil, fmt.Errorf("corpus %s: %w", dpath(ModulesFile), err)
		}
		if modules.Restricted(mods) {
			return nil, fmt.Errorf("corpus %s: all %d module addresses are 0 (read with kptr_restrict in force?)",
				dpath(ModulesFile), len(mods))
		}
		c.Modules, c.HasModules = mods, true
	}

	// kcore and kcore.readelf
	var fromELF, fromText []index.Segment
	var haveELF, haveText bool
	if f, ok, err := open(KcoreFile); err != nil {
		return nil, err
	} else if ok {
		haveELF = true
		fromELF, err = readKcoreELF(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", dpath(KcoreFile), err)
		}
		if err := kcore.Validate(fromELF); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", dpath(KcoreFile), err)
		}
	}
	if f, ok, err := open(KcoreReadelfFile); err != nil {
		return nil, err
	} else if ok {
		haveText = true
		progs, err := kcore.ParseReadelf(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", dpath(KcoreReadelfFile), err)
		}
		fromText = kcore.Segments(progs, false)
		if err := kcore.Validate(fromText); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", dpath(KcoreReadelfFile), err)
		}
	}
	switch {
	case haveELF && haveText && !slices.Equal(fromELF, fromText):
		return nil, fmt.Errorf("corpus %s: %s and %s describe different segments", display, KcoreFile, KcoreReadelfFile)
	case haveELF:
		c.Segments, c.HasKcore = fromELF, true
	case haveText:
		c.Segments, c.HasKcore = fromText, true
	}
	return c, nil
}

// maxKcoreCopy bounds how much of a kcore file that cannot be read at
// random offsets is copied into memory.
const maxKcoreCopy = 16 << 20

// readKcoreELF reads the segments of a kcore ELF file opened from an fs.FS.
func readKcoreELF(f fs.File) ([]index.Segment, error) {
	ra, ok := f.(io.ReaderAt)
	if !ok {
		data, err := io.ReadAll(io.LimitReader(f, maxKcoreCopy+1))
		if err != nil {
			return nil, err
		}
		if len(data) > maxKcoreCopy {
			return nil, fmt.Errorf("file larger than %d bytes and not seekable; store only its headers", maxKcoreCopy)
		}
		ra = bytes.NewReader(data)
	}
	kf, err := kcore.ReadELF(ra)
	if err != nil {
		return nil, err
	}
	return kcore.Segments(kf.Progs, false), nil
}
