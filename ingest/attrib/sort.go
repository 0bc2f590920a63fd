package attrib

import (
	"cmp"
	"encoding/binary"
	"iter"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

func sortMaps(maps []index.Map) {
	slices.SortFunc(maps, func(a, b index.Map) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(a.DSO, b.DSO); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pgoff, b.Pgoff); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
}

// keyCounts is a key with its counts.
type keyCounts struct {
	k Key
	c Counts
}

// keyChunks are keys with their counts, in chunks of keyChunk that
// never move: a children table's entries (Result.children), gathered at
// its end. In one array a gcc build's 514 k took 35 MB of fresh memory
// at the run's peak; chunks fit the memory its counting state, let go
// of, left free. A nil keyChunks is none; a table's are never nil.
type keyChunks [][]keyCounts

const keyChunk = 4096

// add appends kc.
func (c *keyChunks) add(kc keyCounts) {
	n := len(*c)
	if n == 0 || len((*c)[n-1]) == keyChunk {
		*c = append(*c, make([]keyCounts, 0, keyChunk))
		n++
	}
	(*c)[n-1] = append((*c)[n-1], kc)
}

// len returns the number of keys.
func (c keyChunks) len() int {
	n := 0
	for _, ch := range c {
		n += len(ch)
	}
	return n
}

// all yields the address of each key and its counts, in order.
func (c keyChunks) all() iter.Seq[*keyCounts] {
	return func(yield func(*keyCounts) bool) {
		for _, ch := range c {
			for i := range ch {
				if !yield(&ch[i]) {
					return
				}
			}
		}
	}
}

// compareKeyCounts orders keys by period, then samples (both
// descending), then dso, symbol, address, event, the row of a key
// (Key.dup) and mode: a total order, so that a table's rows come out the
// same whatever the map order.
func compareKeyCounts(x, y keyCounts) int {
	if c := cmp.Compare(y.c.Period, x.c.Period); c != 0 {
		return c
	}
	if c := cmp.Compare(y.c.Samples, x.c.Samples); c != 0 {
		return c
	}
	a, b := x.k, y.k
	if c := cmp.Compare(a.DSO, b.DSO); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Sym, b.Sym); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Event, b.Event); c != 0 {
		return c
	}
	if c := cmp.Compare(a.dup, b.dup); c != 0 {
		return c
	}
	if a.Kernel == b.Kernel {
		return 0
	}
	if a.Kernel {
		return 1
	}
	return -1
}

// sortedKeys returns m's keys in compareKeyCounts' order. It sorts
// (key, counts) pairs: looking counts up in m per comparison hashed two
// strings each time.
func sortedKeys(m map[Key]Counts) []Key {
	all := make([]keyCounts, 0, len(m))
	for k, c := range m {
		all = append(all, keyCounts{k, c})
	}
	slices.SortFunc(all, compareKeyCounts)
	keys := make([]Key, len(all))
	for i := range all {
		keys[i] = all[i].k
	}
	return keys
}

// tableRow is one row of a table: its key (Event is the table's first
// event) and its counts for each event of the table.
type tableRow struct {
	key   Key
	c     []Counts
	acc   []Counts // the Children columns, per member, in a children table
	short string   // the DSO's short name, which rows sort by
	// first ranks rows perf's sort keys find equal: the least
	// (compareKeyCounts) of the keys that made it, of the counts' keys,
	// or of acc's for a row only acc has (late). It points into acc or
	// a copy of m's keys: a key and counts in every row took 80 of its
	// 216 bytes.
	first *keyCounts
	late  bool
	// levelBy is 1 + the member (the event less the group's first)
	// whose acc key gave the row its level, 0 for none yet: the
	// leader's entry, else the dummy perf makes for the leader from the
	// first member's (hists__link, hist_entry__new copying its level).
	levelBy uint16
	// rank is 1 + the row's rank in Result.noMapRanks, if it has one.
	rank int32
}

