package perfevent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/perfevent"
)

// A minimal profiler loop: sample every CPU for a second, apply the side
// band (here: count the maps) and count the samples by CPU mode. It needs
// perf_event_open permission, so it has no checked output.
func Example() {
	s, err := perfevent.Open(perfevent.Options{Freq: 999})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	maps := 0
	if _, err := s.Synthesize(func(r perfdata.Record) error {
		if _, ok := r.(*perfdata.Mmap); ok {
			maps++
		}
		return nil
	}); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	byMode := map[perfdata.CPUMode]int{}
	err = s.Run(ctx, func(ev *perfevent.Event) error {
		switch x := ev.Record.(type) {
		case *perfdata.Sample:
			byMode[x.CPUMode()]++ // resolve x.Pid, x.IP here
		case *perfdata.Mmap:
			maps++
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := s.Stats()
	fmt.Printf("%d maps; %d kernel and %d user samples; %d lost\n",
		maps, byMode[perfdata.CPUModeKernel], byMode[perfdata.CPUModeUser], st.Lost)
}
