package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/trackergateway/gateway/connectors/providers"
)

// A connection's host is part of every external ID it makes
// ("linear:<host>:issue:<id>"), so it must be the bare name the provider's
// URLs are made of: a URL there (https://linear.app/acme) would make IDs
// with a URL inside, and different ones for the same item once fixed.

// checkHost says what is wrong with host for provider: it must be a host
// name (letters, digits, '-', '_' and '.'-separated labels) or an IP
// address, optionally with a port. The error shows the expected form and,
// when the value is a URL or has a path, the host it most likely meant.
func checkHost(provider, host string) error {
	if validHost(host) {
		return nil
	}
	p, _ := providers.Lookup(provider)
	msg := fmt.Sprintf("host %q is not a bare host name (optionally with a port); for %s it is %s", host, provider, p.HostForm)
	if meant := meantHost(p, host); meant != "" && validHost(meant) {
		msg += fmt.Sprintf("; did you mean host: %s?", meant)
	}
	return fmt.Errorf("%s", msg)
}

// validHost reports whether s is a host name or IP address, optionally
// with a port (1-65535); an IPv6 address is in brackets.
func validHost(s string) bool {
	name := s
	if h, port, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '+' {
			return false
		}
		name = h
		if strings.Contains(name, ":") {
			return net.ParseIP(name) != nil // [v6]:port
		}
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return strings.Contains(s, ":") && net.ParseIP(s[1:len(s)-1]) != nil
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// meantHost is the host a value that is not one most likely meant: the
// host of a URL (or of a host followed by a path), or, for a provider
// whose host is the first path element of its site's URLs (Linear's
// workspace key of https://linear.app/acme), that element; "" when it
// cannot tell.
func meantHost(p providers.Provider, value string) string {
	raw := strings.TrimSpace(value)
	if !strings.Contains(raw, "://") {
		raw = "//" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	if p.HostInURLPath != "" && strings.EqualFold(u.Hostname(), p.HostInURLPath) {
		first, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		return first
	}
	return u.Host
}

// workspaceChoices names the configured workspaces for an error message:
// "the workspaces are eng and ops".
func workspaceChoices(ws []Workspace) string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	switch len(ids) {
	case 0:
		return "no workspace is configured: add one under workspaces:"
	case 1:
		return "the workspace is " + ids[0]
	}
	return "the workspaces are " + strings.Join(ids[:len(ids)-1], ", ") + " and " + ids[len(ids)-1]
}
