package attrib

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// ownVDSO returns this process's vdso image, read once: perf symbolizes
// a recording's [vdso] map with its own process's vdso, which it copies
// to a temporary file (machine__findnew_vdso, vdso.c), unless the
// recording's build id for [vdso] says otherwise. nil when there is none.
var ownVDSO = sync.OnceValue(func() []byte {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer maps.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, " [vdso]") {
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, _ := strings.Cut(rng, "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start || end-start > 1<<24 {
			return nil
		}
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil
		}
		defer mem.Close()
		b := make([]byte, end-start)
		if _, err := mem.ReadAt(b, int64(start)); err != nil {
			return nil
		}
		return b
	}
	return nil
})

// OwnVDSO returns this process's vdso image, the one Run symbolizes a
// recording's [vdso] map with (as perf uses its own); nil when there is
// none.
func OwnVDSO() []byte { return ownVDSO() }

// vdsoImage returns the vdso image [vdso] maps are read with:
// Options.VDSO, else this process's.
func (s *symbolizer) vdsoImage() []byte {
	if s.vdso != nil {
		return s.vdso
	}
	return ownVDSO()
}

// vdsoTable returns the symbols of the vdso image img when the recording
// names no other vdso by build id (id, the recording's, may be empty);
// nil otherwise.
func vdsoTable(img, id []byte) *symbols.Table {
	if img == nil {
		return nil
	}
	if len(id) > 0 {
		f, err := elf.NewFile(bytes.NewReader(img))
		if err != nil || !bytes.Equal(symbols.BuildID(f), id) {
			return nil
		}
	}
	tmp, err := os.CreateTemp("", "kbench-vdso-*.so")
	if err != nil {
		return nil
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(img)
	if cerr := tmp.Close(); err != nil || cerr != nil {
		return nil
	}
	t, err := symbols.ELF(tmp.Name())
	if err != nil {
		return nil
	}
	return t
}
