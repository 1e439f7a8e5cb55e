package main

// The ceiling server: what the gateway's webhook path costs without the
// inbox. It reads the body, verifies the GitHub signature, takes the
// delivery key and answers the gateway's 202 JSON without storing anything.
// It runs in a process of its own, behind the same net/http server settings
// and router as the gateway, so the durable/ceiling ratio compares the same
// HTTP and verification work with and without the durable commit. It is
// part of this benchmark only: the gateway has no mode that acknowledges
// without storing.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/inbox"
)

// ceilingMode is the hidden first argument that makes this binary the
// ceiling server (ingestbench re-executes itself with it).
const ceilingMode = "ceiling-server"

// ceilingListeningPrefix starts the line the server prints once it listens,
// as the gateway prints "gateway listening on http://ADDR".
const ceilingListeningPrefix = "ceiling listening on "

// runCeilingServer serves until SIGINT or SIGTERM.
func runCeilingServer(args []string) error {
	fs := flag.NewFlagSet(ceilingMode, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	key := fs.String("secret", "", "GitHub webhook secret")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" {
		return fmt.Errorf("%s: --secret is required", ceilingMode)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	r := mux.NewRouter()
	r.Handle("/webhooks/{connection}", ceilingHandler{secrets: [][]byte{[]byte(*key)}}).Methods(http.MethodPost)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The gateway's server settings.
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Printf("%shttp://%s\n", ceilingListeningPrefix, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

type ceilingHandler struct {
	secrets [][]byte
}

// ceilingBuffers recycles body buffers, as the gateway's receiver does for
// the bodies it compresses (most of them).
var ceilingBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (h ceilingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := ceilingBuffers.Get().(*bytes.Buffer)
	defer func() {
		buf.Reset()
		ceilingBuffers.Put(buf)
	}()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, inbox.MaxBodyBytes)); err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	adapter := github.Adapter{}
	if err := adapter.Verify(r.Header, body, h.secrets); err != nil {
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	if adapter.DeliveryKey(r.Header, body) == "" {
		http.Error(w, "missing delivery key", http.StatusUnprocessableEntity)
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, inbox.ReceiptResponse{DeliveryID: uuid.NewString(), Status: inbox.ReceiptAccepted})
}
