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
	// receivedAt is when each task's first event arrived, by task id.
	receivedAt map[string]time.Time
}

func newHookReceiver() *hookReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	rc := &hookReceiver{url: "http://" + ln.Addr().String(), seen: map[string]bool{}, receivedAt: map[string]time.Time{}}
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
	task := eventTaskID(body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !rc.seen[key] {
		rc.seen[key] = true
		rc.fromCommit.d = append(rc.fromCommit.d, now.Sub(committed))
		rc.fromCommit.n++
	}
	if _, ok := rc.receivedAt[task]; !ok && task != "" {
		rc.receivedAt[task] = now
	}
}

// eventTaskID is the id of an event's task: data.task.id, or data.id in
// the outbox's older form.
func eventTaskID(body []byte) string {
	var ev struct {
		Data struct {
			ID   string `json:"id"`
			Task *struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &ev) != nil {
		return ""
	}
	if ev.Data.Task != nil {
		return ev.Data.Task.ID
	}
	return ev.Data.ID
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

// outboundLatency creates tasks through the REST API at rate/s for d, with
// one subscription enabled, and returns each task.created event's time
// from the create's answer (which comes once its transaction has
// committed: the commit is a little earlier still) to its receipt, and
// from the event's own timestamp (stamped inside the transaction, before
// the commit: an upper bound).
func (b *bench) outboundLatency(rate int, d time.Duration) (fromAnswer, fromStamp latencies) {
	b.run(fmt.Sprintf("commit-to-receipt at %d events/s", rate), false, func(g *gateway) {
		rc := newHookReceiver()
		defer rc.close()
		subscribe(g.url, rc, 1, true)
		answered := createAtRate(g.url, rate, d)
		if !rc.waitReceived(int64(len(answered)), 2*time.Minute) {
			fmt.Printf("only %d of %d events received\n", rc.received.Load(), len(answered))
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		fromStamp = rc.fromCommit
		early := 0
		for id, at := range answered {
			if got, ok := rc.receivedAt[id]; ok {
				// An event can arrive before its create's answer has been
				// read here: it then took no time after the commit that
				// can be told apart.
				d := got.Sub(at)
				if d < 0 {
					d, early = 0, early+1
				}
				fromAnswer.d = append(fromAnswer.d, d)
				fromAnswer.n++
			}
		}
		if early > 0 {
			fmt.Printf("%d events arrived before their create's answer was read (counted as 0)\n", early)
		}
	})
	return fromAnswer, fromStamp
}

// createAtRate creates tasks through the REST API at rate/s (open loop)
// for d and returns when each create was answered, by task id.
func createAtRate(url string, rate int, d time.Duration) map[string]time.Time {
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	var mu sync.Mutex
	out := map[string]time.Time{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	start := time.Now()
	for i := range total {
		if w := time.Until(start.Add(time.Duration(i) * interval)); w > 0 {
			time.Sleep(w)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, _ := http.NewRequest(http.MethodPost, "http://"+url+"/api/v1/tasks",
				strings.NewReader(fmt.Sprintf(`{"workspace_id":"bench","title":"latency %d"}`, i)))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			at := time.Now()
			var task struct {
				ID string `json:"id"`
			}
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&task) == nil && task.ID != "" {
				mu.Lock()
				out[task.ID] = at
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