// groupRows returns the rows of the table for events first..first+n-1,
// in blocks (rowBlock): one per key any of them has, keys differing only
// in the event merged.
// With acc (a children table), the keys only acc has get rows too, and
// every row its members' acc counts; a row's level is the one the
// leader's acc key has, else the first member's that has one, else its
// key's (in a children table, a row without a map has the user level
// until an acc key says otherwise: Result.Children keys each such entry
// once, with its level).
//
// The rows come in map order: tableOrder ranks them by first,
// so that they sort as if groupRows had read the keys in sortedKeys'
// order, without sorting them here. A row's rank is 1 + its key's in
// ranks (rankKeyOf), if it has one there.
//
// A large table's rows are grouped in two shards, on two goroutines:
// keys that share a row share their address, and the shards split the
// addresses. Grouping a children table's 50 k rows took 25-35 ms, a
// quarter of its end, on one core.
func groupRows(m map[Key]Counts, acc keyChunks, hidden map[Key]bool, ranks *rowRanks, first, n int) [][]tableRow {
	return slices.Concat(groupShards(m, acc, hidden, ranks, first, n)...)
}

// groupShards is groupRows's work: each shard's blocks of rows.
func groupShards(m map[Key]Counts, acc keyChunks, hidden map[Key]bool, ranks *rowRanks, first, n int) [][][]tableRow {
	rows, _ := groupTable(m, acc, hidden, ranks, first, n, false)
	return rows
}

// groupTable is groupShards, with compact the rows without a map of a
// one-event children table apart, as noMapRows (see nomaprows.go),
// each shard's sorted by compareNoMapRows.
func groupTable(m map[Key]Counts, acc keyChunks, hidden map[Key]bool, ranks *rowRanks, first, n int, compact bool) ([][][]tableRow, [][]noMapRow) {
	g := grouping{m: m, acc: acc, nacc: acc.len(), hidden: hidden, ranks: ranks, first: first, n: n, same: sameShortNames(m, acc), shards: 1}
	if max(len(m), g.nacc) >= parallelRowsMin && runtime.GOMAXPROCS(0) > 1 {
		g.shards = 2
	}
	// A DSO of the short name "[unknown]" would take those rows'
	// (sameShortNames): then they are tableRows.
	_, renamed := g.same[dsoMode{symbols.Unknown, false}]
	_, renamedK := g.same[dsoMode{symbols.Unknown, true}]
	g.compact = compact && acc != nil && n == 1 && !renamed && !renamedK
	// Each shard's keys without a map of the table's event, m's and
	// acc's: as many noMapRows at most.
	noMapIn := make([]int, g.shards)
	for kc := range acc.all() {
		if k := &kc.k; isNoMapKey(k) {
			g.noMap++
			if g.compact && k.Event == first {
				noMapIn[shardOf(k.Addr, g.shards)]++
			}
		}
	}
	if g.compact {
		for k := range m {
			if isNoMapKey(&k) && k.Event == first {
				noMapIn[shardOf(k.Addr, g.shards)]++
			}
		}
	}
	out := make([][][]tableRow, g.shards)
	var noMap [][]noMapRow
	if g.compact {
		noMap = make([][]noMapRow, g.shards)
	}
	var wg sync.WaitGroup
	for s := range g.shards {
		wg.Go(func() {
			var nm *noMapRowSet
			if g.compact {
				nm = newNoMapRowSet(noMapIn[s])
			}
			out[s] = g.shard(s, nm)
			if nm != nil {
				noMap[s] = nm.rows
				slices.SortFunc(noMap[s], func(x, y noMapRow) int { return compareNoMapRows(&x, &y) })
			}
		})
	}
	wg.Wait()
	return out, noMap
}

// grouping is what groupRows groups, and in how many shards.
type grouping struct {
	m        map[Key]Counts
	acc      keyChunks
	nacc     int // acc's keys
	hidden   map[Key]bool
	ranks    *rowRanks
	first, n int
	same     map[dsoMode]string // sameShortNames's
	shards   int
	noMap    int  // acc's keys without a map
	compact  bool // rows without a map are noMapRows
}

// shardOf is the shard of the keys at address addr, of shards.
func shardOf(addr uint64, shards int) int {
	return int((addr * 0x9e3779b97f4a7c15 >> 32) % uint64(shards))
}

