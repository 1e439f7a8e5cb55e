// Package idempotency owns task identity and creation: the external-ID rules
// (docs/design.md, "External-ID idempotency"), the create coordinator (lookup-first,
// the uniq_tasks_external_id backstop, the pre-insert re-read) and the
// creation ledger (docs/design.md, "The creation ledger": Begin, steps, Complete in
// two phases, Abort with compensation, recovery).
//
// What of the specs does not apply here, and why: the MCP, WebSocket and
// plugin surfaces do not exist in this gateway; of the step kinds only
// remote_contribution_associate has an executor (attachments, branches,
// sessions and agent launch belong to the larger system, so Begin refuses
// them); launch-dispatch claims and the recovery rows about them
// (reconcile/retry/transfer_launch_dispatch) have nothing to act on; workspace
// deletion is not a gateway operation; the 16 global lock tiers become one
// order: workspace → operation → task → steps and effect rows → outbox.
package idempotency

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trackergateway/gateway/internal/failure"
)

// MaxExternalIDBytes is the longest accepted external ID, in UTF-8 bytes,
// after trimming.
const MaxExternalIDBytes = 255

// NormalizeExternalID applies the spec's validation in its normative order:
// reject ASCII control characters in the raw value (before trimming, so a
// trailing newline is an error), trim Unicode White_Space, treat empty as
// absent (""), then bound the length. Invalid UTF-8 is refused after the
// control characters. Everything else is kept verbatim.
func NormalizeExternalID(raw string) (string, error) {
	for i, r := range raw {
		if r <= 0x1f || r == 0x7f {
			return "", failure.New(failure.Invalid, "external_id contains a control character (U+%04X) at byte %d", r, i)
		}
	}
	// Not in the spec's list, but no database can hold it (PostgreSQL
	// rejects the bytes outright): refuse it as input, after rule 1.
	if !utf8.ValidString(raw) {
		return "", failure.New(failure.Invalid, "external_id is not valid UTF-8")
	}
	trimmed := strings.TrimFunc(raw, unicode.IsSpace)
	if trimmed == "" {
		return "", nil
	}
	if len(trimmed) > MaxExternalIDBytes {
		return "", failure.New(failure.Invalid, "external_id is %d bytes; at most %d are allowed", len(trimmed), MaxExternalIDBytes)
	}
	return trimmed, nil
}

// Outcome is the result of an idempotent create.
type Outcome int

const (
	// Created: this call created the task and finished its required work.
	Created Outcome = iota + 1
	// FoundSettled: a task already holds the identity and its creation finished.
	FoundSettled
	// FoundUnsettled: a task holds the identity but its creation had not
	// finished when observed; it may still be running.
	FoundUnsettled
	// CreatedIdentityLost: this call created the task, but the identity was
	// released before completion; the task holds no external ID.
	CreatedIdentityLost
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case FoundSettled:
		return "found_settled"
	case FoundUnsettled:
		return "found_unsettled"
	case CreatedIdentityLost:
		return "created_identity_lost"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Deduplicated is true for both Found outcomes.
func (o Outcome) Deduplicated() bool { return o == FoundSettled || o == FoundUnsettled }

// CreationComplete is false only for FoundUnsettled.
func (o Outcome) CreationComplete() bool { return o != FoundUnsettled }
