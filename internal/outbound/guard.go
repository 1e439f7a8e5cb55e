package outbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// ErrRefusedDestination: the gateway will not connect there (an address
// in a refused range, or a scheme the configuration does not allow).
var ErrRefusedDestination = errors.New("destination refused")

// Resolver resolves host names: net.DefaultResolver, or a stub in tests.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DialFunc connects to one resolved address ("ip:port").
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Guard decides where outbound requests may connect. The check is made on
// the address actually dialled, after resolution, so a name that resolves
// to a public address when a subscription is saved and to a private one
// when it is used (DNS rebinding) is refused all the same.
type Guard struct {
	// AllowPrivate lets requests reach loopback, private, link-local,
	// multicast and unspecified addresses.
	AllowPrivate bool
	// Resolver resolves host names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address; nil is a net.Dialer that checks
	// the address again as the socket connects.
	Dial DialFunc
}

// sharedAddressSpace is 100.64.0.0/10 (carrier-grade NAT, RFC 6598): not
// on the public internet, so refused as private.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// nat64 is 64:ff9b::/96, whose addresses carry an IPv4 address in their last
// four bytes: they are judged by that address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refusedRange names the refused range ip is in, "" when it is allowed.
func refusedRange(ip netip.Addr) string {
	ip = ip.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case ip.IsUnspecified() || (ip.Is4() && ip.As4()[0] == 0):
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate() || sharedAddressSpace.Contains(ip):
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	return ""
}

// Check refuses ip unless it may be reached.
func (g Guard) Check(ip netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	if r := refusedRange(ip); r != "" {
		return fmt.Errorf("%w: %s is a %s address (outbound.allow_private is off)", ErrRefusedDestination, ip.Unmap(), r)
	}
	return nil
}

// DialContext resolves addr's host and connects to the first of its
// addresses that the guard allows and that answers.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portText, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		r := g.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				ips = append(ips, ip.Unmap().WithZone(a.Zone))
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("%s has no address", host)
		}
	}
	dial := g.Dial
	if dial == nil {
		dial = g.dialer().DialContext
	}
	// A refusal is the answer only when no address could be tried.
	var refused, failed error
	for _, ip := range ips {
		if err := g.Check(ip); err != nil {
			refused = cmp.Or(refused, err)
			continue
		}
		conn, err := dial(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		failed = cmp.Or(failed, err)
	}
	return nil, cmp.Or(failed, refused)
}

// dialer checks the address once more as the socket connects: whatever
// resolved it, this is the address the request goes to.
func (g Guard) dialer() *net.Dialer {
	return &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot read the address %q", ErrRefusedDestination, address)
			}
			return g.Check(ap.Addr())
		}}
}

// NewClient is the HTTP client of outbound requests: it connects through
// g, never through a proxy (the guard judges the address connected to),
// gives up after timeout and follows no redirect (a 3xx is the answer).
// It keeps up to idle connections per host open between requests: as many
// as the requests in flight, so a busy receiver's connections are reused
// rather than closed and dialled again.
func NewClient(g Guard, timeout time.Duration, idle int) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          2 * idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// MaxURLBytes bounds a subscription's URL.
const MaxURLBytes = 2048

// CheckURL validates a subscription URL: absolute http(s) with a host, no
// user information, at most MaxURLBytes, and https unless allowHTTP. The
// address it names is judged when connecting (Guard), not here.
func CheckURL(raw string, allowHTTP bool) error {
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("url is longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("url is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("url must be an http or https URL")
	case u.User != nil:
		return errors.New("url must not hold user information (user:password@)")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("url must name a host")
	case u.Scheme == "http" && !allowHTTP:
		return fmt.Errorf("%w: url must be https (outbound.allow_http is off)", ErrRefusedDestination)
	}
	return nil
}
