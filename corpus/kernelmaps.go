package corpus

import (
	"fmt"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// MapSet is what both map implementations offer the corpus builder.
type MapSet interface {
	Find(uint64) (index.Map, bool)
	FixupOverlapAndInsert(index.Map) error
	RemoveFunc(func(index.Map) bool) int
	Slice() []index.Map
	Len() int
	Canonical() string
	Digest() string
}

// Impl names a map implementation: the B-tree or the list reference.
type Impl string

const (
	BTree Impl = "btree"
	List  Impl = "list"
)

// Impls lists both implementations, B-tree first.
var Impls = []Impl{BTree, List}

// KernelMaps builds the corpus's final kernel maps on impl, the way perf
// builds them on a live host:
//
//  1. the kernel map and one map per module from kallsyms and modules
//     (index.KernelMaps);
//  2. modules with known section addresses (sysfs and .ko, or
//     kmodsec.data records) get their map narrowed to .text and one map
//     per section, each inserted with the new map winning;
//  3. each BPF program gets a map unless its address already lies in one
//     (machine__process_ksymbol, with the v6.15 fixup insert);
//  4. with kcore, the kernel maps are rebuilt from its segments
//     (index.LoadKcore): modules go, BPF programs stay.
func (c *Corpus) KernelMaps(impl Impl) (MapSet, error) {
	if !c.HasKallsyms {
		return nil, fmt.Errorf("corpus %s: no kallsyms: the kernel map needs _text", c.Dir)
	}
	var ms MapSet
	var loadKcore func() error
	switch impl {
	case BTree:
		bt, err := index.KernelMaps(c.Landmarks, c.Modules)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
		ms = bt
		loadKcore = func() error { _, err := index.LoadKcore(bt, c.Segments, c.Landmarks); return err }
	case List:
		l, err := listref.KernelMaps(c.Landmarks, c.Modules)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
		ms = l
		loadKcore = func() error { _, err := listref.LoadKcore(l, c.Segments, c.Landmarks); return err }
	default:
		return nil, fmt.Errorf("unknown implementation %q (want btree or list)", impl)
	}
	narrowed, sections, err := c.sectionMaps()
	if err != nil {
		return nil, err
	}
	for _, m := range narrowed {
		ms.RemoveFunc(func(x index.Map) bool { return x.Kind == index.KindModule && x.DSO == m.DSO })
		if err := ms.FixupOverlapAndInsert(m); err != nil {
			return nil, fmt.Errorf("corpus %s: module %s: %w", c.Dir, m, err)
		}
	}
	for _, m := range sections {
		if err := ms.FixupOverlapAndInsert(m); err != nil {
			return nil, fmt.Errorf("corpus %s: section %s: %w", c.Dir, m, err)
		}
	}
	for _, b := range c.BPF {
		if _, taken := ms.Find(b.Start); taken {
			continue
		}
		if err := ms.FixupOverlapAndInsert(b); err != nil {
			return nil, fmt.Errorf("corpus %s: BPF %s: %w", c.Dir, b, err)
		}
	}
	if c.HasKcore {
		if err := loadKcore(); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
	}
	return ms, nil
}
