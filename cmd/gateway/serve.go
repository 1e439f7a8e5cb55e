package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/mcpserver"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/outbound"
	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/recovery"
	"github.com/trackergateway/gateway/internal/retention"
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tasks"
	"github.com/trackergateway/gateway/internal/tracing"
)

// storeFlags are the flags of every command that opens the database.
type storeFlags struct {
	databaseURL string
	logLevel    string
}

func (s *storeFlags) register(fs *flag.FlagSet, env Env) {
	secretFlag(fs, &s.databaseURL, "database-url", envOr(env, "GATEWAY_DATABASE_URL", "sqlite:./data/gateway.db"), "database `url`: sqlite:PATH or postgres://… (env GATEWAY_DATABASE_URL)", redactURL)
	fs.StringVar(&s.logLevel, "log-level", envOr(env, "GATEWAY_LOG_LEVEL", "info"), "debug | info | warn | error (env GATEWAY_LOG_LEVEL)")
}

// serveFlags are serve's flags (a flag wins over its environment variable).
type serveFlags struct {
	storeFlags
	listen     string
	configPath string
	adminToken string
	workers    int
	// shutdownTimeout bounds a graceful stop (see serve).
	shutdownTimeout time.Duration
	// deliveryLease is how long a worker holds a claimed delivery and its
	// entity (inbox.WorkerOptions.Lease).
	deliveryLease time.Duration
	// maxInflightBodyBytes bounds the webhook body bytes held at once
	// (a size such as 256MiB; empty: the config's, else the default).
	maxInflightBodyBytes string
}

var serveUsage = usageText{
	line:    "serve [flags]",
	summary: "Runs the gateway: webhooks, the REST API, the operator console (/ui/) and the workers. It applies\nthe migrations first; with no --config it serves the zero-config workspace and connections, and\nprints the generated webhook secrets and admin token once, at the first start.",
	example: "gateway serve --database-url sqlite:./data/gateway.db --listen 127.0.0.1:8080",
}

var migrateUsage = usageText{
	line:    "migrate [flags]",
	summary: "Applies the database migrations and exits; running it again changes nothing.",
	example: "gateway migrate --database-url postgres://gateway@/gateway?host=/var/run/postgresql",
}

// parseServe parses and validates serve's flags, before anything is opened.
func parseServe(args []string, env Env, stdout, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.register(fs, env)
	fs.StringVar(&f.listen, "listen", envOr(env, "GATEWAY_LISTEN", "127.0.0.1:8080"), "listen address (env GATEWAY_LISTEN)")
	fs.StringVar(&f.configPath, "config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config file (env GATEWAY_CONFIG)")
	secretFlag(fs, &f.adminToken, "admin-token", envOr(env, "GATEWAY_ADMIN_TOKEN", ""), "admin API `token` (env GATEWAY_ADMIN_TOKEN); generated and printed once when unset", hidden)
	fs.IntVar(&f.workers, "workers", 4, "claiming goroutines; each processes a claim of up to 16 deliveries (32 on SQLite) concurrently")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM/SIGINT, how long webhooks in flight and deliveries in hand get to finish (env GATEWAY_SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&f.deliveryLease, "delivery-lease", inbox.DefaultLease, "how long a worker holds a claimed delivery and its entity: processing is cancelled after it, and a delivery a stopped replica held waits it out (a SQLite gateway takes its predecessor's back at start-up)")
	fs.StringVar(&f.maxInflightBodyBytes, "max-inflight-body-bytes", envOr(env, "GATEWAY_MAX_INFLIGHT_BODY_BYTES", ""), "bound on the webhook body bytes held in memory at once; over it webhooks get 503 with Retry-After e.g. 256MiB (env GATEWAY_MAX_INFLIGHT_BODY_BYTES, config max_inflight_body_bytes; default 256MiB)")
	if err := parseFlags(fs, serveUsage, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError(stderr, fs, serveUsage, "unexpected argument %q", fs.Arg(0))
	}
	// The environment's duration is read after parsing, so that a malformed
	// one does not stop -h, and only when the flag did not override it.
	if v := envOr(env, "GATEWAY_SHUTDOWN_TIMEOUT", ""); v != "" && !flagSet(fs, "shutdown-timeout") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, fmt.Errorf("GATEWAY_SHUTDOWN_TIMEOUT: %w", err)
		}
		f.shutdownTimeout = d
	}
	if f.adminToken != "" && !config.ValidToken(f.adminToken) {
		return f, fmt.Errorf("admin token (--admin-token or GATEWAY_ADMIN_TOKEN): must be at least %d characters", config.MinTokenLength)
	}
	if f.shutdownTimeout <= 0 {
		return f, errors.New("shutdown timeout (--shutdown-timeout or GATEWAY_SHUTDOWN_TIMEOUT): must be positive")
	}
	if f.deliveryLease < time.Second {
		return f, errors.New("delivery lease (--delivery-lease): must be at least 1s")
	}
	// Checked here too, so that a bad value is refused before the listener
	// and the database are touched; the config file's value comes later.
	if _, err := inflightBodyBytes(f.maxInflightBodyBytes, ""); err != nil {
		return f, err
	}
	return f, nil
}

