package providerapi

import (
	"net/http"
	"strings"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/metrics"
)

// LinearAPI is Linear's GraphQL endpoint.
const LinearAPI = "https://api.linear.app/graphql"

// LinearClient is an HTTP client for conn's Linear GraphQL endpoint
// (api_url when set, else LinearAPI), its requests counted in m and
// guarded (guarded), and the endpoint. Linear has no Go client; its API is
// one GraphQL endpoint the caller posts queries to, with
// LinearAuthorization.
func LinearClient(hc *http.Client, m *metrics.Metrics, conn config.Connection) (*http.Client, string, error) {
	raw := conn.APIURL
	if raw == "" {
		raw = LinearAPI
	}
	base, err := apiBase(raw)
	if err != nil {
		return nil, "", err
	}
	return guarded(hc, m, conn.Provider, base), raw, nil
}

// LinearAuthorization is the Authorization header value for token: a
// personal API key ("lin_api_…") is sent as it is, an OAuth access token
// as a bearer token, as Linear asks.
func LinearAuthorization(token string) string {
	if strings.HasPrefix(token, "lin_api_") || strings.HasPrefix(token, "Bearer ") {
		return token
	}
	return "Bearer " + token
}