// rowBlock is how many rows a block of groupRows's holds (at most 272
// KiB). A large table's rows in one array took fresh memory, which costs
// its faults and zeroing here (about 1 ms a MB): grouping the 514 k rows
// of a gcc build's children table took 0.51 s, most of it writing the
// rows; blocks fit the memory the run's entries left free.
const (
	rowBlock     = 1 << rowBlockBits
	rowBlockBits = 11
)

// blockList holds values in blocks that never move or grow, so that
// pointers to them stay valid: each block is made for the values still
// expected (want), at least 64 and at most rowBlock.
type blockList[T any] struct {
	blocks  [][]T
	n, want int
}

// add appends v and returns its address.
func (l *blockList[T]) add(v T) *T {
	last := len(l.blocks) - 1
	if last < 0 || len(l.blocks[last]) == cap(l.blocks[last]) {
		l.blocks = append(l.blocks, make([]T, 0, min(max(l.want-l.n, 64), rowBlock)))
		last++
	}
	b := append(l.blocks[last], v)
	l.blocks[last] = b
	l.n++
	return &b[len(b)-1]
}

// last returns the index of the value added last: its block's number
// and its place in the block (at).
func (l *blockList[T]) last() int32 {
	b := len(l.blocks) - 1
	return int32(b<<rowBlockBits | (len(l.blocks[b]) - 1))
}

// at returns the value of index i (last's).
func (l *blockList[T]) at(i int32) *T { return &l.blocks[i>>rowBlockBits][i&(rowBlock-1)] }

