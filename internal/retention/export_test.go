package retention

import "time"

// SetElapsed replaces how p measures a batch.
func SetElapsed(p *Pruner, f func(began time.Time) time.Duration) { p.elapsed = f }