// flagSet reports whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseMigrate parses migrate's flags.
func parseMigrate(args []string, env Env, stdout, stderr io.Writer) (storeFlags, error) {
	var f storeFlags
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	f.register(fs, env)
	if err := parseFlags(fs, migrateUsage, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError(stderr, fs, migrateUsage, "unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	// A line written inside a span names it (trace_id, span_id).
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}

// openStore opens the store named by a database URL. Its errors never hold
// the URL's password, whatever form it takes there.
func openStore(ctx context.Context, url string, logger *slog.Logger) (*sqlstore.Store, error) {
	st, err := openDialect(ctx, url, logger)
	return st, postgres.RedactError(err, url)
}

func openDialect(ctx context.Context, url string, logger *slog.Logger) (*sqlstore.Store, error) {
	switch {
	case strings.HasPrefix(url, sqlite.URLScheme):
		path, err := sqlite.ParseURL(url)
		if err != nil {
			return nil, err
		}
		d, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		return sqlstore.New(d), nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		d, err := postgres.Open(ctx, url, postgres.Options{}, logger)
		if err != nil {
			return nil, err
		}
		return sqlstore.New(d), nil
	}
	return nil, fmt.Errorf("database url %q: must start with sqlite: or postgres://", url)
}

// openMigrated opens the store and applies the migrations (serve and
// migrate both start this way).
func openMigrated(ctx context.Context, f storeFlags, logger *slog.Logger) (*sqlstore.Store, error) {
	st, err := openStore(ctx, f.databaseURL, logger)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, postgres.RedactError(err, f.databaseURL)
	}
	return st, nil
}

// openOwned opens the store, claims it for this process where one process
// can own it (SQLite: store.Store.ClaimSoleOwnership, so a second serve on
// the file is refused before it touches anything), and applies the
// migrations; sole reports the ownership.
func openOwned(ctx context.Context, f storeFlags, logger *slog.Logger) (st *sqlstore.Store, sole bool, err error) {
	st, err = openStore(ctx, f.databaseURL, logger)
	if err != nil {
		return nil, false, err
	}
	if sole, err = st.ClaimSoleOwnership(); err != nil {
		st.Close()
		return nil, false, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, false, postgres.RedactError(err, f.databaseURL)
	}
	return st, sole, nil
}

// takeBackLeases frees, at the start of a serve that owns its database
// alone, the leases its predecessor left (a kill -9, a power loss): the
// deliveries, entities and creations it cut off resume at once instead of
// after their leases expire.
func takeBackLeases(ctx context.Context, st store.Store, now time.Time, logger *slog.Logger) error {
	taken, err := st.TakeBackLeases(ctx, now)
	if err != nil {
		return err
	}
	if taken != (store.LeasesTakenBack{}) {
		logger.Info("took back the leases a previous run left", "deliveries", taken.Deliveries, "entities", taken.Entities,
			"creation_operations", taken.Operations, "creation_steps", taken.Steps)
	}
	return nil
}

func migrate(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	f, err := parseMigrate(args, env, stdout, stderr)
	if err != nil {
		return err
	}
	st, err := openMigrated(ctx, f, newLogger(stderr, f.logLevel))
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stdout, "database is migrated (%s)\n", st.Dialect())
	return nil
}

// adapters are the registered providers' adapters, keyed by provider name.
func adapters() map[string]connectors.Adapter { return providers.Adapters() }

