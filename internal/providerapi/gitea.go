package providerapi

import (
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/metrics"
)

// GiteaClient is the Gitea SDK's client for conn (Gitea or Forgejo) over
// hc, its requests counted in m and guarded (guarded): api_url when set,
// else https://<host>; the SDK adds /api/v1. It does not ask the server's
// version when it is built (the SDK would, to pick its API calls): the
// calls the gateway makes are the same in every version it serves.
func GiteaClient(hc *http.Client, m *metrics.Metrics, conn config.Connection) (*gitea.Client, error) {
	raw := strings.TrimSuffix(conn.APIURL, "/")
	if raw == "" {
		raw = "https://" + conn.Host
	}
	base, err := apiBase(raw)
	if err != nil {
		return nil, err
	}
	return gitea.NewClient(raw, gitea.SetHTTPClient(guarded(hc, m, conn.Provider, base)),
		gitea.SetToken(conn.APIToken), gitea.SetGiteaVersion(""))
}
