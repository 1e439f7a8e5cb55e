// Package priority is how work that can wait gives way to work someone is
// waiting for: task processing to acknowledgements (a tracker waits for its
// 2xx), outbound delivery to processing (a burst of webhooks becomes tasks
// first, and its events go out right after). The waiting side calls Yield
// before each step; what it defers is durable, so nothing is lost, only
// moved to when the busy side has caught up.
package priority

import (
	"context"
	"time"
)

// step is how long one pause of Yield lasts: short, so the waiting side
// resumes within a few milliseconds of the busy side's end.
const step = 2 * time.Millisecond

// Yield pauses while busy reports true, a step at a time, and never longer
// than max in all, so the waiting side is slowed, never starved. It
// reports whether busy still held when it gave up (max passed); false when
// busy is nil, ended, or ctx ended.
func Yield(ctx context.Context, busy func() bool, max time.Duration) (stillBusy bool) {
	if busy == nil {
		return false
	}
	t := time.NewTimer(step)
	defer t.Stop()
	for waited := time.Duration(0); ctx.Err() == nil && busy(); waited += step {
		if waited >= max {
			return true
		}
		t.Reset(step)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return false
}
