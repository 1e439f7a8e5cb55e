package store

import (
	"context"
	"time"
)

// ConsoleSession is a signed-in session of the operator console. The
// cookie's session ID is never stored, only its SHA-256; the session names
// the token that signed in by the token's SHA-256, as api_tokens holds it.
type ConsoleSession struct {
	IDSHA256    string
	TokenSHA256 string
	// CSRFSecret is what the session's forms carry; a state-changing
	// request without it is refused.
	CSRFSecret string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// DeliveryCount is the number of deliveries of one connection and status
// received in a period; Minute is the period's start for per-minute counts
// and zero otherwise.
type DeliveryCount struct {
	ConnectionID string
	Status       string
	Minute       time.Time
	Count        int64
}

// ConnectionBacklog is a connection's deliveries still to process.
type ConnectionBacklog struct {
	ConnectionID string
	// Pending counts the queued, processing and retrying deliveries.
	Pending int64
	// OldestQueuedAt is the received_at of the oldest queued delivery;
	// zero when none is queued.
	OldestQueuedAt time.Time
}

// ConsoleQueries are the console's sessions and the inbox activity its
// overview shows.
type ConsoleQueries interface {
	InsertConsoleSession(ctx context.Context, s ConsoleSession) error
	// GetConsoleSession returns the session whose ID hashes to idSHA256
	// unless it expired at now; ErrNotFound otherwise.
	GetConsoleSession(ctx context.Context, idSHA256 string, now time.Time) (ConsoleSession, error)
	// DeleteConsoleSession deletes a session (sign-out); deleting one that
	// does not exist is not an error.
	DeleteConsoleSession(ctx context.Context, idSHA256 string) error
	// DeleteExpiredConsoleSessions deletes the sessions expired at now and
	// returns how many.
	DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int64, error)

	// CountDeliveriesReceived counts the deliveries received at or after
	// since, per connection and status. It reads the received-time index
	// from since on, so its cost is the deliveries of that period.
	CountDeliveriesReceived(ctx context.Context, since time.Time) ([]DeliveryCount, error)
	// CountDeliveriesPerMinute is CountDeliveriesReceived per minute of
	// receipt (UTC) as well.
	CountDeliveriesPerMinute(ctx context.Context, since time.Time) ([]DeliveryCount, error)
	// DeliveryBacklogs counts each connection's pending deliveries and
	// finds its oldest queued one; connections without any are absent. It
	// reads the index of pending deliveries only.
	DeliveryBacklogs(ctx context.Context) ([]ConnectionBacklog, error)
}
