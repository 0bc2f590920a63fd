package corpus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// Section-map sources inside a corpus directory.
const (
	SysModuleDir = "sys/module"   // sys/module/NAME/sections/SEC
	KoDir        = "ko"           // ko/NAME.ko
	KmodsecFile  = "kmodsec.data" // KMOD_SEC_MAP records, back to back
)

// ModuleSections are the maps of one module whose section load addresses
// are known: the module map narrowed to .text, its section maps, and the
// KMOD_SEC_MAP records that carry them.
type ModuleSections struct {
	Module   index.Module
	Ko       string // path of the .ko inside the corpus
	Map      index.Map
	Sections []index.Map
	Records  []kmodsec.Record
}

// ModuleSections builds section maps for every module of the corpus that
// has both sys/module/NAME/sections and ko/NAME.ko (names compared the
// kernel's way: kvm-amd.ko is module kvm_amd). The records' paths are
// pathPrefix + the .ko file name. Modules lacking either are listed in
// skipped with the reason.
func (c *Corpus) ModuleSections(pathPrefix string) (mods []ModuleSections, skipped []string, err error) {
	kos, err := c.koFiles()
	if err != nil {
		return nil, nil, err
	}
	for _, m := range c.Modules {
		ko, ok := kos[m.Name]
		if !ok {
			skipped = append(skipped, m.Name+" (no ko file)")
			continue
		}
		addrs, err := modsec.ReadSysfs(c.FS, path.Join(c.Dir, modsec.SysfsDir(m.Name)))
		if errors.Is(err, fs.ErrNotExist) {
			skipped = append(skipped, m.Name+" (no sysfs sections)")
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("corpus %s: module %s: %w", c.Dir, m.Name, err)
		}
		secs, err := c.readSections(path.Join(c.Dir, KoDir, ko))
		if err != nil {
			return nil, nil, err
		}
		modMap, secMaps, err := modsec.Build(m, addrs, secs, ko)
		if err != nil {
			return nil, nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
		recs, err := modsec.Records(m, addrs, secs, pathPrefix+ko)
		if err != nil {
			return nil, nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
		mods = append(mods, ModuleSections{Module: m, Ko: path.Join(KoDir, ko), Map: modMap, Sections: secMaps, Records: recs})
	}
	return mods, skipped, nil
}

// koFiles maps kernel module names to the .ko file names in ko/.
func (c *Corpus) koFiles() (map[string]string, error) {
	ents, err := fs.ReadDir(c.FS, path.Join(c.Dir, KoDir))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
	}
	kos := make(map[string]string)
	for _, e := range ents { // ReadDir sorts by name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".ko") {
			continue
		}
		name, err := modsec.KernelName(e.Name())
		if err != nil {
			continue
		}
		if prev, ok := kos[name]; ok {
			return nil, fmt.Errorf("corpus %s: %s and %s are both module %s", c.Dir, prev, e.Name(), name)
		}
		kos[name] = e.Name()
	}
	return kos, nil
}

func (c *Corpus) readSections(name string) ([]modsec.Section, error) {
	f, err := regular.OpenFS(c.FS, name)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		b, err := io.ReadAll(io.LimitReader(f, 256<<20))
		if err != nil {
			return nil, fmt.Errorf("corpus: %s: %w", name, err)
		}
		ra = strings.NewReader(string(b))
	}
	secs, err := modsec.ReadELFSections(ra)
	if err != nil {
		return nil, fmt.Errorf("corpus: %s: %w", name, err)
	}
	return secs, nil
}

// KmodsecRecords reads kmodsec.data, if the corpus has one, with record
// type typ.
func (c *Corpus) KmodsecRecords(typ uint32) ([]kmodsec.Record, bool, error) {
	f, err := regular.OpenFS(c.FS, path.Join(c.Dir, KmodsecFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("corpus: %w", err)
	}
	defer f.Close()
	recs, _, err := kmodsec.ReadStream(f, typ)
	if err != nil {
		return nil, false, fmt.Errorf("corpus %s: %s: %w", c.Dir, KmodsecFile, err)
	}
	return recs, true, nil
}

// sectionMaps returns the module maps to narrow and the section maps to
// insert: from sysfs and .ko files when the corpus has them, else from
// kmodsec.data (whose records carry no narrowed module map).
func (c *Corpus) sectionMaps() (narrowed, sections []index.Map, err error) {
	mods, _, err := c.ModuleSections("/")
	if err != nil {
		return nil, nil, err
	}
	if len(mods) > 0 {
		for _, m := range mods {
			narrowed = append(narrowed, m.Map)
			sections = append(sections, m.Sections...)
		}
		return narrowed, sections, nil
	}
	recs, ok, err := c.KmodsecRecords(kmodsec.DefaultType)
	if err != nil || !ok {
		return nil, nil, err
	}
	for _, r := range recs {
		sections = append(sections, r.Map())
	}
	return nil, sections, nil
}
