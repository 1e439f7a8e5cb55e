package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxTrackedKeys bounds the per-address and per-connection state below: an
// attacker cycling through addresses must not grow memory without end.
const maxTrackedKeys = 10_000

// ClientAddress is the address authentication failures are counted under:
// the peer's IP (the reverse proxy's, behind one), IPv6 aggregated to its
// /64, which one host can cycle through at will.
func ClientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		prefix, _ := addr.Prefix(64)
		return prefix.String()
	}
	return addr.String()
}

// FailureThrottle counts authentication failures per client address in a
// token bucket: Burst failures at once, then Rate. An address whose bucket
// is empty has its failures answered 429 until the bucket refills; a
// request that authenticates is never refused by it.
type FailureThrottle struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// Default failure budget: 20 failures at once, then one every three seconds
// per address. A client with a stale token stays well inside it; a guesser
// is held to 20 guesses a minute.
const (
	DefaultFailureBurst = 20
	DefaultFailureRate  = rate.Limit(1.0 / 3)
)

// NewFailureThrottle returns a throttle with the default budget; now may be
// nil (time.Now).
func NewFailureThrottle(now func() time.Time) *FailureThrottle {
	if now == nil {
		now = time.Now
	}
	return &FailureThrottle{limit: DefaultFailureRate, burst: DefaultFailureBurst, now: now, buckets: map[string]*rate.Limiter{}}
}

// Blocked reports whether addr has used up its failure budget and, if so,
// how long until it may try again.
func (t *FailureThrottle) Blocked(addr string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[addr]
	if !ok {
		return 0, false
	}
	tokens := b.TokensAt(t.now())
	if tokens >= 1 {
		return 0, false
	}
	wait := time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second))
	return max(wait, time.Second), true
}

// Failed records one failure of addr.
func (t *FailureThrottle) Failed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b, ok := t.buckets[addr]
	if !ok {
		if len(t.buckets) >= maxTrackedKeys {
			t.forgetRefilled(now)
		}
		b = rate.NewLimiter(t.limit, t.burst)
		t.buckets[addr] = b
	}
	b.AllowN(now, 1)
}

// forgetRefilled drops the buckets that are full again: they carry no
// memory of past failures. If every bucket is draining (a flood from more
// addresses than are tracked), all are dropped: bounded memory over
// precision.
func (t *FailureThrottle) forgetRefilled(now time.Time) {
	for addr, b := range t.buckets {
		if b.TokensAt(now) >= float64(t.burst) {
			delete(t.buckets, addr)
		}
	}
	if len(t.buckets) >= maxTrackedKeys {
		clear(t.buckets)
	}
}

// LogSampler turns a flood of one kind of log line into one line per key
// per interval: the first occurrence is logged at once, the rest are
// counted and reported with the next line logged for that key.
type LogSampler struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	keys map[string]*sampledKey
}

type sampledKey struct {
	loggedAt   time.Time
	suppressed int
}

// NewLogSampler returns a sampler logging each key at most once per
// interval; now may be nil (time.Now).
func NewLogSampler(interval time.Duration, now func() time.Time) *LogSampler {
	if now == nil {
		now = time.Now
	}
	return &LogSampler{interval: interval, now: now, keys: map[string]*sampledKey{}}
}

// Observe records one occurrence for key. It reports whether to log it now
// and, if so, how many occurrences were not logged since the last line.
func (s *LogSampler) Observe(key string) (suppressed int, log bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k, ok := s.keys[key]
	if !ok {
		if len(s.keys) >= maxTrackedKeys {
			clear(s.keys)
		}
		s.keys[key] = &sampledKey{loggedAt: now}
		return 0, true
	}
	if now.Sub(k.loggedAt) < s.interval {
		k.suppressed++
		return 0, false
	}
	suppressed = k.suppressed
	k.loggedAt, k.suppressed = now, 0
	return suppressed, true
}
