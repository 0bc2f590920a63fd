// Command cutattrs writes a copy of a perf.data recording whose
// perf_event_attr entries are cut to 128 bytes, the size perf 6.1 knows:
// perf 6.3 and later write 136 or 144 (config3, config4), and perf 6.1's
// read_attr refuses a file whose attrs are larger than its own
// ("incompatible file format"). scripts/foreign.sh compares such
// recordings with perf on their cut copies; kbench reads the originals and
// prints the same.
//
// The attrs section holds attrs.size / attr_size entries of struct
// perf_file_attr { struct perf_event_attr attr; struct perf_file_section
// ids; } (tools/perf/util/header.c), attr_size being attr.size + 16. The
// copy keeps the section where it is, rewrites each entry as its first
// 128 bytes (attr.size 128) and its ids, zeroes the freed tail, and sets
// attr_size to 144 and attrs.size to n × 144: nothing else moves. A cut
// byte that is not zero is reported. Little-endian file-mode recordings
// only.
//
//	go run ./scripts/cutattrs IN OUT
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

const (
	attrSize     = 128           // PERF_ATTR_SIZE_VER7: sizeof(struct perf_event_attr) in perf 6.1
	fileAttrSize = attrSize + 16 // and its ids section
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/cutattrs IN OUT")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err == nil {
		var n int
		if n, err = cut(data); err == nil {
			err = os.WriteFile(os.Args[2], data, 0o644)
		}
		if err == nil {
			fmt.Printf("%s: %d attrs cut to %d bytes\n", os.Args[2], n, attrSize)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cutattrs: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// cut cuts data's attrs in place and returns how many there are.
func cut(data []byte) (int, error) {
	le := binary.LittleEndian
	if len(data) < 104 || string(data[:8]) != "PERFILE2" || le.Uint64(data[8:]) != 104 {
		return 0, errors.New("not a little-endian file-mode perf.data")
	}
	size, off, total := le.Uint64(data[16:]), le.Uint64(data[24:]), le.Uint64(data[32:])
	switch {
	case size <= fileAttrSize:
		return 0, fmt.Errorf("attrs of %d bytes with their ids: nothing to cut", size)
	case total%size != 0 || off+total > uint64(len(data)):
		return 0, fmt.Errorf("an attrs section of %d bytes at %#x does not hold %d-byte entries", total, off, size)
	}
	sec := data[off : off+total]
	var out []byte
	for e := uint64(0); e < total; e += size {
		entry := slices.Clone(sec[e : e+size])
		if got := uint64(le.Uint32(entry[4:])); got+16 != size {
			return 0, fmt.Errorf("the attr at %#x says %d bytes, the header %d", off+e, got, size-16)
		}
		if slices.ContainsFunc(entry[attrSize:size-16], func(b byte) bool { return b != 0 }) {
			fmt.Fprintf(os.Stderr, "cutattrs: the attr at %#x loses nonzero bytes %x\n", off+e, entry[attrSize:size-16])
		}
		le.PutUint32(entry[4:], attrSize)
		out = append(append(out, entry[:attrSize]...), entry[size-16:]...)
	}
	clear(sec)
	copy(sec, out)
	le.PutUint64(data[16:], fileAttrSize)
	le.PutUint64(data[32:], uint64(len(out)))
	return int(total / size), nil
}
