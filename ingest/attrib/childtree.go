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
func (ac *accumulator) replay() (children, self map[Key]Counts, ranks *rowRanks, objects map[Key]objectName, ok bool) {
	if ac.log == nil || !ac.anyInlined {
		ac.stopReplay()
		return nil, nil, nil, nil, false
	}
	r := ac.finishReplay()
	if r == nil { // none ran alongside, or its entries changed under it
		r = newReplayer()
		blocks := ac.log.blocks
		samples := ac.log.samples
		for i, b := range blocks {
			n := samplesIn(samples, len(b))
			r.feed(samples[:n], b, ac.log.hits[i], &ac.keys, &ac.meta)
			samples = samples[n:]
		}
	}
	children, self, ranks, objects = r.result(ac)
	return children, self, ranks, objects, true
}

// samplesIn returns how many of samples, the first ones logged in a
// block, that block's n entries hold.
func samplesIn(samples []loggedSample, n int) int {
	i := 0
	for ; i < len(samples) && n > 0; i++ {
		n -= int(samples[i].n)
	}
	return i
}

// replayer is replay's state: perf's trees by event and their entries,
// fed the logged samples in order.
type replayer struct {
	trees   map[int]*histTree
	entries map[int][]perfEntry
	counted []int32 // the sample's perf entries so far
	// Each accumulator entry's histEntry, made once, and the perf entry
	// its last search found, valid while its tree has as many entries
	// and no entry took another symbol (a search depends on the tree
	// alone, which only those change).
	hes  []histEntry
	made []bool
	last []found
}

type perfEntry struct {
	origin    int32 // the accumulator entry that made it
	self, acc Counts
	obj       objectName // in an object symbol: the entries merged into it
}

type found struct{ n, changes, pe int32 }

func newReplayer() *replayer {
	return &replayer{trees: map[int]*histTree{}, entries: map[int][]perfEntry{}}
}

// feed replays samples, whose entries are ids in order (those in object
// symbols hits, by position in ids), with the accumulator's entries'
// keys and meta (at least those ids name).
func (r *replayer) feed(samples []loggedSample, ids []int32, hits []loggedHit, keys *entryKeys, meta *entryMetas) {
	pos := int32(0)
	for len(r.hes) < keys.len() {
		r.hes = append(r.hes, histEntry{})
		r.made = append(r.made, false)
		r.last = append(r.last, found{n: -1})
	}
	for _, s := range samples {
		sample := ids[:s.n]
		ids = ids[s.n:]
		event := int(keys.ptr(sample[0]).event)
		t := r.trees[event]
		if t == nil {
			t = newHistTree([]string{SortDSO, SortSym})
			r.trees[event] = t
		}
		r.counted = r.counted[:0]
		for i, id := range sample {
			var hit objectName
			if len(hits) > 0 && hits[0].pos == pos {
				hit = hits[0].h
				hits = hits[1:]
			}
			pos++
			if !r.made[id] {
				r.hes[id], r.made[id] = histEntryOf(keys.at(id), meta.at(id)), true
			}
			e := &r.hes[id]
			if i > 0 && countedAlready(t, r.counted, e) {
				continue
			}
			// The entry's map: the kernel's is one for all, a process's
			// user maps its own.
			e.owner = ownerOf(keys.ptr(id).kernel, s.owner)
			n := int32(len(t.entries))
			pe := r.last[id].pe
			if r.last[id].n != n || r.last[id].changes != t.changes {
				changes := t.changes // before the search: one that changes pe ends elsewhere next time
				pe = t.find(*e)
				if pe == n {
					r.entries[event] = append(r.entries[event], perfEntry{origin: id})
				}
				r.last[id] = found{int32(len(t.entries)), changes, pe}
			} else {
				t.foundFrom(pe, e.owner) // as find does
			}
			p := &r.entries[event][pe]
			p.obj.note(hit)
			if i == 0 {
				p.self.add(s.c)
			}
			p.acc.add(s.c)
			r.counted = append(r.counted, pe)
		}
	}
}

// result returns the Children and Self columns, the ranks of the rows
// without a map and the offsets naming rows in object symbols (see
// replay).
func (r *replayer) result(ac *accumulator) (children, self map[Key]Counts, ranks *rowRanks, objects map[Key]objectName) {
	children, self, ranks = make(map[Key]Counts), make(map[Key]Counts), newRowRanks(0)
	for event, es := range r.entries {
		keys := make([]Key, len(es))
		for i, p := range es {
			k := ac.keys.at(p.origin)
			if he := &r.trees[event].entries[i]; he.based {
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
			if p.obj.set {
				if objects == nil {
					objects = make(map[Key]objectName)
				}
				objects[noLevel(k)] = p.obj
			}
			keys[i] = k
		}
		// The rows of one key perf kept apart are as alike to its sort
		// as those without a map: its tree's order, in which it makes
		// its output, orders them too.
		split := map[Key]bool{}
		for _, k := range keys {
			if k.dup > 0 {
				k.dup = 0
				split[k] = true
			}
		}
		n := int32(0)
		for node := r.trees[event].tree.First(); node != nil; node = node.Next() {
			k := keys[node.Value]
			first := k
			first.dup = 0
			if k.DSO == symbols.Unknown || split[first] {
				ranks.set(&k, n)
			}
			n++
		}
	}
	return children, self, ranks, objects
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

// histEntryOf returns what perf's comparison by dso,sym looks at of an
// accumulator entry of key k and meta m.
func histEntryOf(k Key, m entryMeta) histEntry {
	e := keyEntry(k, ShortName(k.DSO, k.Kernel), m.end, m.inlined)
	e.base = m.base
	return e
}
