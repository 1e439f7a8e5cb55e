package main

// serve refuses flag values it cannot run with before touching the database.

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
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
