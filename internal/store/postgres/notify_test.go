package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func openReplica(t *testing.T, url, schema string) *sqlstore.Store {
	t.Helper()
	d, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 4},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	s := sqlstore.New(d)
	t.Cleanup(s.Close)
	return s
}

// TestNotifyWakesEveryReplica: Notify wakes this process's waiters at once
// and another replica's through LISTEN/NOTIFY, and a burst of requests
// still reaches the other replica (coalesced, not lost).
func TestNotifyWakesEveryReplica(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	schema := storetest.NewSchema(t, url)
	sender, receiver := openReplica(t, url, schema), openReplica(t, url, schema)
	const channel = "deliveries_test"
	deadline := 20 * time.Second

	wait := func(s *sqlstore.Store) <-chan error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		got := make(chan error, 1)
		go func() { defer cancel(); got <- s.WaitForNotification(ctx, channel) }()
		return got
	}
	// The receiver's LISTEN connection starts with its first waiter; poll
	// until one notification has crossed, then check each case once.
	first := wait(receiver)
	crossed := false
	for start := time.Now(); !crossed && time.Since(start) < deadline; {
		if err := sender.Notify(context.Background(), channel); err != nil {
			t.Fatalf("notify: %v", err)
		}
		select {
		case err := <-first:
			if err != nil {
				t.Fatalf("first notification: %v", err)
			}
			crossed = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !crossed {
		t.Fatal("no notification reached the other replica")
	}

	tests := []struct {
		name   string
		waitOn *sqlstore.Store
		burst  int
	}{
		{"this process", sender, 1},
		{"another replica", receiver, 1},
		{"another replica, after a burst", receiver, 50},
	}
	for _, tc := range tests {
		got := wait(tc.waitOn)
		// The waiter may start after the notification: notify until it wakes.
		woke := false
		for start := time.Now(); !woke && time.Since(start) < deadline; {
			for range tc.burst {
				if err := sender.Notify(context.Background(), channel); err != nil {
					t.Fatalf("%s: notify: %v", tc.name, err)
				}
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				woke = true
			case <-time.After(50 * time.Millisecond):
			}
		}
		if !woke {
			t.Errorf("%s: waiter never woke", tc.name)
		}
	}
}

// TestNotifyReachesAChannelSubscribedLater: a replica whose listener
// already LISTENs to one channel (the inbox's, at start) also receives a
// channel its first waiter subscribes to later (the task events feed's).
func TestNotifyReachesAChannelSubscribedLater(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	schema := storetest.NewSchema(t, url)
	sender, receiver := openReplica(t, url, schema), openReplica(t, url, schema)
	// crossed notifies channel from sender until a waiter on receiver
	// wakes, or the deadline passes.
	crossed := func(channel string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		got := make(chan error, 1)
		go func() { got <- receiver.WaitForNotification(ctx, channel) }()
		for {
			if err := sender.Notify(context.Background(), channel); err != nil {
				t.Fatalf("notify: %v", err)
			}
			select {
			case err := <-got:
				return err == nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if !crossed("first_test") {
		t.Fatal("no notification on the first channel reached the other replica")
	}
	if !crossed("later_test") {
		t.Error("no notification on the channel subscribed later reached the other replica")
	}
	if !crossed("first_test") {
		t.Error("the first channel no longer reaches the other replica")
	}
}
