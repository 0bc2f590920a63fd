//go:build !linux

package perfevent

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// Session is a set of open perf events. perf_event_open is Linux's: on
// this system Open always fails, and there is no Session to use.
type Session struct {
	attr perfdata.Attr
	opts Options
}

// errNoPerfEvents is Open's error off Linux.
var errNoPerfEvents = fmt.Errorf("perfevent: %w: perf_event_open exists only on Linux, not %s", ErrNotPermitted, runtime.GOOS)

// Open fails: there are no perf events off Linux. Its error wraps
// ErrNotPermitted.
func Open(opts Options) (*Session, error) { return nil, errNoPerfEvents }

// The methods below keep the API of the Linux Session; with no way to
// make a Session they are never reached but through a zero value.

func (s *Session) Attr() *perfdata.Attr                          { return &s.attr }
func (s *Session) CPUs() []int                                   { return s.opts.CPUs }
func (s *Session) Pid() int                                      { return 0 }
func (s *Session) Start() error                                  { return errNoPerfEvents }
func (s *Session) Exited() <-chan struct{}                       { return nil }
func (s *Session) CommandErr() error                             { return nil }
func (s *Session) Stats() Stats                                  { return Stats{} }
func (s *Session) Poll(time.Duration) (bool, error)              { return false, errNoPerfEvents }
func (s *Session) ReadRound(func(*Event) error) (int, error)     { return 0, errNoPerfEvents }
func (s *Session) LostSamples() ([]LostCount, error)             { return nil, errNoPerfEvents }
func (s *Session) Run(context.Context, func(*Event) error) error { return errNoPerfEvents }
func (s *Session) Close() error                                  { return nil }
func (s *Session) Synthesize(func(perfdata.Record) error) ([]string, error) {
	return nil, errNoPerfEvents
}
