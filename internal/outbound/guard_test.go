package outbound

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func TestRefusedRanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want string // "" allowed
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "private"},
		{"fd00::1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:192.168.0.10", "private"},
		{"64:ff9b::a00:1", "private"}, // NAT64 of 10.0.0.1
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"224.0.0.1", "multicast"},
		{"239.1.2.3", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"255.255.255.255", "broadcast"},
		{"93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"2606:2800:220:1:248:1893:25c8:1946", ""},
		{"::ffff:93.184.216.34", ""},
	}
	for _, tc := range tests {
		if got := refusedRange(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("refusedRange(%s) = %q, want %q", tc.addr, got, tc.want)
		}
		err := Guard{}.Check(netip.MustParseAddr(tc.addr))
		if (err != nil) != (tc.want != "") || (err != nil && !errors.Is(err, ErrRefusedDestination)) {
			t.Errorf("Check(%s) = %v, want refused: %t", tc.addr, err, tc.want != "")
		}
		if err := (Guard{AllowPrivate: true}).Check(netip.MustParseAddr(tc.addr)); err != nil {
			t.Errorf("Check(%s) with allow_private = %v, want allowed", tc.addr, err)
		}
	}
}

// stubResolver answers names from a table, never the network.
type stubResolver map[string][]string

func (r stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

// recordingDial never connects anywhere: it records the address it is asked
// for and fails. A test whose guard let a refused address through sees it
// here; nothing leaves the machine even then.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

var errNotDialled = errors.New("test dial: not connecting")

func (d *recordingDial) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errNotDialled
}

func TestGuardDialsOnlyAllowedAddresses(t *testing.T) {
	t.Parallel()
	resolver := stubResolver{
		"internal.example": {"10.0.0.5"},
		"metadata.example": {"169.254.169.254"},
		"rebind.example":   {"192.168.1.7", "93.184.216.34"},
		"public.example":   {"93.184.216.34"},
		"v6.example":       {"::ffff:10.9.9.9"},
	}
	tests := []struct {
		name     string
		addr     string
		dialled  []string
		refusing string // in the error when nothing may be dialled
	}{
		{"private", "internal.example:443", nil, "10.0.0.5 is a private address"},
		{"link-local metadata", "metadata.example:80", nil, "169.254.169.254 is a link-local address"},
		{"mapped IPv6", "v6.example:443", nil, "10.9.9.9 is a private address"},
		{"literal private", "10.1.1.1:443", nil, "10.1.1.1 is a private address"},
		{"literal loopback v6", "[::1]:443", nil, "::1 is a loopback address"},
		{"a refused and an allowed address: only the allowed one", "rebind.example:443", []string{"93.184.216.34:443"}, ""},
		{"public", "public.example:8443", []string{"93.184.216.34:8443"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &recordingDial{}
			g := Guard{Resolver: resolver, Dial: d.dial}
			_, err := g.DialContext(context.Background(), "tcp", tc.addr)
			if strings.Join(d.addrs, ",") != strings.Join(tc.dialled, ",") {
				t.Errorf("dialled %v, want %v", d.addrs, tc.dialled)
			}
			switch {
			case tc.refusing != "" && (!errors.Is(err, ErrRefusedDestination) || !strings.Contains(err.Error(), tc.refusing)):
				t.Errorf("error = %v, want refused: %q", err, tc.refusing)
			case tc.refusing == "" && !errors.Is(err, errNotDialled):
				t.Errorf("error = %v, want the stub dial's", err)
			}
		})
	}
	// With allow_private the private address is dialled.
	d := &recordingDial{}
	_, _ = Guard{AllowPrivate: true, Resolver: resolver, Dial: d.dial}.DialContext(context.Background(), "tcp", "internal.example:443")
	if len(d.addrs) != 1 || d.addrs[0] != "10.0.0.5:443" {
		t.Errorf("with allow_private dialled %v, want 10.0.0.5:443", d.addrs)
	}
}

// The real client refuses a loopback receiver unless allow_private is on;
// the socket's own check (Control) refuses it too, whatever resolved it.
func TestClientRefusesLoopbackWithoutAllowPrivate(t *testing.T) {
	t.Parallel()
	got := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got++
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()

	resp, err := NewClient(Guard{}, DefaultTimeout, 1).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("request to a loopback receiver succeeded with allow_private off")
	}
	if !errors.Is(err, ErrRefusedDestination) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("error = %v, want a refused loopback destination", err)
	}
	// The socket check alone, as a resolver that lies would meet it.
	if _, err := (Guard{}).dialer().DialContext(context.Background(), "tcp", srv.Listener.Addr().String()); !errors.Is(err, ErrRefusedDestination) {
		t.Errorf("the dialer's own check = %v, want refused", err)
	}
	mu.Lock()
	if got != 0 {
		t.Errorf("the receiver got %d requests, want none", got)
	}
	mu.Unlock()

	resp, err = NewClient(Guard{AllowPrivate: true}, DefaultTimeout, 1).Get(srv.URL)
	if err != nil {
		t.Fatalf("with allow_private: %v", err)
	}
	resp.Body.Close()
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", MaxURLBytes)
	tests := []struct {
		url       string
		allowHTTP bool
		want      string // "" valid
	}{
		{"https://example.com/hook", false, ""},
		{"http://example.com/hook", true, ""},
		{"HTTPS://Example.com/hook?x=1", false, ""},
		{"http://example.com/hook", false, "url must be https (outbound.allow_http is off)"},
		{"ftp://example.com/x", true, "url must be an http or https URL"},
		{"example.com/hook", true, "url must be an http or https URL"},
		{"/relative", true, "url must be an http or https URL"},
		{"https://user:pass@example.com/", false, "user information"},
		{"https://user@example.com/", false, "user information"},
		{"https:///nohost", false, "url must name a host"},
		{"https://:443/", false, "url must name a host"},
		{"https://exa mple.com/", false, "not a valid URL"},
		{long, false, "longer than 2048 bytes"},
	}
	for _, tc := range tests {
		err := CheckURL(tc.url, tc.allowHTTP)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckURL(%.40q, http %t) = %v, want %q", tc.url, tc.allowHTTP, err, tc.want)
		}
	}
}