// shard returns the rows of the keys of shard s (shardOf), in blocks of
// rowBlock; with nm, those without a map go there instead.
func (g *grouping) shard(s int, nm *noMapRowSet) [][]tableRow {
	m, acc, hidden, same, first, n := g.m, g.acc, g.hidden, g.same, g.first, g.n
	normal := func(k Key) Key {
		k.Event = first
		if acc != nil {
			k = noLevel(k) // as Result.Children keys them
		}
		if d, ok := same[dsoMode{k.DSO, k.Kernel}]; ok {
			k.DSO = d
		}
		return k
	}
	// At most a row a key; in a children table nearly every key of m is
	// one of acc's too, so the map is sized for the larger map.
	size, noMapSize := max(len(m), g.nacc), g.noMap
	if g.shards > 1 {
		// A shard's share, and room for an uneven split.
		size, noMapSize = size/g.shards*9/8+64, noMapSize/g.shards*9/8+64
	}
	rows := blockList[tableRow]{want: size}
	// One event without acc and DSOs of one short name has nothing to
	// merge: each key is a row.
	var byKey map[Key]*tableRow
	merges := func(Key) bool { return true } // whether a key may share a row
	switch {
	case n > 1 || acc != nil:
		byKey = make(map[Key]*tableRow, max(size-noMapSize, 64)) // rows without a map are noMapRows's
	case len(same) > 0:
		// One event's keys are distinct: two meet only where a DSO
		// takes the least name of its short name (normal), so only
		// keys of such DSOs are looked up (a 17 k-row table built its
		// map for all of them, 7 ms).
		least := make(map[dsoMode]bool, len(same))
		for d, l := range same {
			least[dsoMode{l, d.kernel}] = true
		}
		merges = func(k Key) bool {
			d := dsoMode{k.DSO, k.Kernel}
			_, renamed := same[d]
			return renamed || least[d]
		}
		byKey = make(map[Key]*tableRow)
	}
	// The rows' columns, carved out of arrays of a block's rows.
	cols := 1
	if acc != nil {
		cols = 2
	}
	var counts []Counts
	take := func() []Counts {
		if len(counts)+n > cap(counts) {
			counts = make([]Counts, 0, cols*n*min(size, rowBlock))
		}
		counts = counts[:len(counts)+n]
		return counts[len(counts)-n : len(counts) : len(counts)]
	}
	// A children table's rows without a map (most of its rows when the
	// callchains hold stack words: 382 k of a gcc build's 515 k) are
	// found by address and dup alone, not by hashing their keys' names.
	var noMapRows *addrTable
	if byKey != nil && acc != nil && nm == nil {
		noMapRows = newAddrTable(noMapSize)
	}
	row := func(kc *keyCounts, late bool) *tableRow {
		nk := normal(kc.k)
		lookup := byKey != nil && merges(kc.k)
		tag, byAddr := uint32(0), false
		if lookup && noMapRows != nil && isNoMapKey(&nk) {
			tag, byAddr = noMapTag(0, nk.dup)
		}
		if lookup {
			var r *tableRow
			if byAddr {
				if i, ok := noMapRows.get(nk.Addr, tag); ok {
					r = rows.at(i)
				}
			} else {
				r = byKey[nk]
			}
			if r != nil {
				if r.late == late && compareKeyCounts(*kc, *r.first) < 0 {
					r.first = kc
				}
				return r
			}
		}
		r := rows.add(tableRow{key: nk, c: take(), late: late, first: kc})
		switch {
		case byAddr:
			noMapRows.set(nk.Addr, tag, rows.last())
		case lookup:
			byKey[nk] = r
		}
		if acc != nil {
			r.acc = take()
		}
		return r
	}
	// A hidden row is perf's hist entry a filtered sample made; in a
	// children table one entry holds both columns (its key without a
	// level when it has no map).
	isHidden := func(k Key) bool {
		if acc != nil {
			k = noLevel(k)
		}
		return hidden[k]
	}
	mKeys := blockList[keyCounts]{want: size} // m's, where rows' first may point
	for k, c := range m {
		if k.Event >= first && k.Event < first+n && shardOf(k.Addr, g.shards) == s && !isHidden(k) {
			if nm != nil && isNoMapKey(&k) {
				kc := keyCounts{k, c}
				nm.add(&kc, false).self.add(c)
				continue
			}
			row(mKeys.add(keyCounts{k, c}), false).c[k.Event-first].add(c)
		}
	}
	for kc := range acc.all() {
		if k, c := kc.k, kc.c; k.Event >= first && k.Event < first+n && shardOf(k.Addr, g.shards) == s && !isHidden(k) {
			if nm != nil && isNoMapKey(&k) {
				r := nm.add(kc, true)
				r.acc.add(c)
				r.level = packLevel(k.Kernel, k.Hyper) // n is 1: every key is the leader's
				continue
			}
			r := row(kc, true)
			r.acc[k.Event-first].add(c) // two DSOs of one short name add up
			if by := uint16(k.Event-first) + 1; r.levelBy == 0 || by <= r.levelBy {
				r.key.Kernel, r.key.Hyper, r.levelBy = k.Kernel, k.Hyper, by
			}
		}
	}
	if g.ranks != nil {
		for _, b := range rows.blocks {
			for i := range b {
				if rank, ok := g.ranks.get(&b[i].key); ok {
					b[i].rank = rank + 1
				}
			}
		}
		if nm != nil {
			for i := range nm.rows {
				r := &nm.rows[i]
				if rank, ok := g.ranks.getNoMap(r.addr, first, r.dup); ok {
					r.rank = rank + 1
				}
			}
		}
	}
	if nm != nil {
		nm.index, nm.rare = nil, nil // the rows are all made
	}
	return rows.blocks
}

// sameShortNames maps each DSO of m's and acc's keys whose short name
// (ShortName) another DSO has too to one of them, the least: perf's dso
// key compares short names (_sort__dso_cmp without -v), so rows of two
// libraries of one file name (a host's libc and a snap's) are one when
// their symbols (or unresolved addresses) are. nil when no two share one.
func sameShortNames(m map[Key]Counts, acc keyChunks) map[dsoMode]string {
	short := map[dsoMode]dsoMode{} // each DSO's short name, at its mode
	least := map[dsoMode]string{}  // per short name, the least DSO
	note := func(k Key) {
		d := dsoMode{k.DSO, k.Kernel}
		if _, ok := short[d]; ok {
			return
		}
		s := dsoMode{ShortName(d.dso, d.kernel), d.kernel}
		short[d] = s
		if l, ok := least[s]; !ok || d.dso < l {
			least[s] = d.dso
		}
	}
	for k := range m {
		note(k)
	}
	for kc := range acc.all() {
		note(kc.k)
	}
	var same map[dsoMode]string
	for d, s := range short {
		if l := least[s]; l != d.dso {
			if same == nil {
				same = make(map[dsoMode]string)
			}
			same[d] = l
		}
	}
	return same
}

