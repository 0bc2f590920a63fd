// Package cacheline asks the processor to bring memory into its cache
// ahead of a load that would otherwise wait for it.
//
// A plain load can do that too, but it is an instruction like others: it
// retires only once its data has come, and the instructions behind it
// wait to retire with it. A prefetch instruction retires at once. Go has
// no way to emit one (the runtime's own is internal), hence the few
// lines of assembly; on other architectures Prefetch does nothing.
package cacheline

import "unsafe"

// Prefetch asks for the cache line holding *p, into every level of the
// cache, for reading. It never faults: an address the process cannot read
// is ignored.
func Prefetch[T any](p *T) { line(uintptr(unsafe.Pointer(p))) }
