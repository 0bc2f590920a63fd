package kmodsec

import (
	"fmt"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// FromPerfData returns the KMOD_SEC_MAP records of type typ in a perf.data
// recording, in file order, decoded with the recording's byte order and
// sample_id trailer size. perfdata delivers a type-83 record as an
// ordinary record unless it is a real COMPRESSED2 (the recording has the
// COMPRESSED feature and the payload is zstd), so the proposal's number
// and perf's later use of it are told apart.
func FromPerfData(r *perfdata.Reader, typ uint32) ([]Record, error) {
	var recs []Record
	for r.Next() {
		u, ok := r.Record().(*perfdata.Unknown)
		if !ok || uint32(u.Type) != typ {
			continue
		}
		raw := r.Raw()
		rec, err := Decode(raw.Data, raw.ByteOrder, raw.IDHdrSize)
		if err != nil {
			return recs, fmt.Errorf("kmodsec: record at file offset %#x: %w", raw.Offset, err)
		}
		recs = append(recs, rec)
	}
	return recs, r.Err()
}
