package perfdata

import (
	"errors"
	"fmt"
)

// A FormatError reports perf.data input that cannot be read: the file
// offset of the header field, section or record at fault and what was
// wrong, as debug/elf's FormatError does for ELF. Its message says
// "perfdata: …" and names the offset itself; Open adds the file name.
type FormatError struct {
	File string // the file's name, when Open read it
	Off  int64  // the file offset of what is at fault
	Msg  string // the message after "perfdata: "
	Err  error  // the underlying error, if any
}

func (e *FormatError) Error() string {
	if e.File != "" {
		return "perfdata: " + e.Msg + " (file " + e.File + ")"
	}
	return "perfdata: " + e.Msg
}

func (e *FormatError) Unwrap() error { return e.Err }

// formatError returns a FormatError at file offset off whose message is
// format (fmt.Errorf's, %w included) applied to args.
func formatError[T ~int | ~int64 | ~uint64](off T, format string, args ...any) *FormatError {
	err := fmt.Errorf(format, args...)
	return &FormatError{Off: int64(off), Msg: err.Error(), Err: errors.Unwrap(err)}
}
