package store

import (
	"context"
	"time"
)

// Redelivery request statuses.
const (
	// RedeliveryRequested: recorded, the provider not yet answered (or the
	// run stopped before it did).
	RedeliveryRequested = "requested"
	// RedeliveryAccepted: the provider accepted the request.
	RedeliveryAccepted = "accepted"
	// RedeliveryFailed: the provider refused it or could not be reached.
	RedeliveryFailed = "failed"
)

// Redelivery is a redelivery_requests row: one ask to a provider to send a
// missed webhook delivery again.
type Redelivery struct {
	ConnectionID string
	HookID       int64
	// GUID identifies the delivery at the provider across its attempts
	// (GitHub's X-GitHub-Delivery, GitLab's Idempotency-Key).
	GUID string
	// ProviderDeliveryID is the attempt asked for again.
	ProviderDeliveryID int64
	Event              string
	Status             string
	Error              string
	RequestedAt        time.Time
	AnsweredAt         *time.Time
}

// RedeliveryQueries are the statements of missed-delivery recovery
// (internal/recovery).
type RedeliveryQueries interface {
	// HeldDeliveryKeys reports which of keys the inbox holds for the
	// connection (the uniq_deliveries_key index answers it).
	HeldDeliveryKeys(ctx context.Context, connectionID string, keys []string) (map[string]bool, error)
	// ClaimRedelivery inserts r (status requested) in its own statement
	// unless a request for (connection, hook, GUID) exists; claimed is
	// false when one does. Only the claimant asks the provider.
	ClaimRedelivery(ctx context.Context, r Redelivery) (claimed bool, err error)
	// AnswerRedelivery records the provider's answer to a claimed request:
	// its status (accepted or failed), error and answer time.
	AnswerRedelivery(ctx context.Context, r Redelivery) error
	// ReleaseRedelivery deletes a claimed request still in status
	// requested: the provider refused it without acting (a rate limit), so
	// a later run may ask again. An answered request is left alone.
	ReleaseRedelivery(ctx context.Context, connectionID string, hookID int64, guid string) error
	// ListRedeliveries returns the requests recorded for a hook's GUIDs,
	// keyed by GUID.
	ListRedeliveries(ctx context.Context, connectionID string, hookID int64, guids []string) (map[string]Redelivery, error)
}
