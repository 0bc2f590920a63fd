package corpus

import (
	"fmt"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

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
func (c *Corpus) KernelMaps(impl mapset.Impl) (mapset.Set, error) {
	if !c.HasKallsyms {
		return nil, fmt.Errorf("corpus %s: no kallsyms: the kernel map needs _text", c.Dir)
	}
	ms, err := impl.KernelMaps(c.Landmarks, c.Modules)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
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
		if _, err := impl.LoadKcore(ms, c.Segments, c.Landmarks); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", c.Dir, err)
		}
	}
	return ms, nil
}
