package recovery

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/trackergateway/gateway/internal/providerapi"
)

// providerWait is exponential backoff raised to what the provider asked
// for (Retry-After, a rate-limit reset) before the next try.
type providerWait struct {
	*backoff.ExponentialBackOff
	asked time.Duration
}

func (b *providerWait) NextBackOff() time.Duration {
	d := b.ExponentialBackOff.NextBackOff()
	if d == backoff.Stop {
		return d
	}
	d, b.asked = max(d, b.asked), 0
	return d
}

// answer is what one provider request came back with: the status (0 when
// no response came) and the wait the provider asked for.
type answer struct {
	status int
	wait   time.Duration
}

// retrying runs a provider request, again after a rate-limit refusal
// (waiting as long as the provider asks, at most MaxWait, or the run stops
// with ErrRateLimited), within MaxElapsed. A read (idempotent) is also
// tried again after a server error or a lost connection (exponential
// backoff); a redelivery request is not, as the provider may have acted on
// it. Any other failure is final at once.
func (r *Recoverer) retrying(ctx context.Context, idempotent bool, request func() (answer, error)) error {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval, exp.MaxElapsedTime = 500*time.Millisecond, r.MaxElapsed
	b := &providerWait{ExponentialBackOff: exp}
	op := func() error {
		ans, err := request()
		switch {
		case err == nil:
			return nil
		case ans.wait > r.MaxWait:
			return backoff.Permanent(fmt.Errorf("%w for %s, longer than a run waits: %w", ErrRateLimited, ans.wait.Round(time.Second), err))
		case ans.wait > 0:
			b.asked = ans.wait
			return rateLimitedError{err}
		case providerapi.Refused(err):
			// The same request gets the same redirect or body again.
			return backoff.Permanent(err)
		case idempotent && (ans.status == 0 && ctx.Err() == nil || ans.status >= http.StatusInternalServerError):
			return err
		}
		return backoff.Permanent(err)
	}
	notify := func(err error, wait time.Duration) {
		r.logger.Debug("provider request retried", "error", err, "wait", wait.String())
	}
	err := backoff.RetryNotifyWithTimer(op, backoff.WithContext(b, ctx), notify, r.timer)
	if re, ok := err.(rateLimitedError); ok {
		// Out of time while the provider still refused for its limit.
		return fmt.Errorf("%w: %w", ErrRateLimited, re.err)
	}
	return err
}

// rateLimitedError marks a retried failure that was a rate-limit refusal.
type rateLimitedError struct{ err error }

func (e rateLimitedError) Error() string { return e.err.Error() }
func (e rateLimitedError) Unwrap() error { return e.err }
