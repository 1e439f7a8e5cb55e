package storetest

import (
	"sync"
	"time"
)

// Clock is the injected clock of every test: it moves only when told
// (Advance, Set), so leases, backoffs and grace periods pass without
// sleeping; made with a step, each reading also moves it by that step, so
// consecutive timestamps differ.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewClock returns a clock reading start (plus step per reading).
func NewClock(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, never backwards.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}
