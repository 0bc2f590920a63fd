// Package filemap maps files into memory read-only, for the readers
// that would otherwise copy large files onto the heap: a mapped page
// counts in the process's resident size only once it is read, and
// DropPages gives read pages back to the page cache.
package filemap

import (
	"os"
	"unsafe"
)

// Map maps n bytes of f from offset off (a multiple of the page size)
// read-only; errors.ErrUnsupported where the system has no mmap. n must
// be above 0.
func Map(f *os.File, off int64, n int) ([]byte, error) { return mapFile(f, off, n) }

// Unmap undoes Map: b must be a whole mapping Map returned, and nothing
// may read it afterwards.
func Unmap(b []byte) error { return unmapFile(b) }

// DropPages releases the pages of b, part of a mapping Map returned,
// from the process's memory: they stay in the page cache, and reading
// them again faults them back in. It does nothing where Map fails.
func DropPages(b []byte) { dropPages(b) }

// Faulted reports whether v, a value recovered from a panic, is a fault
// reading one of mappings (with debug.SetPanicOnFault set): the mapped
// file was truncated under its mapping.
func Faulted(v any, mappings [][]byte) bool {
	f, ok := v.(interface{ Addr() uintptr })
	if !ok {
		return false
	}
	addr := f.Addr()
	for _, m := range mappings {
		if len(m) > 0 {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
			if addr >= start && addr-start < uintptr(len(m)) {
				return true
			}
		}
	}
	return false
}

// Populate maps the pages of b, part of a mapping Map returned, into
// the process's memory in one system call, for a reader about to read
// all of them: a page faulted in on its own costs a trap each. Best
// effort: nothing happens where the system cannot.
func Populate(b []byte) { populate(b) }
