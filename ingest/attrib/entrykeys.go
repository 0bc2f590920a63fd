package attrib

import "github.com/kmapindex/kmapindex/ingest/symbols"

// entryKeys are a children table's entry keys, without pointers: their
// DSO and symbol names are indexes into names. A gcc build's -a -g
// recording has 514 k entries; as Keys (64 bytes, two strings each) the
// collector marked them all at every collection. Both grow in chunks
// that never move, so that a prefix handed to the replay stays valid.
type entryKeys struct {
	keys  chunked[accKey]
	names chunked[string] // names.at(0) is symbols.Unknown
	ids   map[string]uint32
}

// accKey is a Key with its names' indexes.
type accKey struct {
	addr          uint64
	event, dup    int32
	dso, sym      uint32
	kernel, hyper bool
}

// len returns the number of keys.
func (k *entryKeys) len() int { return k.keys.len() }

// at returns key i.
func (k *entryKeys) at(i int32) Key {
	a := k.keys.ptr(i)
	return Key{DSO: k.name(a.dso), Sym: k.name(a.sym), Kernel: a.kernel, Hyper: a.hyper, Addr: a.addr, Event: int(a.event), dup: a.dup}
}

// name returns the name of index id.
func (k *entryKeys) name(id uint32) string {
	if id == 0 {
		return symbols.Unknown
	}
	return k.names.at(int32(id))
}

// ptr returns the address of key i's compact form.
func (k *entryKeys) ptr(i int32) *accKey { return k.keys.ptr(i) }

// append appends key x and returns its index.
func (k *entryKeys) append(x Key) int32 {
	return k.keys.append(accKey{addr: x.Addr, event: int32(x.Event), dup: x.dup, dso: k.id(x.DSO), sym: k.id(x.Sym), kernel: x.Kernel, hyper: x.Hyper})
}

// id returns the index of name s, adding it if new.
func (k *entryKeys) id(s string) uint32 {
	if s == symbols.Unknown {
		return 0
	}
	if id, ok := k.ids[s]; ok {
		return id
	}
	if k.names.len() == 0 {
		k.names.append(symbols.Unknown)
		k.ids = make(map[string]uint32)
	}
	id := uint32(k.names.append(s))
	k.ids[s] = id
	return id
}

// prefix returns the first n keys and the names they index, which later
// appends leave alone. The names map stays the caller's.
func (k *entryKeys) prefix(n int) entryKeys {
	return entryKeys{keys: k.keys.prefix(n), names: k.names.prefix(k.names.len())}
}
