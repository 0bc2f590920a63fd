package unwind

// RegCache is libunwind's register-state cache of an address space
// (struct dwarf_rs_cache, src/dwarf/Gparser.c of libunwind 1.6), which
// perf keeps one of per process (an unw_addr_space per maps, caching
// policy UNW_CACHE_GLOBAL) and flushes when the process execs
// (unwind__flush_access). It holds the rows of the last RegCacheSize DWARF
// steps that found one, keyed by the frame's ip as the cursor held it:
// not the address looked up, which is one less for a caller's frame.
// find_reg_state consults it before any lookup, so a later frame at that
// ip takes the cached row even where its own lookup would find another
// or none: a return address at the start of a function (after a call that
// ended the function before it, or a garbage word) takes the row of the
// function's entry, which a sample there looked up before, and the
// unwind goes on where the lookup alone would stop. Replacement is
// round-robin over the slots (rs_new). The zero value is empty; a flush
// (unw_flush_cache) is a new one.
type RegCache struct {
	ips  [RegCacheSize]uint64
	rows [RegCacheSize]*rowInfo
	// at finds an ip's slot: an open-addressed table (linear probing,
	// twice the slots) of 1 + the slot index, 0 for an empty place.
	// Hand-written: a Go map took 38 ns for a lookup and its insert on
	// a miss, this 18 ns, at every DWARF step.
	at   [2 * RegCacheSize]uint8
	head int // the slot rs_new fills next
}

// RegCacheSize is libunwind's default cache size
// (1 << DWARF_DEFAULT_LOG_UNW_CACHE_SIZE); perf does not change it.
const RegCacheSize = 1 << 7

// atMask masks a position in RegCache.at.
const atMask = 2*RegCacheSize - 1

// home is ip's first place in RegCache.at (Fibonacci hashing).
func home(ip uint64) int { return int((ip * 0x9e3779b97f4a7c15) >> 56) }

// lookup is rs_lookup: the row cached for ip, or nil.
func (c *RegCache) lookup(ip uint64) *rowInfo {
	for i := home(ip); ; i = (i + 1) & atMask {
		s := c.at[i]
		if s == 0 {
			return nil
		}
		if c.ips[s-1] == ip {
			return c.rows[s-1]
		}
	}
}

// insert is rs_new: ip's row takes the next slot round-robin, evicting
// the row there. ip is not cached (rows are inserted on a miss only).
func (c *RegCache) insert(ip uint64, r *rowInfo) {
	h := c.head
	c.head = (h + 1) % RegCacheSize
	if c.rows[h] != nil {
		c.forget(c.ips[h])
	}
	c.ips[h], c.rows[h] = ip, r
	i := home(ip)
	for c.at[i] != 0 {
		i = (i + 1) & atMask
	}
	c.at[i] = uint8(h + 1)
}

// forget removes cached ip's place from at, moving the places after it
// that probed past it back (deletion without tombstones).
func (c *RegCache) forget(ip uint64) {
	i := home(ip)
	for c.ips[c.at[i]-1] != ip {
		i = (i + 1) & atMask
	}
	for j := i; ; {
		j = (j + 1) & atMask
		s := c.at[j]
		if s == 0 {
			break
		}
		// The place at j stays unless its home lies cyclically
		// outside (i, j]: then i is on its probe path.
		k := home(c.ips[s-1])
		if i < j && i < k && k <= j || i > j && (i < k || k <= j) {
			continue
		}
		c.at[i] = s
		i = j
	}
	c.at[i] = 0
}
