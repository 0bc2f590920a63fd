package attrib

import (
	"cmp"

	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// A children table of a recording whose callchains hold stack words has
// mostly rows of addresses outside every map: 382 k of the 515 k rows of
// a gcc build's. As tableRows they took about 350 bytes each at the
// table's end (the row and its columns, its lookup slot, its sort keys,
// the copy of its entry's key), which set the table's peak memory. A
// one-event children table keeps them as noMapRows instead, 72 bytes
// each, sorted per shard, and its writer merges them with the other rows
// (tableLines). Their order is tableOrder's: such rows sort after every
// other row of equal Children and Self periods (their DSO ranks last),
// and among themselves by what compareOrderedRows reads of them.

// noMapRow is a row of a one-event children table of an address outside
// every map: what tableRow holds of it, its key's constant names and
// event left out.
type noMapRow struct {
	addr      uint64
	acc, self Counts // the Children and Self columns
	// first, firstEvent and firstLevel are the counts, event and level
	// of the row's least key (tableRow.first), whose DSO, symbol,
	// address and dup are the row's.
	first      Counts
	rank       int32 // tableRow.rank
	dup        int32
	firstEvent int32
	level      uint8 // the row's (packLevel)
	firstLevel uint8
	late       bool // tableRow.late
}

// key returns the row's key in the table of event first.
func (r *noMapRow) key(first int) Key {
	kernel, hyper := unpackLevel(r.level)
	return Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Hyper: hyper, Addr: r.addr, Event: first, dup: r.dup}
}

// firstKey returns the row's least key with its counts (tableRow.first).
func (r *noMapRow) firstKey() keyCounts {
	kernel, hyper := unpackLevel(r.firstLevel)
	return keyCounts{Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Hyper: hyper, Addr: r.addr, Event: int(r.firstEvent), dup: r.dup}, r.first}
}

// compareNoMapRows is compareOrderedRows of two rows without a map of a
// one-event children table.
func compareNoMapRows(x, y *noMapRow) int {
	if c := cmp.Compare(y.acc.Period, x.acc.Period); c != 0 {
		return c
	}
	if c := cmp.Compare(y.self.Period, x.self.Period); c != 0 {
		return c
	}
	if c := cmp.Compare(y.self.Samples, x.self.Samples); c != 0 {
		return c
	}
	if x.rank > 0 && y.rank > 0 {
		if c := cmp.Compare(x.rank, y.rank); c != 0 {
			return c
		}
	} else if c := cmp.Compare(int64(x.addr), int64(y.addr)); c != 0 {
		return c
	}
	return compareKeyCounts(x.firstKey(), y.firstKey())
}

// beforeNoMapRow reports whether row r, with a map or a symbol, of a
// one-event children table comes before x (compareOrderedRows): by
// Children, then Self period, descending, r on a tie, its DSO ranking
// first or, of no map too, its symbol (tableOrder).
func beforeNoMapRow(r *tableRow, x *noMapRow) bool {
	if r.acc[0].Period != x.acc.Period {
		return r.acc[0].Period > x.acc.Period
	}
	return r.c[0].Period >= x.self.Period
}

// noMapRowSet gathers a shard's rows without a map, found by address and
// dup.
type noMapRowSet struct {
	rows  []noMapRow
	index *addrTable
	rare  map[noMapRank]int32 // rows whose dup does not fit a tag
}

// newNoMapRowSet returns a set with room for n rows.
func newNoMapRowSet(n int) *noMapRowSet {
	return &noMapRowSet{rows: make([]noMapRow, 0, n), index: newAddrTable(n)}
}

// add returns the row of key kc.k (without a map, of the table's event),
// made if need be, and makes kc its least key if it is less than the
// least of its kind (late: of acc's keys, else of the Self column's).
func (s *noMapRowSet) add(kc *keyCounts, late bool) *noMapRow {
	k := &kc.k
	tag, byTag := noMapTag(0, k.dup)
	var i int32
	var ok bool
	if byTag {
		i, ok = s.index.get(k.Addr, tag)
	} else {
		i, ok = s.rare[noMapRank{k.Addr, 0, k.dup}]
	}
	if ok {
		r := &s.rows[i]
		if r.late == late && compareKeyCounts(*kc, r.firstKey()) < 0 {
			r.first, r.firstEvent, r.firstLevel = kc.c, int32(k.Event), packLevel(k.Kernel, k.Hyper)
		}
		return r
	}
	i = int32(len(s.rows))
	s.rows = append(s.rows, noMapRow{addr: k.Addr, dup: k.dup, late: late, first: kc.c, firstEvent: int32(k.Event), firstLevel: packLevel(k.Kernel, k.Hyper)})
	if byTag {
		s.index.set(k.Addr, tag, i)
	} else {
		if s.rare == nil {
			s.rare = make(map[noMapRank]int32)
		}
		s.rare[noMapRank{k.Addr, 0, k.dup}] = i
	}
	return &s.rows[i]
}

// rowRef is a line of a table: the row rows[i] of tableLines, or with
// shard >= 0 the row noMap[shard][i].
type rowRef struct {
	shard int32
	i     int32
}

// tableLines is a table's rows in perf's order: rows, and the rows
// without a map kept apart (each shard's sorted), merged in order.
type tableLines struct {
	rows  []*tableRow
	noMap [][]noMapRow
	order []rowRef // nil when there are no noMap rows: rows's order
}

// mergeLines returns rows and noMap's rows merged in order.
func mergeLines(rows []*tableRow, noMap [][]noMapRow) tableLines {
	l := tableLines{rows: rows, noMap: noMap}
	n := len(rows)
	for _, s := range noMap {
		n += len(s)
	}
	if n == len(rows) {
		return l
	}
	l.order = make([]rowRef, 0, n)
	at := make([]int, len(noMap)) // each shard's next row
	r := 0                        // rows's
	for len(l.order) < n {
		// The least of the shards' next rows, then whether rows's next
		// comes before it.
		best := -1
		for s, i := range at {
			if i < len(noMap[s]) && (best < 0 || compareNoMapRows(&noMap[s][i], &noMap[best][at[best]]) < 0) {
				best = s
			}
		}
		if r < len(rows) && (best < 0 || beforeNoMapRow(rows[r], &noMap[best][at[best]])) {
			l.order = append(l.order, rowRef{-1, int32(r)})
			r++
			continue
		}
		l.order = append(l.order, rowRef{int32(best), int32(at[best])})
		at[best]++
	}
	return l
}

// len returns the number of lines.
func (l *tableLines) len() int {
	if l.order == nil {
		return len(l.rows)
	}
	return len(l.order)
}

// at returns line i: a row, or a row without a map.
func (l *tableLines) at(i int) (*tableRow, *noMapRow) {
	if l.order == nil {
		return l.rows[i], nil
	}
	ref := l.order[i]
	if ref.shard < 0 {
		return l.rows[ref.i], nil
	}
	return nil, &l.noMap[ref.shard][ref.i]
}
