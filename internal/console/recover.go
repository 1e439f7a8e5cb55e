package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/recovery"
)

// hooksTimeout bounds how long a page waits for the providers to say how
// the hooks are: a provider that does not answer must not hold the page
// (or the dry run it shows) for the recoverer's whole retry budget.
const hooksTimeout = 10 * time.Second

// defaultSince is the form's window: recovery.DefaultWindow as people
// type it.
const defaultSince = "24h"

type recoverPage struct {
	Connections []recoverConnection
}

// recoverConnection is one connection's part of the missed deliveries
// page.
type recoverConnection struct {
	ID string
	// Unavailable is why the connection cannot be recovered; empty when
	// it can.
	Unavailable string
	// Hooks are the configured hooks as their provider sees them;
	// HooksError is why they could not be read at all.
	Hooks      []recovery.HookState
	HooksError string
	// Off counts the hooks the provider does not deliver through.
	Off int
	// Since is the form's window and Error what was wrong with the
	// form's post; WindowHint why the window is at most 72h, in the
	// provider's terms.
	Since      string
	Error      string
	WindowHint string
	// Run is what the posted run found and asked for.
	Run *recoverRun
}

// recoverRun is a run's answer, with what it was asked.
type recoverRun struct {
	DryRun bool
	Since  string
	recovery.Result
}

// recoverPage is the page for every connection: for each one that can be
// recovered its hooks' state (read from the providers concurrently, within
// hooksTimeout), otherwise why it cannot be.
func (c *Console) recoverPage(ctx context.Context) recoverPage {
	page := recoverPage{Connections: make([]recoverConnection, len(c.d.Connections))}
	ctx, cancel := context.WithTimeout(ctx, hooksTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, id := range c.d.Connections {
		conn := &page.Connections[i]
		conn.ID, conn.Since, conn.WindowHint = id, defaultSince, c.d.Recovery.WindowHint(id)
		if err := c.d.Recovery.Recoverable(id); err != nil {
			conn.Unavailable = failure.MessageOf(err)
			continue
		}
		wg.Go(func() {
			hooks, err := c.d.Recovery.Hooks(ctx, id)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				conn.HooksError = "the provider did not answer within " + hooksTimeout.String()
			case err != nil:
				c.logger.WarnContext(ctx, "read hook states", "connection", id, "error", err)
				conn.HooksError = failure.MessageOf(err)
			}
			conn.Hooks = hooks
			for _, h := range hooks {
				if h.Error == "" && !h.Active {
					conn.Off++
				}
			}
		})
	}
	wg.Wait()
	return page
}

// RecoverPage lists the connections: for each one recovery can run for,
// its hooks' state and the dry run's form; for the others why not.
func (c *Console) RecoverPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "recover", "Missed deliveries", c.recoverPage(r.Context()))
}

// Recover runs recovery for the form's connection (form: connection,
// since, dry_run "true" or "false") and shows the page with what the run
// found and, confirmed, asked for. The dry run's page carries the
// confirmation's form.
//
// It renders its answer instead of redirecting: the answer is what the
// provider listed and said to this run, which a redirect cannot carry and
// reading again would ask the provider again. Posting the confirmation
// twice (a reload) asks nothing twice: recovery records every request
// before it asks, and lists a delivery asked for before with its request's
// state.
func (c *Console) Recover(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PostForm.Get("connection")
	if !slices.Contains(c.d.Connections, id) {
		c.fail(w, r, failure.New(failure.NotFound, "connection not found"))
		return
	}
	var dryRun bool
	switch r.PostForm.Get("dry_run") {
	case "true":
		dryRun = true
	case "false":
	default:
		c.fail(w, r, failure.New(failure.Invalid, "dry_run must be true or false"))
		return
	}
	run := recoverRun{DryRun: dryRun, Since: r.PostForm.Get("since")}
	if run.Since == "" {
		run.Since = defaultSince
	}
	since, err := recovery.ParseSince(run.Since)
	if err == nil {
		run.Result, err = c.d.Recovery.Recover(ctx, id, recovery.Options{Since: since, DryRun: dryRun})
	}
	if err != nil && failure.CodeOf(err) != failure.Invalid {
		c.fail(w, r, err)
		return
	}
	if !dryRun && err == nil {
		principal := ""
		if s, ok := sessionFrom(ctx); ok {
			principal = s.principal.Name
		}
		c.logger.InfoContext(ctx, "console recovery run", "principal", principal, "connection", id, "since", run.Since,
			"checked", run.Checked, "missing", run.Missing, "redelivered", run.Count(), "unfinished", len(run.Unfinished))
	}
	// The hooks are read after the run, so they show the state it left.
	page := c.recoverPage(ctx)
	conn := &page.Connections[slices.Index(c.d.Connections, id)]
	conn.Since = run.Since
	status := http.StatusOK
	if err != nil {
		conn.Error, status = failure.MessageOf(err), http.StatusBadRequest
	} else {
		conn.Run = &run
	}
	c.render(w, r, status, "recover", "Missed deliveries", page)
}
