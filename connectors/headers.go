package connectors

import (
	"net/http"
	"slices"
	"strings"
)

// DeliveryHeaders describes the headers of a provider's deliveries, which
// the receiver checks before it reads a body: a delivery another provider
// sent (a hook pointed at the wrong connection) and one missing a header
// its provider always sends are refused at the door, never stored.
type DeliveryHeaders struct {
	// Title is the provider as its users name it ("GitHub", "Gitea").
	Title string
	// Identifying are headers whose presence says a delivery comes from
	// this provider, in the order a refusal names the first one present.
	Identifying []string
	// Imitates are the providers whose identifying headers this one's
	// deliveries carry too, for receivers written for those (Gitea sends
	// X-GitHub-Event): when both are identified, the delivery is this
	// provider's.
	Imitates []string
	// Required are the headers every delivery of the provider carries,
	// each as its alternatives (X-Gitea-Event or X-Forgejo-Event). A header
	// a provider may leave out, with a documented fallback (GitLab's
	// Idempotency-Key, Jira Data Center's identifier), is not required.
	Required [][]string
}

// HeaderDescriber is implemented by adapters that describe their
// provider's delivery headers. The receiver asks on every request; the
// slices are shared, never to be modified.
type HeaderDescriber interface {
	DeliveryHeaders() DeliveryHeaders
}

// Identified is the provider a delivery's headers name.
type Identified struct {
	Provider string
	Title    string
	// Header is the first identifying header present.
	Header string
}

// IdentifyProviders returns the providers whose identifying headers h
// carries, among adapters and in their order, leaving out a provider
// another named one imitates: Gitea's deliveries name Gitea, not GitHub.
// A genuine delivery names one provider; none when h names no provider.
func IdentifyProviders(h http.Header, adapters []Adapter) []Identified {
	var found []Identified
	var imitated []string
	for _, a := range adapters {
		d, ok := a.(HeaderDescriber)
		if !ok {
			continue
		}
		desc := d.DeliveryHeaders()
		i := slices.IndexFunc(desc.Identifying, func(name string) bool { return present(h, name) })
		if i < 0 {
			continue
		}
		found = append(found, Identified{Provider: a.Provider(), Title: desc.Title, Header: desc.Identifying[i]})
		imitated = append(imitated, desc.Imitates...)
	}
	return slices.DeleteFunc(found, func(id Identified) bool { return slices.Contains(imitated, id.Provider) })
}

// MissingHeader returns the first header a's provider requires that h
// lacks, its alternatives joined with " or "; ok is false when none is
// missing (or a does not describe its headers).
func MissingHeader(h http.Header, a Adapter) (string, bool) {
	d, ok := a.(HeaderDescriber)
	if !ok {
		return "", false
	}
	for _, alternatives := range d.DeliveryHeaders().Required {
		if !slices.ContainsFunc(alternatives, func(name string) bool { return present(h, name) }) {
			return strings.Join(alternatives, " or "), true
		}
	}
	return "", false
}

// present reports whether h carries name with a value other than blanks.
func present(h http.Header, name string) bool {
	for _, v := range h.Values(name) {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}
