package ingest

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// InstallationStore reads the recorded GitHub App installations.
type InstallationStore interface {
	ListInstallations(ctx context.Context, connectionID string) ([]store.Installation, error)
}

// InstallationJSON is one GitHub App installation as operators see it.
type InstallationJSON struct {
	ID                  int64      `json:"id"`
	Account             string     `json:"account"`
	AccountType         string     `json:"account_type"`
	RepositorySelection string     `json:"repository_selection"`
	Repositories        []string   `json:"repositories"`
	Suspended           bool       `json:"suspended"`
	SuspendedAt         *time.Time `json:"suspended_at,omitempty"`
	Deleted             bool       `json:"deleted"`
	DeletedAt           *time.Time `json:"deleted_at,omitempty"`
	UpdatedAt           time.Time  `json:"updated_at"`
	LastDeliveryID      string     `json:"last_delivery_id"`
}

// NewInstallationJSON is in as operators see it.
func NewInstallationJSON(in store.Installation) InstallationJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	repos := in.Repositories
	if repos == nil {
		repos = []string{}
	}
	return InstallationJSON{ID: in.InstallationID, Account: in.AccountLogin, AccountType: in.AccountType,
		RepositorySelection: in.RepositorySelection, Repositories: repos,
		Suspended: in.SuspendedAt != nil, SuspendedAt: utc(in.SuspendedAt),
		Deleted: in.DeletedAt != nil, DeletedAt: utc(in.DeletedAt),
		UpdatedAt: in.UpdatedAt.UTC(), LastDeliveryID: in.LastDeliveryID}
}

// Installations serves the operator route of GitHub App installations.
type Installations struct {
	st     InstallationStore
	conns  func(id string) (config.Connection, bool)
	logger *slog.Logger
}

// NewInstallations returns the installation handlers; logger may be nil.
func NewInstallations(st InstallationStore, conns func(string) (config.Connection, bool), logger *slog.Logger) *Installations {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Installations{st: st, conns: conns, logger: logger}
}

// ListInstallations answers the installations recorded for the connection
// {id}, deleted ones included; 404 when no such connection is configured.
func (s *Installations) ListInstallations(w http.ResponseWriter, r *http.Request) {
	list, err := s.List(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		httpapi.WriteError(w, r, s.logger, err)
		return
	}
	items := make([]InstallationJSON, 0, len(list))
	for _, in := range list {
		items = append(items, NewInstallationJSON(in))
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"installations": items})
}

// List returns the installations of a configured connection, by
// installation ID; "connection not found" for any other.
func (s *Installations) List(ctx context.Context, connectionID string) ([]store.Installation, error) {
	if _, ok := s.conns(connectionID); !ok {
		return nil, failure.New(failure.NotFound, "connection not found")
	}
	return s.st.ListInstallations(ctx, connectionID)
}

// Offered says whether the connection has GitHub App installations to
// show: its provider records them (providers.Provider.Installations) and
// the connection is an App's (app: in its configuration), or has recorded
// some (an App whose webhook posts to a connection configured without the
// App's credentials). A repository or organization hook's connection has
// none.
func (s *Installations) Offered(ctx context.Context, connectionID string) (bool, error) {
	conn, ok := s.conns(connectionID)
	if !ok {
		return false, nil
	}
	if p, ok := providers.Lookup(conn.Provider); !ok || !p.Installations {
		return false, nil
	}
	if conn.App != nil {
		return true, nil
	}
	list, err := s.st.ListInstallations(ctx, connectionID)
	return len(list) > 0, err
}
