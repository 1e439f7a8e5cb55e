package inbox

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/trackergateway/gateway/internal/failure"
)

// MaxBodyBytes caps a webhook body (25 MiB, GitHub's own cap); larger bodies
// are answered 413.
const MaxBodyBytes = 25 << 20

// DefaultMaxInflightBodyBytes bounds the webhook body bytes held in memory
// by all requests together (256 MiB).
const DefaultMaxInflightBodyBytes = 256 << 20

// inflightRetryAfter is what a request refused for the in-flight bound is
// told: bodies in flight are gone within a commit or a read timeout.
const inflightRetryAfter = 5 * time.Second

// Body buffers grow as bytes arrive, never ahead of them: a declared
// Content-Length is a claim, not an allocation. The first read gets
// firstChunk bytes; each growth doubles, capped by the declared length
// (when there is one) and MaxBodyBytes.
const firstChunk = 64 << 10

// bodyBuffers recycles request body buffers once a delivery's body has been
// compressed into its own slice (most webhooks), which halves what the
// ingest path allocates.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody keeps rare large bodies' buffers out of the pool.
const maxPooledBody = 1 << 20

// errInflightBound is the cause of a refusal for the in-flight bound.
var errInflightBound = errors.New("webhook bodies in flight are at their bound")

// bodyBudget bounds the bytes of webhook bodies held by requests at once.
// Every byte of buffer capacity a request holds is reserved in it, as the
// buffer grows; a request that cannot reserve more is answered 503 at
// once (it never waits), and its reservation is returned when it ends.
type bodyBudget struct {
	sem *semaphore.Weighted
	max int64
}

func newBodyBudget(max int64) *bodyBudget {
	if max <= 0 {
		max = DefaultMaxInflightBodyBytes
	}
	return &bodyBudget{sem: semaphore.NewWeighted(max), max: max}
}

// requestBody is a webhook body read into a possibly pooled buffer, with the
// budget it holds.
type requestBody struct {
	data     []byte
	pooled   *[]byte
	budget   *bodyBudget
	reserved int64
}

// release returns the buffer to the pool; data must not be used after. The
// reservation stays until done: a buffer handed back to the pool is still
// memory this request caused.
func (b *requestBody) release() {
	if b.pooled != nil {
		*b.pooled = (*b.pooled)[:0]
		bodyBuffers.Put(b.pooled)
		b.pooled, b.data = nil, nil
	}
}

// done releases the buffer and the reservation.
func (b *requestBody) done() {
	b.release()
	if b.reserved > 0 {
		b.budget.sem.Release(b.reserved)
		b.reserved = 0
	}
}

// reserve grows the reservation to n bytes, or fails at once.
func (b *requestBody) reserve(n int64) error {
	if n <= b.reserved {
		return nil
	}
	if !b.budget.sem.TryAcquire(n - b.reserved) {
		return &failure.Error{Code: failure.Unavailable, Message: "too many webhook bytes in flight; retry later",
			Err: errInflightBound, RetryAfter: inflightRetryAfter}
	}
	b.reserved = n
	return nil
}

// readBody reads the body bounded at MaxBodyBytes (413 above) into a buffer
// that grows with the bytes received, each growth reserved in the budget
// (503 with Retry-After when it is spent). The caller must call done.
func (bb *bodyBudget) readBody(w http.ResponseWriter, r *http.Request) (*requestBody, error) {
	rb := &requestBody{budget: bb}
	if r.ContentLength > MaxBodyBytes {
		return rb, tooLarge()
	}
	if r.Body == nil || r.ContentLength == 0 {
		rb.data = []byte{}
		return rb, nil
	}
	// A chunked body gets room for one byte past the cap, which the
	// MaxBytesReader refuses: that is how it is found too large.
	limit := int64(MaxBodyBytes) + 1
	if r.ContentLength > 0 {
		limit = r.ContentLength // net/http fails a body longer than declared
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	for {
		if len(rb.data) == cap(rb.data) {
			if int64(len(rb.data)) >= limit {
				return rb, nil // every declared byte is here
			}
			if err := rb.grow(min(limit, max(firstChunk, 2*int64(cap(rb.data))))); err != nil {
				return rb, err
			}
		}
		n, err := body.Read(rb.data[len(rb.data):cap(rb.data)])
		rb.data = rb.data[:len(rb.data)+n]
		switch {
		case errors.Is(err, io.EOF) && r.ContentLength > 0 && int64(len(rb.data)) < r.ContentLength:
			return rb, failure.Wrap(failure.Invalid, io.ErrUnexpectedEOF, "incomplete request body")
		case errors.Is(err, io.EOF):
			return rb, nil
		case err != nil:
			return rb, readError(r, err)
		}
	}
}

// grow gives the buffer capacity n (reserved first), keeping its bytes.
func (b *requestBody) grow(n int64) error {
	if err := b.reserve(n); err != nil {
		return err
	}
	var next []byte
	var pooled *[]byte
	if n <= maxPooledBody {
		pooled = bodyBuffers.Get().(*[]byte)
		if int64(cap(*pooled)) < n {
			*pooled = make([]byte, 0, n)
		}
		next = (*pooled)[:0:n]
	} else {
		next = make([]byte, 0, n)
	}
	next = append(next, b.data...)
	b.release()
	b.data, b.pooled = next, pooled
	return nil
}

func tooLarge() error {
	return failure.New(failure.TooLarge, "request body exceeds %d bytes", MaxBodyBytes)
}

func readError(r *http.Request, err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || r.Context().Err() != nil {
		return failure.Wrap(failure.Invalid, err, "incomplete request body")
	}
	return failure.Wrap(failure.Invalid, err, "could not read request body")
}

// memoryHeadroom is what the gateway needs besides webhook bodies: the
// runtime, connection buffers, the database driver's caches, processing.
const memoryHeadroom = 64 << 20

// SoftMemoryLimit is the Go heap limit for a gateway holding at most
// inflight body bytes (runtime/debug.SetMemoryLimit; GOMEMLIMIT, when set,
// wins). Bodies are the largest and the most short-lived memory the
// gateway has: without a limit the collector lets the heap grow to twice
// what is live, so a burst of 20 MB uploads would take twice the in-flight
// bound in RSS; with it, their garbage is collected as soon as it counts.
func SoftMemoryLimit(inflight int64) int64 { return inflight + memoryHeadroom }