// comparePerfRows is the order of perf report's output sort
// (hists__output_resort with perf 6.1's sort functions for --sort
// dso,sym), as tableOrder describes it up to the address; rows
// must have their short names.
func comparePerfRows(x, y *tableRow) int {
	// perf prefixes the sort keys with overhead_children (in a
	// children table) and overhead (setup_overhead).
	// The Children sort (__hpp__sort_acc) looks at the group
	// leader's alone.
	if len(x.acc) > 0 {
		if c := cmp.Compare(y.acc[0].Period, x.acc[0].Period); c != 0 {
			return c
		}
	}
	for i := range x.c {
		if c := cmp.Compare(y.c[i].Period, x.c[i].Period); c != 0 {
			return c
		}
	}
	a, b := x.key, y.key
	if c := unknownLast(a.DSO, b.DSO); c != 0 {
		return c
	}
	if c := cmp.Compare(x.short, y.short); c != 0 {
		return c
	}
	if c := unknownLast(a.Sym, b.Sym); c != 0 {
		return c
	}
	if c := cmp.Compare(bareSym(a.Sym), bareSym(b.Sym)); c != 0 { // sort__sym_sort
		return c
	}
	// The output fields follow the sort keys (perf_hpp__append_sort_keys):
	// -n's sample count, descending.
	for i := range x.c {
		if c := cmp.Compare(y.c[i].Samples, x.c[i].Samples); c != 0 {
			return c
		}
	}
	if x.rank > 0 && y.rank > 0 {
		return cmp.Compare(x.rank, y.rank) // perf's tree's order, where its comparison was none
	}
	return cmp.Compare(int64(a.Addr), int64(b.Addr))
}

// tableOrder returns rows in the order perf report gives the rows of
// --sort dso,sym (hists__output_resort with perf 6.1's sort functions),
// and fills in their short names: by the Children
// period in a children table, descending; by period, descending, the
// group leader's first, then each member's (__hpp__sort);
// then by the DSO's short name, ascending (sort__dso_cmp), rows without a
// map last; then by symbol name, ascending, rows without a symbol last
// (sort__sym_sort: an inlined function's name without " (inlined)"); then by sample count, descending, as the period; rows
// still equal (unresolved addresses of one DSO, or of none) by address as
// a signed number, the order of perf's collapsed tree (_sort__addr_cmp),
// so kernel addresses come first; rows equal even then as groupRows
// ranks them.
func tableOrder(shards [][]tableRow) []*tableRow {
	// Rows are large and far apart: the sort moves their leading keys,
	// each a number, with a pointer to the row, so that most comparisons
	// read no row and compare no string (comparing two names took a
	// quarter of writing a 73 k-row children table). A row's DSO is
	// ranked among the table's DSOs, and its symbol's name stands by
	// its first 8 bytes, until they tie. A large table's keys are read
	// in halves on two goroutines: reading a row misses the cache, and
	// the halves of a gcc build's 514 k-row children table took 8-28 ms
	// each (a throwaway build's timings, 3 runs), 36-43 ms one after the
	// other.
	n := 0
	for _, rows := range shards {
		n += len(rows)
	}
	keyed := make([]orderedRow, n)
	rowDSOs := make([]*dsoRank, n)
	parts := 1
	if n >= parallelRowsMin && runtime.GOMAXPROCS(0) > 1 {
		parts = 2
	}
	bound := func(p int) int { return n * p / parts }
	dsoSets := make([]map[shortDSO]*dsoRank, parts) // perf compares DSOs by these
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			var short shortNames
			dsos := make(map[shortDSO]*dsoRank)
			var last *dsoRank
			for i, r := range rowsBetween(shards, bound(p), bound(p+1)) {
				r.short = short.of(r.key.DSO, r.key.Kernel)
				if k := (shortDSO{r.short, r.key.DSO == symbols.Unknown}); last == nil || k != last.shortDSO {
					if last = dsos[k]; last == nil {
						last = &dsoRank{shortDSO: k}
						dsos[k] = last
					}
				}
				rowDSOs[i] = last
				keyed[i] = orderedRow{self: r.c[0].Period, symUnknown: r.key.Sym == symbols.Unknown, sym: prefix8(bareSym(r.key.Sym)), r: r,
					samples: r.c[0].Samples, addr: int64(r.key.Addr), rank: r.rank, members: len(r.c) > 1}
				if len(r.acc) > 0 {
					keyed[i].acc = r.acc[0].Period
				}
			}
			dsoSets[p] = dsos
		})
	}
	wg.Wait()
	// Each part has its own dsoRank of a DSO: all get the DSO's rank.
	union := make(map[shortDSO]int32)
	for _, dsos := range dsoSets {
		for k := range dsos {
			union[k] = 0
		}
	}
	ranks := slices.SortedFunc(maps.Keys(union), func(x, y shortDSO) int {
		if x.unknown != y.unknown {
			return cmp.Compare(b2i(x.unknown), b2i(y.unknown)) // rows without a map last
		}
		return cmp.Compare(x.short, y.short)
	})
	for i, k := range ranks {
		union[k] = int32(i)
	}
	for _, dsos := range dsoSets {
		for k, d := range dsos {
			d.rank = union[k]
		}
	}
	for p := range parts {
		wg.Go(func() {
			for i := bound(p); i < bound(p+1); i++ {
				keyed[i].dsoRank = rowDSOs[i].rank
			}
		})
	}
	wg.Wait()
	return sortRows(keyed)
}

