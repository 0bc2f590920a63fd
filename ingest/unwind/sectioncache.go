package unwind

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kmapindex/kmapindex/internal/filemap"
)

// SectionCache is a directory where OpenInlines keeps the compressed
// debug sections it inflated, so that the next report reads them
// instead: distribution debug files compress their DWARF, and inflating
// a libc's debug sections took 50 ms of CPU every DWARF report; with
// them cached, libc's inline records were ready 34 ms after the read
// began instead of 85-100 ms (traced). perf keeps no such cache (it has its build-id cache of the
// files themselves), and the answers are the same with or without it.
//
// A cached section is named by a hash of what identifies it: the file's
// path, size and modification time, and the section's offset, sizes
// and the compressed stream's last 8 bytes (zlib's checksum of the
// inflated bytes, zstd's last block); it is used only when its size is
// the section's. Files are written whole under a temporary name and
// renamed; the directory is kept under MaxBytes by removing the oldest.
// Any failure to read or write the cache only means inflating.
type SectionCache struct {
	Dir      string
	MaxBytes int64 // 0: DefaultSectionCacheBytes
}

// DefaultSectionCacheBytes is the default bound on a SectionCache.
const DefaultSectionCacheBytes = 1 << 30

// minCachedSection is the smallest inflated section worth a file (a
// variable for tests).
var minCachedSection uint64 = 64 << 10

// sectionCacheSuffix ends the names of cached sections (others in the
// directory are left alone).
const sectionCacheSuffix = ".sec"

// name returns the cache file name of section s of the file at path
// (fi, read through ra); false when s cannot be cached.
func (c *SectionCache) name(path string, fi os.FileInfo, ra io.ReaderAt, s *elf.Section) (string, bool) {
	if c == nil || c.Dir == "" || fi == nil || s.Size < minCachedSection || s.FileSize < 8 {
		return "", false
	}
	var tail [8]byte
	if _, err := ra.ReadAt(tail[:], int64(s.Offset+s.FileSize-8)); err != nil {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	var nums [6 * 8]byte
	for i, v := range []uint64{uint64(fi.Size()), uint64(fi.ModTime().UnixNano()), s.Offset, s.FileSize, s.Size, uint64(len(abs))} {
		binary.LittleEndian.PutUint64(nums[8*i:], v)
	}
	h.Write(nums[:])
	h.Write([]byte(abs))
	h.Write(tail[:])
	return filepath.Join(c.Dir, hex.EncodeToString(h.Sum(nil)[:16])+sectionCacheSuffix), true
}

// get returns the cached bytes of a section of size bytes, marking them
// used (trim removes the least recently used first). Where the system
// maps files they are the file mapped read-only, and mapping is that
// mapping (nil when the bytes were read): pages a reader never touches
// take no memory, and read ones can be dropped (filemap.DropPages). Cached files are written whole and
// renamed into place, never rewritten, so a mapping stays valid while
// others replace or remove the file.
func (c *SectionCache) get(name string, size uint64) (b, mapping []byte, ok bool) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, nil, false
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil || !fi.Mode().IsRegular() || uint64(fi.Size()) != size || size == 0 || size > maxSectionSize {
		return nil, nil, false
	}
	now := time.Now()
	_ = os.Chtimes(name, now, now) // best effort
	if m, err := filemap.Map(fh, 0, int(size)); err == nil {
		return m, m, true
	}
	b = make([]byte, size)
	if _, err := io.ReadFull(fh, b); err != nil {
		return nil, nil, false
	}
	return b, nil, true
}

// put caches a section of size bytes under name, making room for it
// first: fill writes the bytes. It reports false when it could not (or
// fill did).
func (c *SectionCache) put(name string, size uint64, fill func(io.Writer) bool) bool {
	if int64(size) > cmp.Or(c.MaxBytes, DefaultSectionCacheBytes) {
		return false
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return false
	}
	c.trim(int64(size))
	tmp, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return false
	}
	w := bufio.NewWriterSize(tmp, 64<<10)
	ok := fill(w) && w.Flush() == nil
	if err := tmp.Close(); err != nil {
		ok = false
	}
	if ok && os.Rename(tmp.Name(), name) == nil {
		return true
	}
	os.Remove(tmp.Name())
	return false
}

// trim removes the oldest cached sections until adding more bytes keeps
// the directory under its bound.
func (c *SectionCache) trim(more int64) {
	limit := cmp.Or(c.MaxBytes, DefaultSectionCacheBytes)
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	type cached struct {
		name string
		size int64
		mod  int64
	}
	var files []cached
	total := more
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), sectionCacheSuffix) {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, cached{e.Name(), info.Size(), info.ModTime().UnixNano()})
			total += info.Size()
		}
	}
	slices.SortFunc(files, func(a, b cached) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files {
		if total <= limit {
			break
		}
		if os.Remove(filepath.Join(c.Dir, f.name)) == nil {
			total -= f.size
		}
	}
}
