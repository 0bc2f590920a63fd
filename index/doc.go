// Package index holds kernel and process address maps the way Linux perf
// does (tools/perf/util/maps.c, symbol.c), on a B-tree instead of perf's
// sorted array.
//
// All ranges are half-open [Start, End) in unsigned 64-bit arithmetic.
// Stored maps never overlap and are never empty, so a lookup is a single
// successor query on the end address. The operations reproduce perf
// mainline's results:
//
//   - [Maps.FixupOverlapAndInsert]: the new map wins; existing maps it
//     overlaps are trimmed, split or removed (user mmaps, BPF programs,
//     module sections).
//   - [Maps.MergeIn]: existing maps win; the new map is cut into the gaps
//     between them (kcore segments).
//   - [LoadKcore]: kernel maps rebuilt from /proc/kcore program headers,
//     with the kernel map being the segment that holds the kernel text
//     (perf v6.10+, "replacement first").
//
// [Maps.Find] descends the tree until enough lookups follow a change to
// pay for a [Snapshot], a flat copy whose ends form a search tree of
// cache-line blocks, and answers from that until the next change.
//
// The package does no I/O. Package listref implements the same rules on a
// linked list; it is the oracle the tests compare against.
package index
