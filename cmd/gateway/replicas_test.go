package main

// Three gateway replicas on one PostgreSQL schema draining one stream of
// deliveries with duplicates and redeliveries.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestReplicas: 2,000 deliveries spread over three replicas, 30% of them
// duplicates (the same delivery resent to another replica) or redeliveries
// (the same issue event under a new delivery key): every delivery is
// processed and each issue has exactly one task.
func TestReplicas(t *testing.T) {
	t.Parallel()
	const (
		replicas   = 3
		entities   = 1400
		repeats    = 600 // 300 same-key duplicates + 300 new-key redeliveries
		senders    = 16
		workersPer = "2"
	)
	storetest.PostgresURL(t) // skips visibly without a server
	dbURL := newDatabaseURL(t, "postgres")
	cfg := writeConfig(t)

	// Started together: migrations and the config apply race on one schema.
	var procs []*process
	for i := range replicas {
		procs = append(procs, spawnProcess(t, dbURL, cfg, fmt.Sprintf("replica-%d", i), "--workers", workersPer))
	}
	for _, p := range procs {
		p.waitListening(t)
	}

	type post struct {
		replica int
		hook    hook
	}
	var posts []post
	exts := make([]string, entities)
	originals := make([]hook, entities)
	for i := range entities {
		originals[i], exts[i] = crashIssue(t, i)
		originals[i].Key = fmt.Sprintf("replica-%04d", i)
		posts = append(posts, post{i % replicas, originals[i]})
	}
	for j := range repeats {
		e := j * 3 % entities // distinct: 3 and 1400 are coprime
		h := originals[e]
		if j%2 == 1 {
			h = h.withKey(h.Key + "-redelivered") // a new delivery of the same event
		}
		posts = append(posts, post{(e + 1 + j%2) % replicas, h})
	}
	rand.New(rand.NewPCG(4, 2)).Shuffle(len(posts), func(a, b int) { posts[a], posts[b] = posts[b], posts[a] })

	var mu sync.Mutex
	accepted := map[string]int{} // delivery key → "accepted" receipts
	ids := map[string]string{}   // delivery key → delivery_id
	next := make(chan post)
	go func() {
		for _, p := range posts {
			next <- p
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for p := range next {
				status, body, err := procs[p.replica].postWebhook(p.hook.Conn, p.hook.header(githubSecret), p.hook.Body)
				if err != nil || status != http.StatusAccepted {
					t.Errorf("POST %s to replica %d = %d %s %v, want 202", p.hook.Key, p.replica, status, body, err)
					continue
				}
				var r receipt
				if err := json.Unmarshal(body, &r); err != nil {
					t.Errorf("receipt %s: %v", body, err)
					continue
				}
				mu.Lock()
				if r.Status == "accepted" {
					accepted[p.hook.Key]++
				}
				if prev, ok := ids[p.hook.Key]; ok && prev != r.DeliveryID {
					t.Errorf("delivery %s acknowledged as %s and %s", p.hook.Key, prev, r.DeliveryID)
				}
				ids[p.hook.Key] = r.DeliveryID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for key := range ids {
		if accepted[key] != 1 {
			t.Errorf("delivery %s was accepted %d times, want once", key, accepted[key])
		}
	}

	all := procs[0].waitIdle(t, drainTimeout)
	wantRows := entities + repeats/2
	if len(all) != wantRows || len(ids) != wantRows {
		t.Errorf("deliveries = %d rows, %d distinct keys acknowledged; want %d", len(all), len(ids), wantRows)
	}
	for _, d := range all {
		if d.Status != "succeeded" {
			t.Errorf("delivery %s: status %q last_error %q, want succeeded", d.DeliveryKey, d.Status, str(d.LastError))
		}
	}
	t.Logf("deliveries by status: %v", statusCounts(all))
	checkOneTaskEach(t, procs[0].gateway, exts)
	// Every replica serves the same view.
	for _, p := range procs[1:] {
		if got := len(p.tasks(t)); got != entities {
			t.Errorf("%s lists %d tasks, want %d", p.name, got, entities)
		}
	}
}
