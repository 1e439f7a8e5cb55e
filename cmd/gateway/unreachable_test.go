package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// A command pointed at an address where no gateway listens says which
// address it tried and how to give another, not a bare "connection
// refused".
func TestCommandsSayWhereNoGatewayAnswered(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	listenEnv := func(k string) (string, bool) {
		if k == "GATEWAY_LISTEN" {
			return addr, true
		}
		return "", false
	}
	tests := []struct {
		name string
		args []string
		env  Env
		want []string
	}{
		{"an operator command with --url", []string{"deliveries", "list", "--url", "http://" + addr, "--admin-token", "tok"}, noEnv,
			[]string{"no gateway answered at http://" + addr, "connection refused", "--url", "GATEWAY_LISTEN"}},
		{"an operator command on GATEWAY_LISTEN", []string{"recover", "--connection", "gh", "--admin-token", "tok"}, listenEnv,
			[]string{"no gateway answered at http://" + addr, "--url", "GATEWAY_LISTEN"}},
		{"send with --listen", []string{"send", "--connection", "github", "--secret", "s", "--listen", addr,
			"--file", filepath.Join(fixturesDir, "github/issues.opened.json")}, noEnv,
			[]string{"no gateway answered at http://" + addr, "--url", "--listen", "GATEWAY_LISTEN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Main(context.Background(), tc.args, tc.env, &out, &errOut)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stdout %q)", code, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q does not say %q", errOut.String(), w)
				}
			}
		})
	}
}
