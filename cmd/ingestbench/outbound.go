package main

// Task events out: how fast the gateway delivers a backlog of events to
// webhook subscriptions (a receiver of this process's own, on loopback),
// and how long an event takes from its commit to its receipt at a steady
// 200 events/s.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// outboundConfig lets the gateway post to this process's receiver, on
// loopback over http.
const outboundConfig = "outbound: {allow_http: true, allow_private: true}\n"

// hookReceiver is the subscribers' endpoint: it answers 204 at once,
// counts every request, and for the first receipt of each (subscription,
// event) records the time since the event's commit (its timestamp).
type hookReceiver struct {
	srv *http.Server
	url string

	received atomic.Int64
	last     atomic.Int64 // unix nanos of the last request

	mu         sync.Mutex
	seen       map[string]bool
	fromCommit latencies
}

func newHookReceiver() *hookReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	rc := &hookReceiver{url: "http://" + ln.Addr().String(), seen: map[string]bool{}}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
	return rc
}

func (rc *hookReceiver) close() { _ = rc.srv.Close() }

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	w.WriteHeader(http.StatusNoContent)
	rc.received.Add(1)
	rc.last.Store(now.UnixNano())
	// The event's timestamp is its commit time (a little before it, in
	// fact: it is stamped inside the transaction).
	i := bytes.Index(body, []byte(`"timestamp":"`))
	if i < 0 {
		return
	}
	rest := body[i+len(`"timestamp":"`):]
	committed, err := time.Parse(time.RFC3339Nano, string(rest[:bytes.IndexByte(rest, '"')]))
	if err != nil {
		return
	}
	key := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !rc.seen[key] {
		rc.seen[key] = true
		rc.fromCommit.d = append(rc.fromCommit.d, now.Sub(committed))
		rc.fromCommit.n++
	}
}

// waitReceived waits, at most within, until n requests have arrived.
func (rc *hookReceiver) waitReceived(n int64, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for rc.received.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// subscribe creates n subscriptions of the bench workspace to the
// receiver (each its own path), enabled or not, and returns their ids.
func subscribe(url string, rc *hookReceiver, n int, enabled bool) []string {
	var ids []string
	for i := range n {
		body := fmt.Sprintf(`{"url":"%s/hook/%d"}`, rc.url, i)
		var s struct {
			ID string `json:"id"`
		}
		call(url, http.MethodPost, "/api/v1/workspaces/bench/subscriptions", body, &s)
		if s.ID == "" {
			fmt.Println("ingestbench: could not create a subscription")
			return ids
		}
		if !enabled {
			call(url, http.MethodPatch, "/api/v1/workspaces/bench/subscriptions/"+s.ID, `{"enabled":false}`, nil)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

func call(url, method, path, body string, v any) {
	req, _ := http.NewRequest(method, "http://"+url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if v != nil {
		_ = json.NewDecoder(resp.Body).Decode(v)
	}
}

// outboundResult is one backlog delivery: n events, each owed to subs
// subscriptions, sent from the moment they were enabled.
type outboundResult struct {
	subs, events int
	received     int64
	seconds      float64 // enabled to the last request
	tasksPerSec  float64 // the drain that made the events
	gatewayCPU   float64 // seconds, while delivering
}

// deliveries/s: each event received by each subscription counts once.
func (r outboundResult) perSecond() float64 { return float64(r.received) / r.seconds }

func (r outboundResult) String() string {
	if r.seconds == 0 || r.received < int64(r.events*r.subs) {
		return fmt.Sprintf("outbound, %d subscription(s): %d of %d deliveries received: not measured", r.subs, r.received, r.events*r.subs)
	}
	return fmt.Sprintf("outbound, %d subscription(s): %d events × %d delivered in %.2f s: %.0f deliveries/s (%.0f events/s to every subscription); gateway CPU %.0f µs per delivery; the drain that made them: %.0f tasks/s",
		r.subs, r.events, r.subs, r.seconds, r.perSecond(), float64(r.events)/r.seconds, 1e6*r.gatewayCPU/float64(r.received), r.tasksPerSec)
}

// outboundPhase makes drainN events (a drain of new issues) while subs
// subscriptions are disabled, then enables them and measures how fast the
// receiver gets every event on every one.
func (b *bench) outboundPhase(subs int, senders int) outboundResult {
	res := outboundResult{subs: subs, events: b.drainN}
	b.run(fmt.Sprintf("outbound: %d events to %d subscription(s)", b.drainN, subs), false, func(g *gateway) {
		rc := newHookReceiver()
		defer rc.close()
		ids := subscribe(g.url, rc, subs, false)
		d := drain(g.url, b.tmpl, senders, b.drainN, &b.seq)
		if d.tasks != d.n {
			fmt.Println(d)
			return
		}
		res.tasksPerSec = d.tasksPerSecond()
		cpu := processCPU(g.pid)
		start := time.Now()
		for _, id := range ids {
			call(g.url, http.MethodPatch, "/api/v1/workspaces/bench/subscriptions/"+id, `{"enabled":true}`, nil)
		}
		rc.waitReceived(int64(subs*b.drainN), 10*time.Minute)
		res.received = rc.received.Load()
		res.seconds = time.Unix(0, rc.last.Load()).Sub(start).Seconds()
		res.gatewayCPU = processCPU(g.pid) - cpu
	})
	return res
}

// outboundLatency sends new issues at rate/s for d with one subscription
// enabled, and returns each event's time from its commit to its receipt.
func (b *bench) outboundLatency(rate int, d time.Duration) latencies {
	var out latencies
	b.run(fmt.Sprintf("commit-to-receipt at %d events/s", rate), false, func(g *gateway) {
		rc := newHookReceiver()
		defer rc.close()
		subscribe(g.url, rc, 1, true)
		sent := fixedRate(g.url, b.tmpl, rate, d, &b.seq)
		if !rc.waitReceived(int64(len(sent.d)), 2*time.Minute) {
			fmt.Printf("only %d of %d events received\n", rc.received.Load(), len(sent.d))
		}
		rc.mu.Lock()
		out = rc.fromCommit
		rc.mu.Unlock()
	})
	return out
}