// rowsBetween yields the rows of shards numbered lo to hi-1 (numbered
// from 0 across the shards, in order), with their numbers.
func rowsBetween(shards [][]tableRow, lo, hi int) iter.Seq2[int, *tableRow] {
	return func(yield func(int, *tableRow) bool) {
		n := 0
		for _, rows := range shards {
			if n+len(rows) <= lo {
				n += len(rows)
				continue
			}
			for i := max(lo-n, 0); i < len(rows) && n+i < hi; i++ {
				if !yield(n+i, &rows[i]) {
					return
				}
			}
			n += len(rows)
			if n >= hi {
				return
			}
		}
	}
}

// mergeSorted merges x and y, sorted by compare, into order (out of
// each), x first on equal elements.
func mergeSorted[T, R any](order []R, x, y []T, compare func(a, b T) int, out func(T) R) {
	for i := range order {
		if len(y) == 0 || len(x) > 0 && compare(x[0], y[0]) <= 0 {
			order[i], x = out(x[0]), x[1:]
		} else {
			order[i], y = out(y[0]), y[1:]
		}
	}
}

// splitMerge returns how many of the first k elements of the merge of x
// and y, sorted by compare (mergeSorted's), come from x: the least i for
// which x[i] comes after y[k-i-1], by binary search.
func splitMerge[T any](x, y []T, k int, compare func(a, b T) int) int {
	lo, hi := max(0, k-len(y)), min(k, len(x))
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		if compare(x[i], y[k-i-1]) <= 0 {
			lo = i + 1
		} else {
			hi = i
		}
	}
	return lo
}

// parallelRowsMin is the least number of rows (or keys) groupRows groups
// in two shards and sortedParallel sorts in halves, each on two
// goroutines: below it the goroutine costs more than it saves.
const parallelRowsMin = 4096

// sortRows sorts keyed by compareOrderedRows and returns their rows in
// that order (sortedParallel).
func sortRows(keyed []orderedRow) []*tableRow {
	return sortedParallel(keyed, compareOrderedRows, func(k orderedRow) *tableRow { return k.r })
}

