package retention

import (
	"context"
	"time"
)

// SetElapsed replaces how p measures a batch.
func SetElapsed(p *Pruner, f func(began time.Time) time.Duration) { p.elapsed = f }

// SetWait replaces how p pauses between batches.
func SetWait(p *Pruner, f func(ctx context.Context, d time.Duration) error) { p.wait = f }
