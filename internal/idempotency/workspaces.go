package idempotency

import (
	"context"
	"sync"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// workspaceTTL is how long a creation may plan against a workspace read
// earlier. Workspaces are never deleted, and their steps change only when
// a replica applies its configuration at start, so the snapshot is what
// the database holds nearly always; reading it for every creation was a
// sixteenth of the gateway's CPU in a drain on SQLite (two queries on the
// reader pool) and two statements of every create on PostgreSQL.
const workspaceTTL = time.Second

// workspaces keeps each workspace, with its steps, for workspaceTTL. What a
// stale snapshot can do is bounded: a step another replica just added is
// unknown to this one for up to a second (the request fails as for any
// unknown step), and a WIP limit it just set is enforced here from at most
// a second later. A limit already in the snapshot is always checked
// against the workspace read again under its row lock (taskrules.Admit).
// A snapshot's TaskSequence is stale; creation never reads it (the
// identifier comes from the sequence UPDATE). A missing workspace is not
// kept, so one created through the API is found at once.
type workspaces struct {
	mu   sync.Mutex
	byID map[string]workspaceSnapshot
}

type workspaceSnapshot struct {
	ws     store.Workspace
	readAt time.Time
}

// cached returns the snapshot of id when it is fresh at now.
func (w *workspaces) cached(id string, now time.Time) (store.Workspace, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.byID[id]
	if !ok || now.Sub(s.readAt) >= workspaceTTL || now.Before(s.readAt) {
		return store.Workspace{}, false
	}
	return s.ws, true
}

func (w *workspaces) keep(ws store.Workspace, readAt time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byID == nil {
		w.byID = map[string]workspaceSnapshot{}
	}
	w.byID[ws.ID] = workspaceSnapshot{ws: ws, readAt: readAt}
}

// workspaceRead is the answer of a workspace read in flight.
type workspaceRead struct {
	ws  store.Workspace
	err error
}

// readWorkspace reads id through the snapshots: fresh, it answers at once;
// otherwise it returns a function that waits for the read it started.
func (c *Coordinator) readWorkspace(ctx context.Context, id string) func() (store.Workspace, error) {
	now := c.now()
	if ws, ok := c.workspaces.cached(id, now); ok {
		return func() (store.Workspace, error) { return ws, nil }
	}
	read := make(chan workspaceRead, 1)
	go func() {
		ws, err := c.st.GetWorkspace(ctx, id)
		if err == nil {
			c.workspaces.keep(ws, now)
		}
		read <- workspaceRead{ws, err}
	}()
	return func() (store.Workspace, error) { r := <-read; return r.ws, r.err }
}