// sortedParallel sorts keyed by compare, a total order, and returns out
// of each in that order. Sorting a children table's 50 k rows took a
// quarter of its end on one core, so a large table's halves are sorted
// on two goroutines and merged (by hand: the standard library has no
// merge); the order is total, so the result is the one sort's.
func sortedParallel[T, R any](keyed []T, compare func(a, b T) int, out func(T) R) []R {
	order := make([]R, len(keyed))
	if len(keyed) < parallelRowsMin || runtime.GOMAXPROCS(0) < 2 {
		slices.SortFunc(keyed, compare)
		for i, k := range keyed {
			order[i] = out(k)
		}
		return order
	}
	x, y := keyed[:len(keyed)/2], keyed[len(keyed)/2:]
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(x, compare) })
	slices.SortFunc(y, compare)
	wg.Wait()
	// The merge too, in halves: the first half of the order takes i
	// elements of x and the rest of y (splitMerge).
	half := len(order) / 2
	i := splitMerge(x, y, half, compare)
	wg.Go(func() { mergeSorted(order[:half], x[:i], y[:half-i], compare, out) })
	mergeSorted(order[half:], x[i:], y[half-i:], compare, out)
	wg.Wait()
	return order
}

// orderedRow is a row with the keys tableOrder sorts it by: for a table
// of one event, all of comparePerfRows's but the symbol's name after its
// first 8 bytes. (Rows without a symbol tie up to their sample
// counts and addresses, most often the rows of a table: reading them
// from the rows took most of the sort of a gcc build's 514 k-row
// children table.)
type orderedRow struct {
	acc, self  uint64 // the leader's Children and Self periods
	samples    uint64 // the leader's samples
	addr       int64  // the key's address as a signed number
	dsoRank    int32
	rank       int32 // tableRow.rank
	symUnknown bool
	members    bool   // the row is a group's: its members' counts follow
	sym        uint64 // prefix8 of the symbol's name
	r          *tableRow
}

// shortDSO is what perf's dso sort key compares of a row's DSO: whether
// it has one, and its short name.
type shortDSO struct {
	short   string
	unknown bool
}

// dsoRank is a shortDSO's rank among a table's: rows without a map
// last, then by short name.
type dsoRank struct {
	shortDSO
	rank int32
}

// compareOrderedRows is comparePerfRows, then compareKeyCounts of the
// rows' first keys: the order of tableOrder.
func compareOrderedRows(x, y orderedRow) int {
	if c := cmp.Compare(y.acc, x.acc); c != 0 {
		return c
	}
	if c := cmp.Compare(y.self, x.self); c != 0 {
		return c
	}
	for i := 1; x.members && i < len(x.r.c); i++ { // a group's members, after its leader
		if c := cmp.Compare(y.r.c[i].Period, x.r.c[i].Period); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(x.dsoRank, y.dsoRank); c != 0 {
		return c
	}
	if x.symUnknown != y.symUnknown {
		return cmp.Compare(b2i(x.symUnknown), b2i(y.symUnknown)) // rows without a symbol last
	}
	if c := cmp.Compare(x.sym, y.sym); c != 0 {
		return c
	}
	// comparePerfRows from the symbol's name on, reading the rows only
	// for the rest of two names and for a group's members.
	if !x.symUnknown { // an inlined function by its own name (sort__sym_sort)
		if c := cmp.Compare(bareSym(x.r.key.Sym), bareSym(y.r.key.Sym)); c != 0 {
			return c
		}
	}
	if x.members {
		for i := range x.r.c {
			if c := cmp.Compare(y.r.c[i].Samples, x.r.c[i].Samples); c != 0 {
				return c
			}
		}
	} else if c := cmp.Compare(y.samples, x.samples); c != 0 {
		return c
	}
	if x.rank > 0 && y.rank > 0 {
		if c := cmp.Compare(x.rank, y.rank); c != 0 {
			return c
		}
	} else if c := cmp.Compare(x.addr, y.addr); c != 0 {
		return c
	}
	// Equal for perf: in the order groupRows would have read the keys.
	// (Rows only acc has never get here with others: they have no
	// samples, every other row some.)
	return compareKeyCounts(*x.r.first, *y.r.first)
}

// prefix8 is s's first 8 bytes as a big-endian number, zeros after a
// shorter s: prefixes that differ order as their strings do.
func prefix8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unknownLast orders a name after another when only it is
// symbols.Unknown (0 when both or neither are).
func unknownLast(a, b string) int {
	an, bn := a == symbols.Unknown, b == symbols.Unknown
	switch {
	case an && !bn:
		return 1
	case bn && !an:
		return -1
	}
	return 0
}
