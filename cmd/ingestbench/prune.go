package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// pruneResult is the prune phase: ack latency at 1,000/s on a database
// holding an expired backlog, with retention keeping it (the baseline) and
// with the pruner deleting it while the senders run.
type pruneResult struct {
	rows              int
	base, pruning     latencies
	deleted, leftover int64
	pruneTook         time.Duration // 0: not done within the window
}

// prunePhase seeds each run's fresh database with rows succeeded deliveries
// that finished 30 days ago (the template's body, as stored by the
// receiver), then measures ack latency at 1,000/s for d: first with
// `retention: {processed: 0}` (nothing is pruned), then with
// `processed: 24h`, which makes the gateway's first retention pass, at
// start-up, delete the whole backlog in its batches while the senders run.
func (b *bench) prunePhase(rows int, d time.Duration) pruneResult {
	res := pruneResult{rows: rows}
	preload := b.seed
	defer func() { b.seed, b.config = preload, "" }()
	var db string
	b.seed = func(url string) {
		db = url
		began := time.Now()
		seedExpired(url, b.tmpl, rows)
		fmt.Printf("seeded %d expired deliveries in %s\n", rows, time.Since(began).Round(time.Second))
	}
	// Both runs poll the backlog the same way, so that only the pruning
	// differs between them.
	measure := func(g *gateway) (latencies, int64, time.Duration) {
		began := time.Now()
		var took time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for time.Since(began) < d {
				if countExpired(db) == 0 {
					took = time.Since(began)
					return
				}
				time.Sleep(time.Second)
			}
		}()
		lat := fixedRate(g.url, b.tmpl, 1000, d, &b.seq)
		<-done
		return lat, countExpired(db), took
	}
	b.config = "retention: {processed: \"0\"}\n"
	b.run(fmt.Sprintf("ack latency at 1000/s, %d expired deliveries kept", rows), false, func(g *gateway) {
		res.base, _, _ = measure(g)
	})
	b.config = "retention: {processed: 24h}\n"
	b.run(fmt.Sprintf("ack latency at 1000/s, %d expired deliveries pruned meanwhile", rows), false, func(g *gateway) {
		res.pruning, res.leftover, res.pruneTook = measure(g)
		res.deleted = int64(rows) - res.leftover
	})
	return res
}

func (r pruneResult) String() string {
	took := "not finished within the window"
	if r.pruneTook > 0 {
		took = "all deleted within " + r.pruneTook.Round(250*time.Millisecond).String()
	}
	change := 100 * (float64(r.pruning.p(99)) - float64(r.base.p(99))) / float64(max(r.base.p(99), 1))
	return fmt.Sprintf("ack at 1000/s with %d expired deliveries: kept p50 %s p99 %s (%d non-202); pruning p50 %s p99 %s (%d non-202); p99 %+.0f%%; pruned %d of %d (%s)",
		r.rows, r.base.p(50), r.base.p(99), r.base.errors, r.pruning.p(50), r.pruning.p(99), r.pruning.errors, change, r.deleted, r.rows, took)
}

func openBenchStore(ctx context.Context, url string) *sqlstore.Store {
	var s *sqlstore.Store
	if strings.HasPrefix(url, sqlite.URLScheme) {
		path, err := sqlite.ParseURL(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "open sqlite:", err)
			os.Exit(1)
		}
		d, err := sqlite.Open(ctx, path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "open sqlite:", err)
			os.Exit(1)
		}
		s = sqlstore.New(d)
	} else {
		d, err := postgres.Open(ctx, url, postgres.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "open postgres:", err)
			os.Exit(1)
		}
		s = sqlstore.New(d)
	}
	return s
}

// openMigratedBenchStore opens the run's database and migrates it.
func openMigratedBenchStore(ctx context.Context, url string) *sqlstore.Store {
	s := openBenchStore(ctx, url)
	if err := s.Migrate(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
	return s
}

// seedExpired migrates the database and stores rows deliveries, finished
// (succeeded) 30 days ago, through the inbox's own insert.
func seedExpired(url string, t *template, rows int) {
	ctx := context.Background()
	s := openMigratedBenchStore(ctx, url)
	defer s.Close()
	if err := seedFinished(ctx, s, t, rows, "expired-", time.Now().UTC().Add(-30*24*time.Hour)); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

// seedFinished stores rows deliveries keyed keyPrefix+UUID, as succeeded at
// finished, through the inbox's own insert; their bodies are the
// template's with negative numbers, never those the senders use.
func seedFinished(ctx context.Context, s *sqlstore.Store, t *template, rows int, keyPrefix string, finished time.Time) error {
	const batch = 1000
	for start := 0; start < rows; start += batch {
		ds := make([]store.Delivery, 0, batch)
		for i := start; i < min(start+batch, rows); i++ {
			body, _ := t.delivery(int64(-1 - i))
			ds = append(ds, store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues",
				DeliveryKey: keyPrefix + uuid.NewString(), Headers: `{"X-Github-Event":["issues"]}`, Body: body,
				ReceivedAt: finished.Add(-time.Second)})
		}
		if _, err := s.InsertDeliveries(ctx, ds); err != nil {
			return err
		}
	}
	if rows == 0 {
		return nil
	}
	_, err := s.Driver().Exec(ctx, `UPDATE deliveries SET status = 'succeeded', attempts = 1, processed_at = $1,
		next_attempt_at = $1, outcome_action = 'create', outcome_result = 'created' WHERE delivery_key LIKE $2`,
		finished, keyPrefix+"%")
	return err
}

// countExpired counts the seeded deliveries still stored.
func countExpired(url string) int64 {
	ctx := context.Background()
	s := openBenchStore(ctx, url)
	defer s.Close()
	n, err := s.CountExpiredDeliveries(ctx, store.ProcessedStatuses, time.Now().UTC().Add(-24*time.Hour))
	if err != nil {
		fmt.Fprintln(os.Stderr, "count:", err)
		return -1
	}
	return n
}
