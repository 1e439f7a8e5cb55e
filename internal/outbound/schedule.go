package outbound

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// jitter spreads retries by up to a tenth either way, so a receiver that
// failed many events at once is not retried by all of them at once.
const jitter = 0.1

// MaxRetryAfter caps the wait a receiver's Retry-After asks for.
const MaxRetryAfter = time.Hour

// nextRetry is the wait after attempt number attempts (1 for the first)
// failed, and false when it was the last: the schedule's entry, with
// jitter, or the receiver's Retry-After (capped) when it gave one.
func nextRetry(schedule []time.Duration, attempts int, retryAfter time.Duration) (time.Duration, bool) {
	if attempts < 1 || attempts > len(schedule) {
		return 0, false
	}
	if retryAfter > 0 {
		return min(retryAfter, MaxRetryAfter), true
	}
	d := schedule[attempts-1]
	return d + time.Duration((rand.Float64()*2-1)*jitter*float64(d)), true
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date; 0
// when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return min(time.Duration(s)*time.Second, MaxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}
