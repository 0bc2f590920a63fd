package attrib

import "github.com/kmapindex/kmapindex/ingest/symbols"

// replay returns the Children and Self columns of a children table as
// perf builds them when inlined functions' entries took part: perf puts
// a children table's entries in the same kind of tree as a flat table's
// (hists__findnew_entry, searched per sample for its own entry and each
// of its callchain's), and an inlined symbol compares by name and is
// equal to any of that name whose span overlaps its own
// (_sort__sym_cmp), which makes the comparison inconsistent among
// entries of one DSO. perf's tree then sometimes misses an equal entry
// and keeps two rows of one key; its per-sample check for an entry
// counted already (iter_add_next_cumulative_entry's he_cache) compares
// the same way. So the samples' entries, logged in cumulate, go through
// a histTree by dso,sym, sample by sample: the sample's entry counts in
// Self and Children, then each callchain entry no entry counted for the
// sample compares equal to counts in Children. Rows of one key are told
// apart by Key.dup; ranks orders the rows of addresses outside every
// map as the trees' in-order walks do (accumulator.finishTrees). Without
// inlined entries the comparison is an order on the keys (but for the
// addresses noMapOrder sees to), the map-keyed counts are perf's, and ok
// is false. objects holds the offsets naming the rows in object symbols
// (Result.objects): each row's, a second row of a key's too, is the
// offset of the accumulator entry that made it.
func (ac *accumulator) replay() (children, self map[Key]Counts, ranks map[rankKey]int32, objects map[Key]uint64, ok bool) {
	if ac.log == nil || !ac.anyInlined {
		return nil, nil, nil, nil, false
	}
	type perfEntry struct {
		origin    int32 // the accumulator entry that made it
		self, acc Counts
	}
	trees := map[int]*histTree{}
	entries := map[int][]perfEntry{}
	var counted []int32 // the sample's perf entries so far
	// Each accumulator entry's histEntry, made once, and the perf entry
	// its last search found, valid while its tree has as many entries
	// and no entry took another symbol (a search depends on the tree
	// alone, which only those change).
	hes := make([]histEntry, len(ac.keys))
	made := make([]bool, len(ac.keys))
	type found struct{ n, changes, pe int32 }
	last := make([]found, len(ac.keys))
	for i := range last {
		last[i].n = -1
	}
	blocks := ac.log.blocks
	var ids []int32
	for _, s := range ac.log.samples {
		if len(ids) == 0 {
			ids, blocks = blocks[0], blocks[1:]
		}
		sample := ids[:s.n]
		ids = ids[s.n:]
		event := ac.keys[sample[0]].Event
		t := trees[event]
		if t == nil {
			t = newHistTree([]string{SortDSO, SortSym})
			trees[event] = t
		}
		counted = counted[:0]
		for i, id := range sample {
			if !made[id] {
				hes[id], made[id] = ac.histEntry(id), true
			}
			e := &hes[id]
			if i > 0 && countedAlready(t, counted, e) {
				continue
			}
			// The entry's map: the kernel's is one for all, a process's
			// user maps its own.
			e.owner = ownerOf(ac.keys[id].Kernel, s.owner)
			n := int32(len(t.entries))
			pe := last[id].pe
			if last[id].n != n || last[id].changes != t.changes {
				changes := t.changes // before the search: one that changes pe ends elsewhere next time
				pe = t.find(*e)
				if pe == n {
					entries[event] = append(entries[event], perfEntry{origin: id})
				}
				last[id] = found{int32(len(t.entries)), changes, pe}
			} else {
				t.foundFrom(pe, e.owner) // as find does
			}
			p := &entries[event][pe]
			if i == 0 {
				p.self.add(s.c)
			}
			p.acc.add(s.c)
			counted = append(counted, pe)
		}
	}
	children, self, ranks = make(map[Key]Counts), make(map[Key]Counts), make(map[rankKey]int32)
	for event, es := range entries {
		keys := make([]Key, len(es))
		for i, p := range es {
			k := ac.keys[p.origin]
			if he := &trees[event].entries[i]; he.based {
				k.Sym = he.name // the symbol it is inlined into, found from another map
			}
			for {
				if _, taken := children[k]; !taken {
					break
				}
				k.dup++
			}
			children[k] = p.acc
			if p.self.Samples > 0 {
				self[k] = p.self
			}
			if off, ok := ac.objects[p.origin]; ok {
				if objects == nil {
					objects = make(map[Key]uint64)
				}
				objects[noLevel(k)] = off
			}
			keys[i] = k
		}
		r := int32(0)
		for n := trees[event].tree.First(); n != nil; n = n.Next() {
			if k := keys[n.Value]; k.DSO == symbols.Unknown {
				ranks[rankKeyOf(k)] = r
			}
			r++
		}
	}
	return children, self, ranks, objects, true
}

// countedAlready reports whether an entry counted for the sample already
// compares equal to e (iter_add_next_cumulative_entry's duplicate check).
func countedAlready(t *histTree, counted []int32, e *histEntry) bool {
	for _, c := range counted {
		if t.compare(&t.entries[c], e) == 0 {
			return true
		}
	}
	return false
}

// histEntry returns what perf's comparison by dso,sym looks at of
// accumulator entry id.
func (ac *accumulator) histEntry(id int32) histEntry {
	k, m := ac.keys[id], ac.meta[id]
	e := keyEntry(k, ShortName(k.DSO, k.Kernel), m.end, m.inlined)
	e.base = m.base
	return e
}
