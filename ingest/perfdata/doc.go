// Package perfdata is a streaming reader for the perf.data files written by
// Linux perf record.
//
// It reads both layouts perf writes: file mode (a 104-byte "PERFILE2" header
// followed by attribute, data and feature sections) and pipe mode (perf record
// -o -: a 16-byte header followed by nothing but records, the attributes and
// features among them). Files of either byte order are accepted; every field
// is decoded in the byte order of the recording, with the same per-field
// rules as perf's perf_event__swap_ops (u32 pairs such as pid/tid and cpu/res
// are two u32 values, strings are never swapped, and the perf_event_attr flag
// bit field of a big-endian recording has its bits allocated from the most
// significant end).
//
// Records are delivered one at a time:
//
//	r, err := perfdata.Open("perf.data")
//	if err != nil { ... }
//	defer r.Close()
//	for r.Next() {
//		switch rec := r.Record().(type) {
//		case *perfdata.Sample:
//			...
//		case *perfdata.Mmap:
//			...
//		}
//	}
//	if err := r.Err(); err != nil { ... }
//
// Memory use is bounded by the largest record (64 KiB, the limit of the u16
// size field), the zstd window of compressed recordings and the attributes
// and feature sections; the data section is never loaded whole. The value
// returned by Record and every slice reachable from it (Callchain, Raw,
// BuildID, ...) is owned by the Reader and valid only until the next call to
// Next; such slices are to be read, not written (a Callchain may be the
// record's own bytes, in a read-only mapping); strings are ordinary Go
// strings and may be kept. Raw returns the
// undecoded bytes of the current record for decoders of record types this
// package does not know (for example a private KMOD_SEC_MAP type number).
//
// PERF_RECORD_COMPRESSED (81) and PERF_RECORD_COMPRESSED2 (83) records are
// decompressed transparently, as perf does, into one continuous stream of
// records that may span compressed-record boundaries; the records inside are
// delivered in place of the compressed record with Info.Compressed set.
//
// Every offset and size read from the file is checked; malformed input gives
// an error that names the file offset and the field, never a panic.
package perfdata
