package attrib

import (
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// stateKey identifies what a sample is counted against: a map (by value,
// as Result.ByMap has it) and whether it was resolved with a kernel
// cpumode.
type stateKey struct {
	m      index.Map
	kernel bool
}

// mapState is what attribution keeps per map: its sample set and its
// counts per symbol (symCounts), per table the map's symbols
// came from (a kernel map's table changes when the kernel loads) and per
// event; addresses without a symbol are counted by address.
type mapState struct {
	key   stateKey
	bm    *roaring.Bitmap
	table *symbols.Table // the table of the last sample, if final
	final bool
	// rowClass is, once final, the map's number in the rowCache of a
	// table by sort keys (rowCache.classOf; 0 until asked).
	rowClass int32
	tables   []*tableCounts
	unsym    []*addrCounts // [event]
	acc      accState      // with Options.Children
}

// addrCounts counts samples per address, for addresses without a
// symbol.
type addrCounts struct {
	at    *addrTable // each address's index in cells (tag 0)
	cells countCells
}

type tableCounts struct {
	t       *symbols.Table
	byEvent []*symCounts // [event]
}

// symCounts counts samples per symbol of a table: a slot per symbol,
// the counts of the symbols counted at all packed behind. A table has
// 100 k+ symbols (the kernel's) of which a recording hits a few
// thousand: 4 bytes a symbol instead of a Counts' 16 took the peak RSS
// of the -a -g children table from 84 to 74 MB. The symbols counted are
// listed in count order (syms), and until more than fewSymbols are, the
// list is all there is: most maps hit a few symbols, and each took a
// slot array the size of its table (the kernel's slots were 1.5 MB of a
// 53-sample report's 25 MB of allocations; most of their pages were
// never touched, so its peak RSS fell only 0.25 MB).
//
// Between the two, a table of more than slotTable symbols (the kernel's)
// finds its counts through a map until more than manySymbols are
// counted: its slot array (488 KB for the kernel's) was the largest part
// of a small recording's children table above perf's peak RSS.
type symCounts struct {
	n      int             // the table's symbols
	slot   []int32         // [symbol index] 1 + its index in counts; 0: none yet; nil while few
	syms   []int32         // the symbol of each count, in counts' order
	some   map[int32]int32 // past fewSymbols, until slots: each symbol's index in counts
	counts countCells      // in the order first counted
}

// slotTable is the size of the largest table whose symbols get slots as
// soon as more than fewSymbols are counted (32 KiB of slots);
// manySymbols is how many a larger table's map holds before they do.
const (
	slotTable   = 8192
	manySymbols = 512
)

// countCells is a list of Counts whose cells never move: it grows by
// blocks of 4, 8, 16, ... cells, so that a cell's address stays valid
// (the attributor's sample cache keeps it, and counts a repeated sample
// there without finding its symbol's count again).
type countCells struct {
	blocks [][]Counts
	n      int
}

// cellBlock returns the block of cell j and j's index in it.
func cellBlock(j int) (b, off int) {
	b = bits.Len(uint(j)/4+1) - 1
	return b, j - 4*(1<<b-1)
}

// append adds a cell holding c and returns it.
func (cs *countCells) append(c Counts) *Counts {
	b, off := cellBlock(cs.n)
	if b == len(cs.blocks) {
		cs.blocks = append(cs.blocks, make([]Counts, 4<<b))
	}
	cs.n++
	cell := &cs.blocks[b][off]
	*cell = c
	return cell
}

// at returns cell j.
func (cs *countCells) at(j int) *Counts {
	b, off := cellBlock(j)
	return &cs.blocks[b][off]
}

// fewSymbols is how many symbols a symCounts lists before it takes a
// slot per symbol.
const fewSymbols = 16

// add counts c for symbol i and returns the cell it counted it in.
func (s *symCounts) add(i int, c Counts) *Counts {
	if s.slot == nil && s.some == nil {
		for k, x := range s.syms {
			if int(x) == i {
				cell := s.counts.at(k)
				cell.add(c)
				return cell
			}
		}
		if len(s.syms) < fewSymbols {
			s.syms = append(s.syms, int32(i))
			return s.counts.append(c)
		}
		if s.n > slotTable {
			s.some = make(map[int32]int32, 2*fewSymbols)
			for k, x := range s.syms {
				s.some[x] = int32(k)
			}
		} else {
			s.slots()
		}
	}
	if s.some != nil {
		if k, ok := s.some[int32(i)]; ok {
			cell := s.counts.at(int(k))
			cell.add(c)
			return cell
		}
		if len(s.some) < manySymbols {
			s.some[int32(i)] = int32(s.counts.n)
			s.syms = append(s.syms, int32(i))
			return s.counts.append(c)
		}
		s.slots()
	}
	j := s.slot[i]
	if j == 0 {
		s.slot[i] = int32(s.counts.n + 1)
		s.syms = append(s.syms, int32(i))
		return s.counts.append(c)
	}
	cell := s.counts.at(int(j - 1))
	cell.add(c)
	return cell
}

// slots gives each symbol a slot, from the list of those counted.
func (s *symCounts) slots() {
	s.slot = make([]int32, s.n)
	for k, x := range s.syms {
		s.slot[x] = int32(k + 1)
	}
	s.some = nil
}

// each calls fn with each symbol counted, by index, and its count, in the
// order first counted. It goes through the symbols counted, not the
// slots: the kernel's table has 100 k+, and summing the -a table's rows
// took 7.7 ms through every map's slots, 5.4 through its symbols counted
// (BenchmarkStageSum).
func (s *symCounts) each(fn func(i int, n Counts)) {
	for k, x := range s.syms {
		fn(int(x), *s.counts.at(k))
	}
}

// counter counts samples per map and symbol. Lookups of a map's state go
// through a small direct-mapped cache keyed by the map's range: a
// system-wide stream changes map on most samples, but among few maps.
type counter struct {
	states map[stateKey]*mapState
	order  []*mapState // in first-seen order
	cache  [256]*mapState
	// unknown counts the samples in no map by address and event (level
	// left out: perf's dso and sym keys find two such entries equal by
	// their address alone).
	unknown map[Key]unknownCount
}

// unknownCount is the count of an address in no map, with the key of its
// first sample, whose level the row shows, and whether a filtered (guest)
// sample made it, which hides the row.
type unknownCount struct {
	n      Counts
	first  Key
	hidden bool
}

// addUnknown counts a sample in no map, of key k (with its level),
// filtered (hidden) or not.
func (c *counter) addUnknown(k Key, hidden bool, n Counts) {
	id := noLevel(k)
	x, ok := c.unknown[id]
	if !ok {
		x.first, x.hidden = k, hidden
	}
	x.n.add(n)
	c.unknown[id] = x
}

func newCounter() *counter {
	return &counter{states: make(map[stateKey]*mapState), unknown: make(map[Key]unknownCount)}
}

// state returns the state of map m resolved in kernel mode or not.
func (c *counter) state(m index.Map, kernel bool) *mapState {
	slot := &c.cache[((m.Start^m.End>>3)*0x9e3779b97f4a7c15)>>56]
	if st := *slot; st != nil && st.key.m == m && st.key.kernel == kernel {
		return st
	}
	k := stateKey{m, kernel}
	st := c.states[k]
	if st == nil {
		st = &mapState{key: k, bm: roaring.New()}
		c.states[k] = st
		c.order = append(c.order, st)
	}
	*slot = st
	return st
}

// add counts a sample of event in st's map at symbol index i of table t
// (i < 0: no symbol, counted at addr, the map-relative address), and
// returns the cell it counted it in: the next sample of the same event
// there may be counted in it directly.
func (st *mapState) add(t *symbols.Table, i int, addr uint64, event int, c Counts) *Counts {
	if i < 0 {
		for len(st.unsym) <= event {
			st.unsym = append(st.unsym, nil)
		}
		m := st.unsym[event]
		if m == nil {
			m = &addrCounts{at: newAddrTable(0)}
			st.unsym[event] = m
		}
		if j, ok := m.at.get(addr, 0); ok {
			cell := m.cells.at(int(j))
			cell.add(c)
			return cell
		}
		m.at.set(addr, 0, int32(m.cells.n))
		return m.cells.append(c)
	}
	var tc *tableCounts
	if n := len(st.tables); n > 0 && st.tables[n-1].t == t {
		tc = st.tables[n-1]
	} else {
		for _, x := range st.tables {
			if x.t == t {
				tc = x
			}
		}
		if tc == nil {
			tc = &tableCounts{t: t}
			st.tables = append(st.tables, tc)
		}
	}
	for len(tc.byEvent) <= event {
		tc.byEvent = append(tc.byEvent, nil)
	}
	counts := tc.byEvent[event]
	if counts == nil {
		counts = &symCounts{n: t.Len()}
		tc.byEvent[event] = counts
	}
	return counts.add(i, c)
}

// mapSymCount is a count of counter.entries.
type mapSymCount struct {
	ms MapSym
	c  Counts
}

// size is how many counts each visits.
func (c *counter) size() int {
	n := len(c.unknown)
	for _, st := range c.order {
		n += st.stateCounts()
	}
	return n
}

// each calls fn with the counts by map, symbol and event, as
// Result.ByMapSym holds them (a MapSym may come more than once: they add
// up), in no particular order; *ms is valid during the call only. It sets
// res.ByMap and hides the rows of hidden unknown samples.
func (c *counter) each(res *Result, fn func(ms *MapSym, n Counts)) {
	c.setByMap(res)
	eachInStates(c.order, fn)
	c.eachUnknown(res, fn)
}

// setByMap sets res.ByMap: each map's sample set.
func (c *counter) setByMap(res *Result) {
	for _, st := range c.order {
		if !st.bm.IsEmpty() {
			res.ByMap[st.key.m] = st.bm
		}
	}
}

// eachInStates is each over the maps of states alone: it writes nothing
// but what fn does.
func eachInStates(states []*mapState, fn func(ms *MapSym, n Counts)) {
	for _, st := range states {
		ms := MapSym{Map: st.key.m, Kernel: st.key.kernel}
		for _, tc := range st.tables {
			for ev, counts := range tc.byEvent {
				if counts == nil {
					continue
				}
				counts.each(func(i int, n Counts) {
					sym := tc.t.Symbol(i)
					ms.Sym, ms.Addr, ms.Event = sym.Name, sym.Start, ev
					fn(&ms, n)
				})
			}
		}
		for ev, m := range st.unsym {
			if m == nil {
				continue
			}
			m.at.each(func(addr uint64, _ uint32, j int32) {
				ms.Sym, ms.Addr, ms.Event = symbols.Unknown, addr, ev
				fn(&ms, *m.cells.at(int(j)))
			})
		}
	}
}

// eachUnknown is each over the samples in no map.
func (c *counter) eachUnknown(res *Result, fn func(ms *MapSym, n Counts)) {
	for k, u := range c.unknown {
		ms := MapSym{Sym: symbols.Unknown, Kernel: u.first.Kernel, Hyper: u.first.Hyper, Addr: k.Addr, Event: k.Event}
		fn(&ms, u.n)
		if u.hidden {
			res.hide(ms.Key())
		}
	}
}

// stateCounts returns how many counts st holds (size's share of it).
func (st *mapState) stateCounts() int {
	n := 0
	for _, tc := range st.tables {
		for _, counts := range tc.byEvent {
			if counts != nil {
				n += counts.counts.n
			}
		}
	}
	for _, m := range st.unsym {
		if m != nil {
			n += m.cells.n
		}
	}
	return n
}

// symSums are counts summed by (dso, symbol) key and by event.
type symSums struct {
	bySym   map[Key]Counts
	byEvent []Counts
}

func (s *symSums) add(ms *MapSym, n Counts) {
	k := ms.Key()
	c := s.bySym[k]
	c.add(n)
	s.bySym[k] = c
	for ms.Event >= len(s.byEvent) {
		s.byEvent = append(s.byEvent, Counts{})
	}
	s.byEvent[ms.Event].add(n)
}

// addSums adds o's sums to s's.
func (s *symSums) addSums(o symSums) {
	for k, x := range o.bySym {
		c := s.bySym[k]
		c.add(x)
		s.bySym[k] = c
	}
	for len(s.byEvent) < len(o.byEvent) {
		s.byEvent = append(s.byEvent, Counts{})
	}
	for ev, x := range o.byEvent {
		s.byEvent[ev].add(x)
	}
}

// sumBySym sums the counts each visits by (dso, symbol) key (the flat
// table's rows, Result.BySym) and by event, on two cores: the maps whose
// counts are the first half of the n size gives on this one, the others
// on another, whose sums are then added in. It is the last step of a
// run, and on one core it left the other idle: the 28,658 counts of a
// 2.61 M-sample -a table took 5.6 ms there, 3.7 ms now (medians of 11
// runs). The maps grow as they fill: sized for n counts up front (7,203
// rows), their fresh memory took longer to fault in than the sum.
func (c *counter) sumBySym(res *Result, n int) (map[Key]Counts, []Counts) {
	c.setByMap(res)
	h, half := 0, 0
	for h < len(c.order) && half < n/2 {
		half += c.order[h].stateCounts()
		h++
	}
	var other symSums
	done := make(chan struct{})
	go func() {
		defer close(done)
		other.bySym = make(map[Key]Counts)
		eachInStates(c.order[h:], other.add)
	}()
	sums := symSums{bySym: make(map[Key]Counts)}
	eachInStates(c.order[:h], sums.add)
	c.eachUnknown(res, sums.add)
	<-done
	sums.addSums(other)
	return sums.bySym, sums.byEvent
}

// entries lists what each visits, n of them (size).
func (c *counter) entries(res *Result, n int) []mapSymCount {
	out := make([]mapSymCount, 0, n)
	c.each(res, func(ms *MapSym, n Counts) { out = append(out, mapSymCount{*ms, n}) })
	return out
}
