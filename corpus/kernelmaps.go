package corpus

import (
	"fmt"
	"path"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
)

// KernelInputs are what a corpus's kernel maps are built from, read out
// of its files once (Corpus.KernelInputs), so that building them on each
// implementation (Build) times only the map work.
type KernelInputs struct {
	Dir       string
	Landmarks index.Landmarks
	Modules   []index.Module
	// Narrowed are module maps narrowed to their .text, Sections the
	// section maps (sysfs and .ko files, or kmodsec.data).
	Narrowed, Sections []index.Map
	BPF                []index.Map
	Segments           []index.Segment
	HasKcore           bool
}

// KernelInputs reads the inputs of KernelMaps.
func (c *Corpus) KernelInputs() (*KernelInputs, error) {
	if !c.HasKallsyms {
		return nil, fmt.Errorf("corpus %s: no kallsyms: the kernel map needs _text", c.Dir)
	}
	narrowed, sections, err := c.sectionMaps()
	if err != nil {
		return nil, err
	}
	return &KernelInputs{
		Dir: c.Dir, Landmarks: c.Landmarks, Modules: c.Modules,
		Narrowed: narrowed, Sections: sections, BPF: c.BPF,
		Segments: c.Segments, HasKcore: c.HasKcore,
	}, nil
}

// KernelMaps builds the corpus's final kernel maps on impl (see
// KernelInputs.Build).
func (c *Corpus) KernelMaps(impl mapset.Impl) (mapset.Set, error) {
	in, err := c.KernelInputs()
	if err != nil {
		return nil, err
	}
	return in.Build(impl)
}

// Build builds the final kernel maps on impl, the way perf builds them on
// a live host:
//
//  1. the kernel map and one map per module from kallsyms and modules
//     (index.KernelMaps);
//  2. modules with known section addresses get their map narrowed to
//     .text and one map per section, each inserted with the new map
//     winning;
//  3. each BPF program gets a map unless its address already lies in one
//     (machine__process_ksymbol, with the v6.15 fixup insert);
//  4. with kcore, the kernel maps are rebuilt from its segments
//     (index.LoadKcore): modules go, BPF programs stay.
func (in *KernelInputs) Build(impl mapset.Impl) (mapset.Set, error) {
	ms, err := impl.KernelMaps(in.Landmarks, in.Modules)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", in.Dir, err)
	}
	for _, m := range in.Narrowed {
		if old, ok := ms.Find(m.Start); ok && old.Kind == index.KindModule && old.DSO == m.DSO {
			ms.Remove(old)
		}
		if err := ms.FixupOverlapAndInsert(m); err != nil {
			return nil, fmt.Errorf("corpus %s: module %s: %w", in.Dir, m, err)
		}
	}
	for _, m := range in.Sections {
		if err := ms.FixupOverlapAndInsert(m); err != nil {
			return nil, fmt.Errorf("corpus %s: section %s: %w", in.Dir, m, err)
		}
	}
	for _, b := range in.BPF {
		if _, taken := ms.Find(b.Start); taken {
			continue
		}
		if err := ms.FixupOverlapAndInsert(b); err != nil {
			return nil, fmt.Errorf("corpus %s: BPF %s: %w", in.Dir, b, err)
		}
	}
	if in.HasKcore {
		if _, err := impl.LoadKcore(ms, in.Segments, in.Landmarks); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", in.Dir, err)
		}
	}
	return ms, nil
}

// Kcore returns what perf would read beside the corpus's kallsyms when it
// loads the kernel of a recording (attrib.Options.Kcore), or nil when the
// corpus has no kcore.
func (c *Corpus) Kcore() func() *attrib.Kcore {
	if !c.HasKcore {
		return nil
	}
	return func() *attrib.Kcore {
		k := &attrib.Kcore{Source: path.Join(c.Dir, "kcore"), Segments: c.Segments, Modules: c.Modules}
		if !c.HasModules {
			k.ModulesErr = fmt.Errorf("corpus %s: no modules file", c.Dir)
		}
		return k
	}
}
