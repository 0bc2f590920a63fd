package unwind

import (
	"errors"
	"fmt"
)

// CFIError is malformed call-frame information: what was being read and
// the offset, within its section, of the byte that could not be used.
type CFIError struct {
	Section string // ".eh_frame", ".eh_frame_hdr", ".debug_frame" or "expr"
	Offset  uint64
	What    string
}

func (e *CFIError) Error() string {
	return fmt.Sprintf("unwind: bad %s at offset %#x: %s", e.Section, e.Offset, e.What)
}

// Stop reasons: the errors a step ends the unwind with, as libunwind's
// return codes are told apart by perf (which ignores them all).
var (
	// ErrNoMap: no map holds the pc, or its file cannot be read
	// (perf's find_proc_info returns -EINVAL).
	ErrNoMap = errors.New("unwind: no readable map at pc")
	// ErrNoInfo: the binary's tables do not cover the pc (UNW_ENOINFO);
	// the step falls back to the PLT and frame-pointer heuristics.
	ErrNoInfo = errors.New("unwind: no unwind info for pc")
	// ErrMemory: a read outside the copied stack and every readable map.
	ErrMemory = errors.New("unwind: memory not readable")
	// ErrBadReg: a register the sample did not record, or a rule naming
	// a register that does not exist (UNW_EBADREG).
	ErrBadReg = errors.New("unwind: register not available")
	// ErrBadFrame: the step changed neither pc nor CFA (UNW_EBADFRAME).
	ErrBadFrame = errors.New("unwind: frame did not change")
)
