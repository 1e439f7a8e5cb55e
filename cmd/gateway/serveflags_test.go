package main

// serve refuses flag values it cannot run with before touching the database.

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeRefusesBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"short admin token flag", []string{"--admin-token", "0123456789abcde"}, nil,
			"admin token (--admin-token or GATEWAY_ADMIN_TOKEN): must be at least 16 characters"},
		{"short admin token env", nil, map[string]string{"GATEWAY_ADMIN_TOKEN": "short"},
			"admin token (--admin-token or GATEWAY_ADMIN_TOKEN): must be at least 16 characters"},
		{"zero shutdown timeout", []string{"--shutdown-timeout", "0s"}, nil, "shutdown timeout (--shutdown-timeout or GATEWAY_SHUTDOWN_TIMEOUT): must be positive"},
		{"sub-second delivery lease", []string{"--delivery-lease", "500ms"}, nil, "delivery lease (--delivery-lease): must be at least 1s"},
		{"unknown failpoint", nil, map[string]string{failpointEnv: "nowhere"}, `GATEWAY_TEST_FAILPOINT: unknown failpoint "nowhere"`},
		{"malformed shutdown timeout env", nil, map[string]string{"GATEWAY_SHUTDOWN_TIMEOUT": "soon"}, `GATEWAY_SHUTDOWN_TIMEOUT: time: invalid duration "soon"`},
		{"malformed in-flight bound", []string{"--max-inflight-body-bytes", "lots"}, nil, `max-inflight-body-bytes: "lots" is not a size`},
		{"zero in-flight bound env", nil, map[string]string{"GATEWAY_MAX_INFLIGHT_BODY_BYTES": "0"}, `max-inflight-body-bytes: "0": must be positive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dbPath := filepath.Join(t.TempDir(), "gateway.db")
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			var stdout, stderr bytes.Buffer
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--database-url", "sqlite:" + dbPath}, tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			code := Main(ctx, args, env, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantErr)
			}
			if strings.Contains(stdout.String(), "gateway listening") {
				t.Errorf("the gateway started: stdout %q", stdout.String())
			}
		})
	}
}

func TestShutdownTimeoutFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		{"default", nil, nil, 30 * time.Second},
		{"env", nil, map[string]string{"GATEWAY_SHUTDOWN_TIMEOUT": "45s"}, 45 * time.Second},
		{"flag wins over env", []string{"--shutdown-timeout", "2m"}, map[string]string{"GATEWAY_SHUTDOWN_TIMEOUT": "45s"}, 2 * time.Minute},
		{"flag wins over a malformed env", []string{"--shutdown-timeout", "2m"}, map[string]string{"GATEWAY_SHUTDOWN_TIMEOUT": "soon"}, 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			f, err := parseServe(tt.args, env, &bytes.Buffer{}, &bytes.Buffer{})
			if err != nil {
				t.Fatalf("parseServe: %v", err)
			}
			if f.shutdownTimeout != tt.want {
				t.Errorf("shutdown timeout = %v, want %v", f.shutdownTimeout, tt.want)
			}
		})
	}
}

func TestInflightBodyBytesPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flag, config string
		want               int64
	}{
		{"default", "", "", 256 << 20},
		{"config", "", "64MiB", 64 << 20},
		{"flag or environment wins over config", "1MB", "64MiB", 1_000_000},
		{"byte count", "1048576", "", 1 << 20},
	}
	for _, tt := range tests {
		got, err := inflightBodyBytes(tt.flag, tt.config)
		if err != nil || got != tt.want {
			t.Errorf("%s: inflightBodyBytes(%q, %q) = %d, %v; want %d", tt.name, tt.flag, tt.config, got, err, tt.want)
		}
	}
}

// Help works whatever the environment holds: values are checked after it.
func TestServeHelpWithBadEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GATEWAY_SHUTDOWN_TIMEOUT": "soon", "GATEWAY_ADMIN_TOKEN": "short", "GATEWAY_MAX_INFLIGHT_BODY_BYTES": "lots"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"serve", "-h"}, lookup, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
		t.Errorf("serve -h: exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "usage: gateway serve") {
		t.Errorf("serve -h printed %q, want the usage", stdout.String())
	}
}
