package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

// otlpSink stands in for an OpenTelemetry collector: it accepts OTLP/HTTP
// trace exports on loopback, counts them and drops them, so a traced
// gateway pays for its spans and their export but not for a collector's
// work on this machine.
type otlpSink struct {
	url            string
	requests, size atomic.Int64
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlp sink: %w", err)
	}
	s := &otlpSink{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		s.size.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	go func() { _ = http.Serve(ln, mux) }()
	return s, nil
}

// traceGateways turns tracing on (to the sink, every trace sampled) or off
// for the gateways started from now on: they inherit this environment.
func (s *otlpSink) traceGateways(on bool) {
	vars := map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": s.url,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "always_on"}
	for k, v := range vars {
		if on {
			_ = os.Setenv(k, v)
		} else {
			_ = os.Unsetenv(k)
		}
	}
}

func (s *otlpSink) String() string {
	return fmt.Sprintf("otlp sink: %d exports, %d bytes", s.requests.Load(), s.size.Load())
}