// loadConfig reads the YAML file, or builds the zero-config one whose
// webhook secrets come from the environment or are generated once, stored,
// and printed.
func loadConfig(ctx context.Context, path string, env Env, st store.Store, stdout io.Writer) (config.Config, error) {
	if path != "" {
		return config.LoadEnv(path, env)
	}
	return config.Default(env, func(provider string) (string, error) {
		name := config.DefaultSecretEnv[provider]
		if v, ok := env(name); ok && v != "" {
			return v, nil
		}
		stored, created, err := st.EnsureGeneratedSecret(ctx, name, config.RandomSecret(), time.Now().UTC())
		if err != nil {
			return "", err
		}
		if created {
			fmt.Fprintf(stdout, "generated webhook secret for connection %q (shown once; set %s to choose your own): %s\n", provider, name, stored)
		}
		return stored, nil
	})
}

// applyWorkspaces writes workspaces and their steps idempotently.
func applyWorkspaces(ctx context.Context, workspaces []config.Workspace, st store.Store, now time.Time) error {
	for _, w := range workspaces {
		ws := store.Workspace{ID: w.ID, Name: w.Name, TaskPrefix: w.TaskPrefix, CreatedAt: now}
		for _, s := range w.Steps {
			ws.Steps = append(ws.Steps, store.Step{ID: s.ID, Name: s.Name, WIPLimit: s.WIPLimit})
		}
		if err := st.UpsertWorkspace(ctx, ws); err != nil {
			return fmt.Errorf("apply workspace %s: %w", w.ID, err)
		}
	}
	return nil
}

// applyConfig writes workspaces, steps and tokens idempotently, and the
// admin token (from the flag/env, else generated and printed once).
func applyConfig(ctx context.Context, cfg config.Config, adminToken string, st store.Store, stdout io.Writer) error {
	now := time.Now().UTC()
	if err := applyWorkspaces(ctx, cfg.Workspaces, st, now); err != nil {
		return err
	}
	for _, t := range cfg.Tokens {
		if err := st.UpsertToken(ctx, store.Token{ID: uuid.NewString(), Name: t.Name, TokenSHA256: httpapi.HashToken(t.Token),
			Workspaces: t.Workspaces, CreatedAt: now}); err != nil {
			return fmt.Errorf("apply token %s: %w", t.Name, err)
		}
	}
	if adminToken != "" {
		return st.UpsertToken(ctx, store.Token{ID: uuid.NewString(), Name: config.AdminTokenName,
			TokenSHA256: httpapi.HashToken(adminToken), Admin: true, CreatedAt: now})
	}
	if _, err := st.GetTokenByName(ctx, config.AdminTokenName); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	token := config.RandomSecret()
	if err := st.UpsertToken(ctx, store.Token{ID: uuid.NewString(), Name: config.AdminTokenName,
		TokenSHA256: httpapi.HashToken(token), Admin: true, CreatedAt: now}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "generated admin token (shown once; only its SHA-256 is stored; set GATEWAY_ADMIN_TOKEN to choose your own): %s\n", token)
	return nil
}

// inflightBodyBytes is the in-flight body bound: the flag (or its
// environment variable), else the config file's, else the default.
func inflightBodyBytes(flagValue, configValue string) (int64, error) {
	for _, v := range []string{flagValue, configValue} {
		if v != "" {
			n, err := config.ParseByteSize(v)
			if err != nil {
				return 0, fmt.Errorf("max-inflight-body-bytes: %w", err)
			}
			return n, nil
		}
	}
	return inbox.DefaultMaxInflightBodyBytes, nil
}

