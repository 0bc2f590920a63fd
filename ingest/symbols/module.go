package symbols

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"

	"github.com/ulikunitz/xz"
)

// MaxModuleBytes bounds a compressed module file's decompressed size
// (the largest modules of a distribution kernel, with their debug
// sections, are a few hundred MB).
const MaxModuleBytes = 1 << 30

// maxModuleBytes is the bound in force: MaxModuleBytes, lowered by tests.
var maxModuleBytes = MaxModuleBytes

// ReadModule reads the symbols of the kernel module file at path the way
// perf 6.1 loads a module DSO's (dso__load of a kmod DSO: symsrc__init,
// then dso__load_sym with kmodule set), which is ReadVmlinux's reading
// with no reference symbol: the build id checked when buildID is not
// empty, .symtab required (ErrStripped), symbols keyed by file offset
// (st_value plus the section's sh_offset in a relocatable module), the
// ones in ".text" the module DSO's (Text, fixed up), every other
// section's a DSO of its own (Sections). Reloc is 0.
//
// compression is the one perf gives the module by its file name
// (index.KmodCompression: "gz", "xz" or ""): with one, a file that is
// compressed so is decompressed first, at most MaxModuleBytes, and one
// that is not is read as it is (decompress_kmodule: a build-id cache
// entry may be a plain copy). Errors are *FileError values naming path.
func ReadModule(path, compression string, buildID []byte) (*Vmlinux, error) {
	f, err := openModule(path, compression)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readVmlinux(f, path, buildID, "", 0, true)
}

// openModule opens the module file at path as ELF, inflated first when
// compression names how and the file is so compressed (readCompressed).
// Errors are *FileError values naming path.
func openModule(path, compression string) (*elf.File, error) {
	data, compressed, err := readCompressed(path, compression)
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	if !compressed {
		return openELF(path)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	return f, nil
}

// Magic numbers of perf 6.1's gzip_is_compressed and lzma_is_compressed.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	xzMagic   = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
)

// readCompressed returns the bytes of the file at path inflated, when
// compression is "gz" or "xz" and the file starts with its magic;
// compressed is false (and data nil) otherwise.
func readCompressed(path, compression string) (data []byte, compressed bool, err error) {
	if compression != "gz" && compression != "xz" {
		return nil, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var head [6]byte
	n, _ := io.ReadFull(f, head[:])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, false, err
	}
	var r io.Reader
	switch {
	case compression == "gz" && bytes.HasPrefix(head[:n], gzipMagic):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, true, fmt.Errorf("gzip: %w", err)
		}
		r = zr
	case compression == "xz" && bytes.HasPrefix(head[:n], xzMagic):
		zr, err := xz.NewReader(f)
		if err != nil {
			return nil, true, fmt.Errorf("xz: %w", err)
		}
		r = zr
	default:
		return nil, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(r, int64(maxModuleBytes)+1))
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", compression, err)
	}
	if len(data) > maxModuleBytes {
		return nil, true, fmt.Errorf("%s: more than %d bytes decompressed", compression, maxModuleBytes)
	}
	return data, true, nil
}

// FileBuildID is perf 6.1's filename__read_build_id: the build id of the
// ELF file at path (elf_read_build_id's note sections), inflated first
// when compressed (compression as ReadModule takes it: a module's); nil
// when the file cannot be read or has none. dso__load reads a DSO's so
// when the recording gave it none.
func FileBuildID(path, compression string) []byte {
	f, err := openModule(path, compression)
	if err != nil {
		return nil
	}
	defer f.Close()
	return BuildID(f)
}
