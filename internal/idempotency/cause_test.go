package idempotency

import (
	"context"
	"testing"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
)

// TestCreationCause: task.created names the cause of the request that
// completes the creation; recovery, which completes it with no request,
// names the actor the creation recorded.
func TestCreationCause(t *testing.T) {
	t.Parallel()
	actor := func(kind, id string) string {
		doc, err := Canonical(ActorBindingDocument{Version: 1, Actor: kind, PrincipalID: id, WorkspaceID: "w",
			AuthMode: "bearer", AuthorityKind: kind, AuthorityID: id})
		if err != nil {
			t.Fatal(err)
		}
		return string(doc)
	}
	delivery := events.Cause{Connection: "gh", DeliveryID: "d1", ProviderEvent: "pull_request.opened"}
	tests := []struct {
		name  string
		ctx   context.Context
		actor string
		want  events.Cause
	}{
		{"the request's", events.WithCause(context.Background(), delivery), actor("connection", "gh"), delivery},
		{"recovery, a connection's", context.Background(), actor("connection", "gh"), events.Cause{Connection: "gh"}},
		{"recovery, a token's", context.Background(), actor("api_token", "eng-bot"), events.Cause{Actor: events.ActorAPI}},
		{"recovery, an actor it does not know", context.Background(), actor("robot", "r"), events.Cause{}},
		{"recovery, no actor", context.Background(), "", events.Cause{}},
	}
	for _, tt := range tests {
		if got := creationCause(tt.ctx, store.Operation{ActorJSON: tt.actor}); got != tt.want {
			t.Errorf("%s: cause %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
