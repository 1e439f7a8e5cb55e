// Package inbox is the durable webhook inbox of the gateway (docs/design.md
// "The pipeline", steps 1 and 2, and the operator routes for deliveries).
//
//   - Receiver (receiver.go) answers POST /webhooks/{connection}: bounded
//     body read, signature verification against every active secret of the
//     connection, delivery key, and the raw delivery committed before the 202.
//     It never parses business content.
//   - The group commit (groupcommit.go) batches concurrent receipts into one
//     InsertDeliveries transaction (one fsync for the batch) and wakes the
//     workers with one notification per batch. A batch is whatever queued
//     while the previous commit ran; on SQLite alone, a batch that finds a
//     crowd of requests still in the handler waits a moment for them.
//   - Worker (worker.go) claims due deliveries with a lease, serializes each
//     source entity with an entity lease (across replicas too), runs a
//     Processor, and records the outcome, retrying transient failures with
//     exponential backoff.
//   - Operators (operators.go) lists, shows and replays
//     deliveries.
package inbox

// Channel is the notification channel that wakes workers when deliveries
// become due (PostgreSQL LISTEN/NOTIFY across replicas, in-process on SQLite).
const Channel = "gateway_deliveries"
