package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"

	"github.com/trackergateway/gateway/connectors/github"
)

// bigBodyBytes is the size of each upload of the big-bodies phase: 20 MB,
// just under the 25 MiB cap.
const bigBodyBytes = 20_000_000

// bigBody is one GitHub issues payload of bigBodyBytes whose description is
// random letters, so it compresses about as badly as real text can.
func bigBody(t *template) []byte {
	var doc map[string]any
	if err := json.Unmarshal(t.raw, &doc); err != nil {
		panic(err)
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	rng := rand.New(rand.NewPCG(1, 2))
	pad := make([]byte, bigBodyBytes-len(t.raw))
	for i := range pad {
		pad[i] = letters[rng.IntN(len(letters))]
	}
	doc["issue"].(map[string]any)["body"] = string(pad)
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

// bigBodyResult counts the answers of one burst of big uploads.
type bigBodyResult struct {
	codes map[int]int
	// lost counts 202s whose delivery the gateway does not hold.
	lost, failedRequests int
}

// bigBodies posts n uploads of body at once, signed with secret (a wrong
// one makes them unauthenticated), each with its own delivery GUID, waits
// for every answer and checks that every 202 names a stored delivery.
func bigBodies(url string, body []byte, n int, sign string) bigBodyResult {
	res := bigBodyResult{codes: map[int]int{}}
	var mu sync.Mutex
	var accepted []string
	var wg sync.WaitGroup
	h := http.Header{}
	github.Adapter{}.Sign(h, body, []byte(sign))
	for i := range n {
		wg.Go(func() {
			hh := h.Clone()
			hh.Set("X-GitHub-Event", "issues")
			hh.Set("X-GitHub-Delivery", fmt.Sprintf("big-%d", i))
			req, _ := http.NewRequest(http.MethodPost, "http://"+url+"/webhooks/gh", bytes.NewReader(body))
			req.Header = hh
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failedRequests++
				return
			}
			defer resp.Body.Close()
			res.codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusAccepted {
				var r struct {
					DeliveryID string `json:"delivery_id"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&r)
				accepted = append(accepted, r.DeliveryID)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	wg.Wait()
	for _, id := range accepted {
		var d struct {
			ID string `json:"id"`
		}
		get(url, "/api/v1/deliveries/"+id, &d)
		if d.ID != id {
			res.lost++
		}
	}
	return res
}

func (r bigBodyResult) String() string {
	return fmt.Sprintf("answers %v, transport errors %d, acknowledged but not stored %d", r.codes, r.failedRequests, r.lost)
}
