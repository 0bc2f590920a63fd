package perfdata

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

const (
	zstdMaxWindow = 64 << 20  // largest zstd window accepted
	zstdChunk     = 256 << 10 // output read per call; more than a zstd block (128 KiB)
	// zstdMaxOut bounds the output of one compressed record when the
	// recording does not say its mmap size (perf record compresses one
	// ring-buffer read at a time, and perf's decompression buffer is
	// that mmap size, COMPRESSED's mmap_len).
	zstdMaxOut = 4 << 20
	// zstdRatio and zstdSlack bound all the output of a recording:
	// at most zstdRatio times its compressed input plus zstdSlack, so a
	// file of many small bombs cannot make unbounded work either (4 GB
	// a MB at most). Real recordings go far past 64x: the mostly empty
	// user stacks of a --call-graph dwarf recording (KDAB perfparser's
	// cpp-inlining test data) decompress 126x.
	zstdRatio = 4096
	zstdSlack = 1 << 20
)

// maxOut is the output one compressed record may produce: the
// recording's mmap_len, plus 64 KiB for a partial record carried over
// (perf's decomp_last_rem), else zstdMaxOut.
func (z *zstream) maxOut() int {
	if c := z.r.features.Compression; c != nil && c.MmapLen > 0 {
		return int(c.MmapLen) + 64<<10
	}
	return zstdMaxOut
}

// zstream decompresses the payloads of COMPRESSED records into one stream
// of records, as perf's perf_session__process_compressed_event does: the
// decoder state and any partial record carry over from one compressed record
// to the next.
//
// perf compresses each ring-buffer chunk with ZSTD_compressStream followed
// by ZSTD_flushStream, so the data of one compressed record decodes fully
// without the next one, except when the output was split because a record
// was full; the split parts are consecutive records. The decoder runs in
// synchronous mode, reads exactly the block bytes it needs, and never asks
// for input while it still holds output, so "input exhausted" means "all its
// records are out".
type zstream struct {
	r     *Reader
	dec   *zstd.Decoder
	in    []byte // unread compressed input (aliases the raw record buffer)
	out   []byte // decompressed bytes not yet delivered: out[start:]
	start int
	off   int64 // offset of the compressed record being decoded
	nout  int   // bytes decompressed since the compressed record at off
	// totalIn and totalOut count all compressed input and all output.
	totalIn, totalOut int64
	err               error
}

var errStarved = errors.New("zstd data continues beyond the compressed record, but the next record is not compressed")

// feedCompressed makes payload (part of r.recBuf) the next zstd input.
func (r *Reader) feedCompressed(payload []byte, off int64) error {
	if r.z == nil {
		z := &zstream{r: r}
		dec, err := zstd.NewReader(z, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return formatError(off, "compressed record at file offset %#x: %w", off, err)
		}
		z.dec = dec
		r.z = z
	}
	r.z.in = payload
	r.z.off, r.z.nout = off, 0
	r.z.totalIn += int64(len(payload))
	return nil
}

// Read feeds compressed input to the decoder.
func (z *zstream) Read(p []byte) (int, error) {
	for len(z.in) == 0 {
		// The decoder needs more than this record had: it must
		// continue in the next record, which must be compressed.
		rec, off, err := z.r.readRaw()
		if err == errEnd {
			return 0, fmt.Errorf("end of data inside a zstd block")
		}
		if err != nil {
			return 0, err
		}
		payload, ok := z.r.compressedPayload(rec)
		if !ok {
			return 0, errStarved
		}
		z.r.countCompressed(rec)
		z.in, z.off, z.nout = payload, off, 0
		z.totalIn += int64(len(payload))
	}
	n := copy(p, z.in)
	z.in = z.in[n:]
	return n, nil
}

// pending returns the number of decompressed bytes not yet delivered.
func (z *zstream) pending() int { return len(z.out) - z.start }

// next returns the next complete decompressed record, or ok == false when
// the current compressed input is used up.
func (z *zstream) next() (rec []byte, off int64, ok bool, err error) {
	if z.err != nil {
		return nil, 0, false, z.err
	}
	for {
		if b := z.out[z.start:]; len(b) >= 8 {
			size := int(z.r.bo.Uint16(b[6:]))
			if size < 8 {
				z.err = formatError(z.off, "record inside the compressed record at file offset %#x: size %d is smaller than its 8-byte header", z.off, size)
				return nil, 0, false, z.err
			}
			if size <= len(b) {
				z.start += size
				return b[:size], z.off, true, nil
			}
		}
		if len(z.in) == 0 {
			return nil, 0, false, nil
		}
		// Move the partial record to the front and decode more.
		n := copy(z.out, z.out[z.start:])
		z.out, z.start = z.out[:n], 0
		if cap(z.out)-n < zstdChunk {
			z.out = append(make([]byte, 0, n+zstdChunk+1<<16), z.out...)
		}
		m, err := z.dec.Read(z.out[n : n+zstdChunk])
		z.out = z.out[:n+m]
		z.nout += m
		z.totalOut += int64(m)
		switch {
		case err != nil:
		case z.nout > z.maxOut():
			err = fmt.Errorf("more than %d bytes of output from one record (the recording's mmap size bounds it)", z.maxOut())
		case z.totalOut > zstdRatio*z.totalIn+zstdSlack:
			err = fmt.Errorf("%d bytes of output from %d compressed bytes, more than %dx: a decompression bomb, not a perf recording", z.totalOut, z.totalIn, zstdRatio)
		}
		if err != nil {
			z.err = formatError(z.off, "decompressing the compressed record at file offset %#x: %w", z.off, err)
			return nil, 0, false, z.err
		}
	}
}
