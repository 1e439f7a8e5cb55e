// Command receiver is a webhook subscriber for trying the gateway's task
// events out: it verifies each request's Standard Webhooks signature with
// the subscription's secret (WEBHOOK_SECRET) and prints the event.
//
//	WEBHOOK_SECRET=whsec_… go run ./docs/examples/receiver
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET: %v", err)
	}
	addr := "127.0.0.1:9000"
	if a := os.Getenv("RECEIVER_ADDR"); a != "" {
		addr = a
	}
	log.Printf("listening on http://%s/hook", addr)
	log.Fatal(http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		// Checks webhook-signature over webhook-id, webhook-timestamp and
		// the body, and that the timestamp is within five minutes.
		if err := wh.Verify(body, r.Header); err != nil {
			log.Printf("refused %s: %v", r.Header.Get("webhook-id"), err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// webhook-id is the event id: the same on every retry, so a
		// receiver that has seen it can answer 2xx and do nothing.
		fmt.Printf("verified %s %s\n", r.Header.Get("webhook-id"), body)
	})))
}