func serve(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	f, err := parseServe(args, env, stdout, stderr)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, f.logLevel)
	// Tracing (off unless the OTEL_* environment asks for an exporter):
	// every run context below keeps ctx's values, so the receiver, the
	// workers and the outbound attempts all find its provider.
	ctx, stopTracing, err := tracing.FromEnvironment(ctx, env, moduleVersion(), logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	// The listener is bound and the database migrated before any secret or
	// token is generated: those are printed once only, so a start that
	// fails must not have consumed them.
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	fail, err := failpoint(env)
	if err != nil {
		return err
	}
	started := time.Now()
	st, sole, err := openOwned(ctx, f.storeFlags, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	if sole {
		if err := takeBackLeases(ctx, st, started, logger); err != nil {
			return err
		}
	}
	cfg, err := loadConfig(ctx, f.configPath, env, st, stdout)
	if err != nil {
		return err
	}
	inflight, err := inflightBodyBytes(f.maxInflightBodyBytes, cfg.MaxInflightBodyBytes)
	if err != nil {
		return err
	}
	collectorFor(os.LookupEnv, inflight).apply()
	m := metrics.New(prometheus.NewRegistry())
	// GitHub App keys are read and checked before anything is generated: a
	// key that does not load is a start-up error naming its connection.
	apps, err := providerapi.LoadGitHubApps(cfg.Connections, &http.Client{Timeout: 30 * time.Second}, m, os.ReadFile)
	if err != nil {
		return err
	}
	if err := applyConfig(ctx, cfg, f.adminToken, st, stdout); err != nil {
		return err
	}
	conns := cfg.Connection
	lookupConn := func(id string) (config.Connection, bool) { return conns(id) }
	now := time.Now
	ads := adapters()

	known := make([]metrics.KnownConnection, 0, len(cfg.Connections))
	for _, c := range cfg.Connections {
		known = append(known, metrics.KnownConnection{ID: c.ID, Provider: c.Provider, APIAccess: c.HasAPIAccess()})
	}
	m.Preset(metrics.Known{Connections: known, RecoveryActions: idempotency.RecoveryActionLabels, RetentionKinds: retention.Kinds})
	m.WatchInbox(st, now, metrics.DefaultStatsInterval)
	coord := idempotency.New(st, logger, now, providers.ContributionKinds())
	coord.Metrics = m
	svc := tasks.NewService(st, logger, now)
	projector := projection.New(st, lookupConn, logger, now)
	projector.Metrics = m
	projector.Apps = apps
	api := tasks.NewAPI(svc, coord, projector, st, logger, now)
	receiver := inbox.NewReceiverWithOptions(st, ads, lookupConn, logger, now, inbox.ReceiverOptions{MaxInflightBodyBytes: inflight, Metrics: m})
	applier := ingest.New(lookupConn, ads, coord, svc, st, logger, now)
	applier.Failpoint = fail
	worker := inbox.NewWorker(st, applier, logger, now, inbox.WorkerOptions{Concurrency: f.workers, Lease: f.deliveryLease,
		Yield: receiver.Busy, Metrics: m})
	recoverer := idempotency.NewRecoverer(coord, st, logger)
	if sole {
		// Every creation left open before this start is its dead
		// predecessor's: nobody else creates with steps in this database.
		recoverer.AbandonedBefore = started
	}
	retain, err := cfg.Retention.Policy()
	if err != nil {
		return err
	}
	pruner := retention.New(st, logger, now, retain)
	pruner.OnDeleted = m.RetentionDeleted
	outboundPolicy, err := cfg.Outbound.Policy()
	if err != nil {
		return err
	}
	sender := outbound.New(st, logger, now, outbound.Options{RetrySchedule: outboundPolicy.RetrySchedule,
		DisableAfter: outboundPolicy.DisableAfter, AllowHTTP: outboundPolicy.AllowHTTP,
		Guard: outbound.Guard{AllowPrivate: outboundPolicy.AllowPrivate}, Yield: worker.Busy, Metrics: m})
	m.WatchOutbound(st, now, metrics.DefaultStatsInterval)
	subscriptions := outbound.NewAPI(st, logger, now, outboundPolicy.AllowHTTP)
	missed := recovery.New(st, lookupConn, logger, now)
	missed.Metrics = m
	missed.Apps = apps

	feed := events.NewFeed(st, logger)
	deliveries := inbox.NewOperators(st, logger, now)
	suppressions := ingest.NewSuppressions(st, logger)
	installations := ingest.NewInstallations(st, lookupConn, logger)
	authenticator := httpapi.NewAuthenticator(st, logger, nil)
	traceURL, _ := env(tracing.TraceURLVariable)
	var connectionIDs []string
	for _, c := range cfg.Connections {
		connectionIDs = append(connectionIDs, c.ID)
	}
	r := server.NewRouter(server.Deps{
		Receiver:      receiver,
		Tasks:         api,
		Deliveries:    deliveries,
		Suppressions:  suppressions,
		Installations: installations,
		Creations:     idempotency.NewOperators(coord, logger),
		Recovery:      recovery.NewOperators(missed, logger),
		Readiness:     inbox.NewReadiness(st, receiver, now),
		Metrics:       m,
		MCP:           mcpserver.New(api, deliveries, feed, logger, moduleVersion()),
		Events:        feed,
		Subscriptions: subscriptions,
		Console: console.New(console.Deps{Sessions: st, Activity: st, Authenticator: authenticator,
			Deliveries: deliveries, Suppressions: suppressions, Tasks: api, Recovery: missed, Installations: installations,
			Subscriptions: subscriptions, Connections: connectionIDs, TraceURL: traceURL}, logger, now),
		Authenticator: authenticator,
		Logger:        logger,
	})

	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	tracing.Server(ctx, srv)

	// Stopping (ctx ends: SIGTERM, SIGINT) is graceful and in this order:
	// the listener closes; webhooks in flight finish and are committed (the
	// receiver keeps committing until the HTTP server has stopped, so none
	// is answered 503); the workers (inbox and outbound) claim nothing more
	// and finish the delivery in hand; recovery, projection and retention
	// stop. --shutdown-timeout
	// bounds it all: when it expires, whatever still runs is cancelled. An
	// upload not yet acknowledged then gets no 202 and its provider retries;
	// nothing acknowledged is lost, as a 202 follows the commit. The run
	// contexts keep ctx's values, not its cancellation.
	hardCtx, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	receiverCtx, stopReceiver := context.WithCancel(hardCtx)
	defer stopReceiver()
	backgroundCtx, stopBackground := context.WithCancel(hardCtx)
	defer stopBackground()
	// Derived work (processing, recovery, projection, retention) commits with deferred
	// sync; the inbox and REST writes always sync (store.WithDeferredSync).
	var receiving, working, background sync.WaitGroup
	receiving.Go(func() { _ = receiver.Run(receiverCtx) })
	working.Go(func() { _ = worker.Run(store.WithDeferredSync(hardCtx)) })
	// Outbound writes are derived too: a lost one sends an event again,
	// never loses it.
	working.Go(func() { _ = sender.Run(store.WithDeferredSync(hardCtx)) })
	background.Go(func() { recoverer.Run(store.WithDeferredSync(backgroundCtx)) })
	background.Go(func() { projector.Run(store.WithDeferredSync(backgroundCtx)) })
	background.Go(func() { pruner.Run(store.WithDeferredSync(backgroundCtx)) })
	// Missed-delivery recovery commits each redelivery record with a full
	// sync before it asks the provider, so it never runs deferred.
	background.Go(func() { missed.Run(backgroundCtx, cfg.Connections) })
	background.Go(func() { apps.Check(backgroundCtx, logger) })
	// The feed's waiting requests answer as the stop begins (ctx ends),
	// so none holds up the server's graceful shutdown.
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	background.Go(func() { feed.Run(feedCtx) })
	waitAll := func() {
		receiving.Wait()
		working.Wait()
		background.Wait()
	}
	// The console's address is one a browser on this machine can open
	// (listenURL: an unspecified host is reached on the loopback address).
	consoleURL := listenURL(ln.Addr().String()) + "/ui/"
	fmt.Fprintf(stdout, "gateway listening on http://%s (database: %s); operator console: %s\n", ln.Addr(), st.Dialect(), consoleURL)
	logger.Info("gateway started", "listen", ln.Addr().String(), "console", consoleURL, "dialect", st.Dialect(),
		"connections", len(cfg.Connections))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		hardStop()
		stopFeed()
		waitAll()
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("gateway stopping", "shutdown_timeout", f.shutdownTimeout.String())
	timeout := time.AfterFunc(f.shutdownTimeout, hardStop)
	defer timeout.Stop()
	if err := srv.Shutdown(hardCtx); err != nil {
		// Out of time: cut the connections still open.
		_ = srv.Close()
	}
	stopReceiver()
	receiving.Wait()
	worker.Drain()
	sender.Drain()
	working.Wait()
	stopBackground()
	background.Wait()
	if hardCtx.Err() != nil {
		logger.Warn("shutdown timeout expired: requests and deliveries in flight were cancelled",
			"shutdown_timeout", f.shutdownTimeout.String())
	}
	logger.Info("gateway stopped")
	return nil
}
