// Command ingestbench measures the webhook ingest path of a real gateway
// process: durable acks per second with 64 concurrent senders against the
// ceiling (a server of this command's own, ceiling.go, that reads, verifies
// and acknowledges each webhook as the gateway does, without storing it),
// ack latency at a fixed 1,000 deliveries/s (as the senders see it, and as
// the gateway's own gateway_webhook_ack_seconds histogram puts it),
// receive-to-task-created latency at 500 deliveries/s, a burst's tasks/s
// against its acks/s with the gateway's CPU per task, the gateway's peak
// RSS, (disk.go) the sync times of the disk the database is on, and
// (outbound.go) task events delivered to webhook subscriptions: a
// backlog's deliveries/s to 1 and 10 subscriptions, commit-to-receipt at
// 200 events/s, and, with --subscriptions, every other phase with
// subscriptions active. It
// starts `gateway serve` (or, for the ceiling, itself in its ceiling-server
// mode) as a subprocess per measurement and talks to it over loopback
// only; every loop is bounded in count and time.
//
//	go build -o /tmp/gateway ./cmd/gateway
//	go run ./cmd/ingestbench --gateway /tmp/gateway --database-url sqlite:x --rounds 3
//
// With a postgres:// URL each run gets a fresh schema, dropped afterwards,
// and starts from a CHECKPOINT.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
)

const (
	secret     = "bench-secret-0123456789abcdef"
	adminToken = "bench-admin-token-0123456789"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == ceilingMode {
		if err := runCeilingServer(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ingestbench:", err)
			os.Exit(1)
		}
		return
	}
	gatewayBin := flag.String("gateway", "/tmp/gateway", "gateway binary")
	dbURL := flag.String("database-url", "", "database URL (sqlite:PATH or postgres://…); each run uses a fresh database when it is sqlite, or a fresh schema when --fresh-schema")
	fixture := flag.String("fixture", "fixtures/github/issues.opened.json", "payload template: a new-issue delivery of GitHub (the default, 13.5 KB), GitLab (fixtures/gitlab/issue.json) or Jira (fixtures/jira/webhook-issue-created.json), told apart by its shape")
	senders := flag.Int("senders", 64, "concurrent senders for the throughput phase")
	duration := flag.Duration("duration", 10*time.Second, "length of each phase")
	extra := flag.String("serve-args", "", "extra arguments for gateway serve (e.g. \"--workers 8\")")
	preloadDeliveries := flag.Int("preload-deliveries", 0, "finished deliveries stored in each run's fresh database before the gateway starts (the flat-cost experiment; not with the prune phase)")
	preloadTasks := flag.Int("preload-tasks", 0, "complete tasks, with their creation operations, stored likewise (in a workspace of their own)")
	phaseList := flag.String("phases", "ceiling,durable,ack,e2e", "phases to run: outbound (--drain-deliveries events made by a drain, then delivered to each count of --outbound-subscriptions webhook subscriptions on a receiver of this process: deliveries/s), outbound-latency (commit-to-receipt of the task.created events of tasks created through the API at --outbound-rate/s, to one subscription), disk (syncs of 16 KiB at 1,000/s beside the database, no gateway: what the disk allows an acknowledgement), ceiling and durable (throughput), ack (latency at 1,000/s), e2e (receive-to-task at 500/s), bigbodies (peak RSS under 48 unauthenticated and 64 signed 20 MB uploads at once), prune (ack latency at 1,000/s while retention deletes --prune-rows expired deliveries, against the same backlog kept), drain (--drain-deliveries new issues sent as fast as they are acknowledged, then tasks/s against acks/s)")
	drainN := flag.Int("drain-deliveries", 6000, "new issues the drain phase sends")
	pruneRows := flag.Int("prune-rows", 100_000, "expired deliveries the prune phase seeds")
	rounds := flag.Int("rounds", 1, "run the phases this many times, in turn, and report each round and the medians (the VM's speed drifts between runs)")
	subscriptions := flag.Int("subscriptions", 0, "webhook subscriptions (to a receiver of this process) active during every other phase's run: what outbound delivery costs the intake")
	outboundSubs := flag.String("outbound-subscriptions", "1,10", "the outbound phase's subscription counts, comma-separated")
	outboundRate := flag.Int("outbound-rate", 200, "tasks (events) created per second in the outbound-latency phase")
	tracingMode := flag.String("tracing", "", "trace the gateways to an OTLP/HTTP sink of this process (every trace sampled): on (every round) or alternate (odd rounds off, even rounds on); empty leaves the environment as it is")
	sendersProfile := flag.String("senders-profile", "", "directory for a CPU profile of ingestbench's own process (the senders) over each run, run-N.pprof: where the load generator's CPU per acknowledgement goes")
	flag.Parse()
	phases := map[string]bool{}
	for _, p := range strings.Split(*phaseList, ",") {
		phases[strings.TrimSpace(p)] = true
	}
	if *dbURL == "" {
		fmt.Fprintln(os.Stderr, "ingestbench: --database-url is required")
		os.Exit(2)
	}
	tmpl, err := newTemplate(*fixture)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingestbench:", err)
		os.Exit(1)
	}
	fmt.Printf("payload: %d bytes of %s, signed; senders: %d; phase: %s\n", len(tmpl.raw), tmpl.provider, *senders, *duration)
	b := bench{bin: *gatewayBin, dbURL: *dbURL, tmpl: tmpl, extra: strings.Fields(*extra), drainN: *drainN, profileDir: *sendersProfile,
		activeSubs: *subscriptions, outboundRate: *outboundRate}
	for _, f := range strings.Split(*outboundSubs, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			b.outboundSubs = append(b.outboundSubs, n)
		}
	}
	if b.activeSubs > 0 {
		fmt.Printf("%d webhook subscription(s) active during each run but the outbound phases'\n", b.activeSubs)
	}
	if *preloadDeliveries > 0 || *preloadTasks > 0 {
		b.seed = func(url string) {
			began := time.Now()
			seedStored(url, tmpl, *preloadDeliveries, *preloadTasks)
			fmt.Printf("preloaded %d deliveries and %d tasks in %s\n", *preloadDeliveries, *preloadTasks, time.Since(began).Round(time.Second))
		}
	}
	var sink *otlpSink
	if *tracingMode != "" {
		if *tracingMode != "on" && *tracingMode != "alternate" {
			fmt.Fprintln(os.Stderr, "ingestbench: --tracing is on or alternate")
			os.Exit(2)
		}
		if sink, err = startOTLPSink(); err != nil {
			fmt.Fprintln(os.Stderr, "ingestbench:", err)
			os.Exit(1)
		}
	}
	var results []round
	for i := range max(*rounds, 1) {
		fmt.Printf("\n== round %d\n", i+1)
		if sink != nil {
			on := *tracingMode == "on" || i%2 == 1
			sink.traceGateways(on)
			fmt.Printf("tracing: %v (%s)\n", on, sink)
		}
		results = append(results, b.round(phases, *senders, *duration))
		if phases["prune"] {
			fmt.Println(b.prunePhase(*pruneRows, *duration))
		}
	}
	if len(results) > 1 {
		summarize(results)
	}
}

// round is one pass over the selected phases; zero values were not measured.
type round struct {
	ceiling, durable float64 // acks/s
	// What one acknowledgement cost each process in those two runs.
	ceilingCost, durableCost ackCost
	ackP50, ackP99           time.Duration
	// The share of the ack phase's acknowledgements the gateway's own
	// histogram puts within 5 ms (receipt to 2xx, inside its handler).
	ackServerWithin5ms float64
	e2eP50, e2eP99     time.Duration
	e2eWhileSending    float64 // tasks/s created while the 500/s arrived
	peakRSSMB          int64
	// Peak RSS under the big-bodies bursts.
	unauthRSSMB, signedRSSMB int64
	// The drain phase's rates.
	drainAcks, drainTasks float64
	drainCPUPerTask       float64 // ms of the gateway's CPU per task
	// The outbound phases: deliveries/s per subscription count, and
	// commit-to-receipt at the fixed rate.
	outbound                 map[int]outboundResult
	outboundP50, outboundP99 time.Duration
	// The disk phase's sync p99.
	diskP99 time.Duration
	// The most the hypervisor took of the cores during one of its runs.
	maxStealPct float64
}

func (b *bench) round(phases map[string]bool, senders int, duration time.Duration) round {
	var r round
	b.maxStealPct = 0
	if phases["disk"] {
		res := probeDisk(diskDir(b.dbURL), duration)
		r.diskP99 = res.syncs.p(99)
		fmt.Println(res)
	}
	if phases["ceiling"] {
		g := b.run("ceiling (verify, no store; ingestbench's own server)", true, func(g *gateway) {
			g.acked, g.acks = throughput(g.url, b.tmpl, senders, duration, &b.seq)
		})
		r.ceiling = g.acks
		r.ceilingCost = costPerAck(g, float64(g.acked))
		fmt.Printf("ceiling: %.0f acks/s, peak RSS %d MB; CPU per ack: senders %.0f µs, server %.0f µs\n",
			g.acks, g.rssMB, r.ceilingCost.senders, r.ceilingCost.server)
	}
	if phases["durable"] {
		g := b.run("durable ingest", false, func(g *gateway) {
			g.acked, g.acks = throughput(g.url, b.tmpl, senders, duration, &b.seq)
		})
		r.durable, r.peakRSSMB = g.acks, max(r.peakRSSMB, g.rssMB)
		// The gateway's CPU per acknowledgement moves less with the
		// machine's speed than the rate does.
		r.durableCost = costPerAck(g, float64(g.acked))
		fmt.Printf("durable: %.0f acks/s, gateway CPU %.0f µs per ack, peak RSS %d MB\n", g.acks, r.durableCost.server, g.rssMB)
		fmt.Printf("durable CPU per ack: senders %.0f µs, gateway %.0f µs, database server %.0f µs\n",
			r.durableCost.senders, r.durableCost.server, r.durableCost.database)
	}
	if r.ceiling > 0 && r.durable > 0 {
		fmt.Printf("throughput: durable %.0f acks/s, ceiling %.0f acks/s, ratio %.0f%%\n", r.durable, r.ceiling, 100*r.durable/r.ceiling)
		if r.ceilingCost.total() > 0 && r.durableCost.total() > 0 {
			fmt.Printf("CPU budget: 70%% of the ceiling leaves the gateway and its database %.0f µs per ack together; this run used %.0f\n",
				durableBudget(r.ceilingCost, r.durableCost, 0.7), r.durableCost.server+r.durableCost.database)
		}
	}
	if phases["ack"] {
		g := b.run("ack latency at 1000/s", false, func(g *gateway) {
			g.ackLatency = fixedRate(g.url, b.tmpl, 1000, duration, &b.seq)
			g.serverAcks, g.serverAcksErr = serverAckShares(g.url)
		})
		r.ackP50, r.ackP99, r.peakRSSMB = g.ackLatency.p(50), g.ackLatency.p(99), max(r.peakRSSMB, g.rssMB)
		fmt.Printf("ack latency at 1000/s: p50 %s p90 %s p99 %s max %s (%d sent, %d non-202)\n", r.ackP50, g.ackLatency.p(90), r.ackP99, g.ackLatency.p(100), g.ackLatency.n, g.ackLatency.errors)
		for _, share := range g.serverAcks {
			if share.bound == 0.005 {
				r.ackServerWithin5ms = 100 * share.share
			}
		}
		if g.serverAcksErr != nil {
			fmt.Printf("gateway's own ack times: %v\n", g.serverAcksErr)
		} else {
			fmt.Printf("gateway's own ack times (receipt to 2xx): %s\n", formatShares(g.serverAcks))
		}
	}
	if phases["e2e"] {
		g := b.run("receive-to-task at 500/s", false, func(g *gateway) {
			fixedRate(g.url, b.tmpl, 500, duration, &b.seq)
			g.taskLatency, g.pace = receiveToTask(g.url, b.tmpl.externalID(b.seq.Load()))
		})
		r.e2eP50, r.e2eP99, r.peakRSSMB = g.taskLatency.p(50), g.taskLatency.p(99), max(r.peakRSSMB, g.rssMB)
		r.e2eWhileSending = g.pace.whileSending
		fmt.Printf("receive-to-task-created at 500/s: p50 %s p90 %s p99 %s max %s (%d tasks)\n", r.e2eP50, g.taskLatency.p(90), r.e2eP99, g.taskLatency.p(100), g.taskLatency.n)
		fmt.Printf("tasks created at 500/s: %.0f/s while the deliveries arrived, %.0f/s after the last one\n", g.pace.whileSending, g.pace.after)
	}
	if phases["drain"] {
		var res drainResult
		g := b.run(fmt.Sprintf("drain of %d new issues", b.drainN), false, func(g *gateway) {
			res = drain(g.url, b.tmpl, senders, b.drainN, &b.seq)
			if g.receiver != nil {
				// The phase (and its CPU) ends once the burst's events
				// are out too.
				res.events = g.subs * res.tasks
				if g.receiver.waitReceived(int64(res.events), 2*time.Minute) {
					res.eventsSeconds = time.Unix(0, g.receiver.last.Load()).Sub(res.start).Seconds()
				}
			}
		})
		res.gatewayCPU = g.cpuSeconds
		if res.tasks == res.n && res.ackSeconds > 0 {
			r.drainAcks, r.drainTasks = res.acksPerSecond(), res.tasksPerSecond()
			r.drainCPUPerTask = 1000 * res.gatewayCPU / float64(res.tasks)
		}
		r.peakRSSMB = max(r.peakRSSMB, g.rssMB)
		fmt.Println(res)
	}
	if phases["outbound"] {
		r.outbound = map[int]outboundResult{}
		active := b.activeSubs
		b.activeSubs = 0
		for _, n := range b.outboundSubs {
			res := b.outboundPhase(n, senders)
			fmt.Println(res)
			if res.seconds > 0 && res.received >= int64(res.events*res.subs) {
				r.outbound[n] = res
			}
		}
		b.activeSubs = active
	}
	if phases["outbound-latency"] {
		active := b.activeSubs
		b.activeSubs = 0
		lat, stamped := b.outboundLatency(b.outboundRate, duration)
		b.activeSubs = active
		r.outboundP50, r.outboundP99 = lat.p(50), lat.p(99)
		fmt.Printf("commit-to-receipt at %d events/s: p50 %s p90 %s p99 %s max %s (%d events; from the create's answer)\n", b.outboundRate,
			r.outboundP50, lat.p(90), r.outboundP99, lat.p(100), lat.n)
		fmt.Printf("  from the event's timestamp (stamped before the commit): p50 %s p99 %s\n", stamped.p(50), stamped.p(99))
	}
	if r.peakRSSMB > 0 {
		fmt.Printf("peak RSS over the round: %d MB\n", r.peakRSSMB)
	}
	if phases["bigbodies"] {
		body := bigBody(b.tmpl)
		var res bigBodyResult
		g := b.run("48 unauthenticated 20 MB uploads", false, func(g *gateway) {
			res = bigBodies(g.url, body, 48, "wrong-secret")
		})
		r.unauthRSSMB = g.rssMB
		fmt.Printf("48 unauthenticated 20 MB uploads: peak RSS %d MB; %s\n", g.rssMB, res)
		g = b.run("64 signed 20 MB uploads", false, func(g *gateway) {
			res = bigBodies(g.url, body, 64, secret)
		})
		r.signedRSSMB = g.rssMB
		fmt.Printf("64 signed 20 MB uploads: peak RSS %d MB; %s\n", g.rssMB, res)
	}
	r.maxStealPct = b.maxStealPct
	return r
}

// summarize prints every round's numbers on one line each and the medians.
func summarize(rs []round) {
	fmt.Printf("\n== %d rounds (median last)\n", len(rs))
	line := func(name string, f func(round) float64, format func(float64) string) {
		var vs []float64
		for _, r := range rs {
			if v := f(r); v > 0 {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return
		}
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = format(v)
		}
		sort.Float64s(vs)
		fmt.Printf("%-28s %s  → median %s\n", name, strings.Join(parts, " "), format(vs[len(vs)/2]))
	}
	rate := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	pct := func(v float64) string { return fmt.Sprintf("%.0f%%", v) }
	dur := func(v float64) string { return time.Duration(v).Round(10 * time.Microsecond).String() }
	line("disk sync p99", func(r round) float64 { return float64(r.diskP99) }, dur)
	line("ceiling acks/s", func(r round) float64 { return r.ceiling }, rate)
	line("durable acks/s", func(r round) float64 { return r.durable }, rate)
	line("durable / ceiling", func(r round) float64 {
		if r.ceiling == 0 {
			return 0
		}
		return 100 * r.durable / r.ceiling
	}, pct)
	micros := func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
	line("gateway CPU per ack", func(r round) float64 { return r.durableCost.server }, micros)
	line("database CPU per ack", func(r round) float64 { return r.durableCost.database }, micros)
	line("budget for 70% of ceiling", func(r round) float64 {
		if r.ceilingCost.total() == 0 || r.durableCost.total() == 0 {
			return 0
		}
		return durableBudget(r.ceilingCost, r.durableCost, 0.7)
	}, micros)
	line("ack p50 at 1000/s", func(r round) float64 { return float64(r.ackP50) }, dur)
	line("ack p99 at 1000/s", func(r round) float64 { return float64(r.ackP99) }, dur)
	line("gateway's own acks ≤ 5 ms", func(r round) float64 { return r.ackServerWithin5ms }, func(v float64) string { return fmt.Sprintf("%.2f%%", v) })
	line("receive-to-task p50 at 500/s", func(r round) float64 { return float64(r.e2eP50) }, dur)
	line("receive-to-task p99 at 500/s", func(r round) float64 { return float64(r.e2eP99) }, dur)
	line("tasks/s while 500/s arrive", func(r round) float64 { return r.e2eWhileSending }, rate)
	line("drain acks/s", func(r round) float64 { return r.drainAcks }, rate)
	line("drain tasks/s", func(r round) float64 { return r.drainTasks }, rate)
	line("drain tasks / acks", func(r round) float64 {
		if r.drainAcks == 0 {
			return 0
		}
		return 100 * r.drainTasks / r.drainAcks
	}, pct)
	line("drain CPU ms per task", func(r round) float64 { return r.drainCPUPerTask }, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	for _, n := range outboundCounts(rs) {
		line(fmt.Sprintf("outbound deliveries/s, %d sub", n), func(r round) float64 { return r.outbound[n].perSecond() }, rate)
		line(fmt.Sprintf("  and its drain tasks/s"), func(r round) float64 { return r.outbound[n].tasksPerSec }, rate)
	}
	line("commit-to-receipt p50", func(r round) float64 { return float64(r.outboundP50) }, dur)
	line("commit-to-receipt p99", func(r round) float64 { return float64(r.outboundP99) }, dur)
	line("peak RSS MB", func(r round) float64 { return float64(r.peakRSSMB) }, rate)
	line("host steal, worst run", func(r round) float64 { return r.maxStealPct }, func(v float64) string { return fmt.Sprintf("%.1f%%", v) })
}

type bench struct {
	bin, dbURL string
	extra      []string
	tmpl       *template
	seq        atomic.Int64
	run_       int
	// seed, when set, fills a run's fresh database before the gateway
	// starts; config is appended to the run's YAML (the prune phase).
	seed   func(dbURL string)
	config string
	// drainN is how many new issues the drain phase sends.
	drainN int
	// maxStealPct is the largest share of the cores the hypervisor took
	// during one run of the current round.
	maxStealPct float64
	// profileDir, when set, receives a CPU profile of this process per run.
	profileDir string
	// activeSubs webhook subscriptions, to a receiver of this process, are
	// active during each run (but the outbound phases').
	activeSubs int
	// outboundSubs are the outbound phase's subscription counts;
	// outboundRate the latency phase's events/s.
	outboundSubs []int
	outboundRate int
}

type gateway struct {
	url string
	// receiver, when subscriptions are active (--subscriptions), gets
	// their events; subs is how many there are.
	receiver      *hookReceiver
	subs          int
	pid           int
	acks          float64 // per second
	acked         int64   // 202s of the throughput phases
	ackLatency    latencies
	taskLatency   latencies
	pace          processingPace
	rssMB         int64
	serverAcks    []bucketShare // the gateway's own ack histogram, after the ack phase
	serverAcksErr error
	cpuSeconds    float64 // the server's (gateway's) user and system CPU while fn ran
	senderCPU     float64 // this process's, while fn ran
	databaseCPU   float64 // the PostgreSQL server's (every postgres process), while fn ran
}

// run starts a gateway on a fresh database (or, for the ceiling, the
// ceiling server, which has none), runs fn, stops it and reads its peak RSS.
func (b *bench) run(name string, ceiling bool, fn func(*gateway)) *gateway {
	b.run_++
	var cmd *exec.Cmd
	listening := "gateway listening on "
	where := "no database"
	if ceiling {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		cmd = exec.Command(self, ceilingMode, "--listen", "127.0.0.1:0", "--secret", secret)
		listening = ceilingListeningPrefix
	} else {
		dir, _ := os.MkdirTemp("", "ingestbench")
		defer os.RemoveAll(dir)
		db := b.dbURL
		if strings.HasPrefix(db, "sqlite:") {
			db = "sqlite:" + filepath.Join(dir, "gateway.db")
		} else {
			schema := fmt.Sprintf("ingestbench_%d_%d", os.Getpid(), b.run_)
			db = freshSchema(db, schema)
			defer dropSchema(b.dbURL, schema)
		}
		where = strings.SplitN(db, ":", 2)[0]
		cfg := filepath.Join(dir, "gateway.yaml")
		_ = os.WriteFile(cfg, []byte(`workspaces:
  - {id: bench, task_prefix: BENCH}
connections:
  - {id: gh, provider: `+b.tmpl.provider+`, host: `+b.tmpl.host+`, workspace: bench, secrets: ["`+secret+`"]}
`+outboundConfig+b.config), 0o600)
		if b.seed != nil {
			b.seed(db)
		}
		args := []string{"serve", "--listen", "127.0.0.1:0", "--database-url", db, "--config", cfg, "--admin-token", adminToken, "--log-level", "warn"}
		cmd = exec.Command(b.bin, append(args, b.extra...)...)
	}
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start server:", err)
		os.Exit(1)
	}
	addr := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), listening); ok {
			addr = strings.TrimPrefix(strings.Fields(a)[0], "http://")
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if addr == "" {
		fmt.Fprintln(os.Stderr, "server did not start")
		os.Exit(1)
	}
	g := &gateway{url: addr, pid: cmd.Process.Pid}
	fmt.Printf("run %d: %s on %s\n", b.run_, name, where)
	if b.activeSubs > 0 && !ceiling {
		rc := newHookReceiver()
		subscribe(addr, rc, b.activeSubs, true)
		g.receiver, g.subs = rc, b.activeSubs
		defer func() {
			fmt.Printf("run %d: the %d subscription(s) received %d requests\n", b.run_, b.activeSubs, rc.received.Load())
			rc.close()
		}()
	}
	cpuBefore, sendersBefore := processCPU(cmd.Process.Pid), processCPU(os.Getpid())
	var databaseBefore map[int]float64
	postgres := where == "postgres"
	if postgres {
		databaseBefore = serverCPU()
	}
	stealBefore, started := stealSeconds(), time.Now()
	stopProfile := b.profileSenders()
	fn(g)
	stopProfile()
	if steal := stealSeconds() - stealBefore; steal > 0 {
		pct := 100 * steal / (float64(runtime.NumCPU()) * time.Since(started).Seconds())
		b.maxStealPct = max(b.maxStealPct, pct)
		fmt.Printf("host steal: %.1f%% of the cores during run %d\n", pct, b.run_)
	}
	g.cpuSeconds = processCPU(cmd.Process.Pid) - cpuBefore
	g.senderCPU = processCPU(os.Getpid()) - sendersBefore
	if postgres {
		g.databaseCPU = cpuSince(databaseBefore, serverCPU())
	}
	g.rssMB = peakRSS(cmd.Process.Pid)
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	return g
}

// freshSchema creates a schema for one run and returns the URL using it.
// Every run starts from a checkpoint (when the role may take one), so the
// previous run's dirty pages and full-page writes do not land in this one.
func freshSchema(url, schema string) string {
	if err := pgExec(url, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema); err != nil {
		fmt.Fprintln(os.Stderr, "create schema:", err)
		os.Exit(1)
	}
	if err := pgExec(url, "CHECKPOINT"); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoint (runs are less comparable without it):", err)
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// dropSchema removes a finished run's schema, so that its rows do not
// weigh on the next run (autovacuum, checkpoints).
func dropSchema(url, schema string) {
	if err := pgExec(url, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		fmt.Fprintln(os.Stderr, "drop schema:", err)
	}
}

// pgExec runs one statement on its own connection, bounded.
func pgExec(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// peakRSS reads VmHWM of a live process, in MB.
func peakRSS(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb / 1024
		}
	}
	return -1
}

// template is the fixture with unique markers substituted per delivery.
// provider is the fixture's (github, gitlab or jira, by its shape); the
// bench connection is of that provider. The ceiling server verifies GitHub
// signatures only, and the preloads and the prune phase store GitHub
// deliveries: with another provider's fixture, measure ack, e2e and drain.
type template struct {
	raw      []byte
	provider string
	// desc is the provider's registry entry: its adapter signs each
	// delivery, its headers carry the event and the delivery key.
	desc providers.Provider
	// host is the bench connection's (the provider's zero-config host),
	// the part of its external IDs.
	host string
	// event is the fixture's event, named once for every delivery.
	event string
}

const (
	idMarker     = "987654321987"
	numberMarker = "876543219"
)

func newTemplate(path string) (*template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	t := &template{provider: connectors.ProviderGitHub}
	switch {
	case doc["webhookEvent"] != nil: // Jira: string ids, the key names the issue
		t.provider = connectors.ProviderJira
		issue := doc["issue"].(map[string]any)
		issue["id"] = idMarker
		issue["key"] = "BENCH-" + numberMarker
	case doc["object_kind"] != nil:
		t.provider = connectors.ProviderGitLab
		attrs := doc["object_attributes"].(map[string]any)
		attrs["id"] = json.Number(idMarker)
		attrs["iid"] = json.Number(numberMarker)
	default:
		issue := doc["issue"].(map[string]any)
		issue["id"] = json.Number(idMarker)
		issue["number"] = json.Number(numberMarker)
	}
	if t.raw, err = json.MarshalIndent(doc, "", "  "); err != nil {
		return nil, err
	}
	t.desc, _ = providers.Lookup(t.provider)
	t.host = t.desc.ZeroConfigHost(func(string) (string, bool) { return "", false })
	if t.desc.EventHeader != "" {
		if t.event, _ = t.desc.EventFromPayload(t.raw); t.event == "" {
			return nil, fmt.Errorf("%s: the %s payload names no event", path, t.provider)
		}
	}
	return t, nil
}

// issueID is the provider's id of issue n.
func issueID(n int64) int64 { return 100000000000 + n }

// delivery returns a signed request body and headers for issue n.
func (t *template) delivery(n int64) ([]byte, http.Header) {
	id := strconv.FormatInt(issueID(n), 10)
	body := bytes.Replace(t.raw, []byte(idMarker), []byte(id), 1)
	body = bytes.Replace(body, []byte(numberMarker), []byte(strconv.FormatInt(n, 10)), 1)
	h := http.Header{}
	if t.desc.EventHeader != "" {
		h.Set(t.desc.EventHeader, t.event)
	}
	h.Set(t.desc.DeliveryKeyHeader, fmt.Sprintf("bench-%d", n))
	t.desc.Adapter.Sign(h, body, []byte(secret))
	return body, h
}

// externalID is the external ID of the task of issue n.
func (t *template) externalID(n int64) string {
	return fmt.Sprintf("%s:%s:%s:%d", t.provider, t.host, connectors.KindIssue, issueID(n))
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}, Timeout: 30 * time.Second}

func post(url string, body []byte, h http.Header) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+url+"/webhooks/gh", bytes.NewReader(body))
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// throughput sends back-to-back from n senders for d and returns the 202s
// and their rate.
func throughput(url string, t *template, n int, d time.Duration, seq *atomic.Int64) (int64, float64) {
	var acks atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				body, h := t.delivery(seq.Add(1))
				if code, err := post(url, body, h); err == nil && code == http.StatusAccepted {
					acks.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return acks.Load(), float64(acks.Load()) / time.Since(start).Seconds()
}

type latencies struct {
	d      []time.Duration
	n      int
	errors int
}

func (l latencies) p(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	i := int(float64(len(l.d)-1) * q / 100)
	return l.d[i].Round(10 * time.Microsecond)
}

// fixedRate sends at rate/s (open loop) for d and returns ack latencies.
func fixedRate(url string, t *template, rate int, d time.Duration, seq *atomic.Int64) latencies {
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	var mu sync.Mutex
	var out latencies
	var wg sync.WaitGroup
	sem := make(chan struct{}, 512)
	start := time.Now()
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		body, h := t.delivery(seq.Add(1))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			began := time.Now()
			code, err := post(url, body, h)
			lat := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			out.n++
			if err != nil || code != http.StatusAccepted {
				out.errors++
				return
			}
			out.d = append(out.d, lat)
		})
	}
	wg.Wait()
	return out
}

type deliveryJSON struct {
	Status     string    `json:"status"`
	ReceivedAt time.Time `json:"received_at"`
	Outcome    *struct {
		TaskID string `json:"task_id"`
	} `json:"outcome"`
}

// receiveToTask waits (bounded) until every delivery sent, up to issue
// lastIssue, is final, then returns task.created_at − delivery.received_at
// for each, both stamped by the gateway. It lists the deliveries once, at
// the end: listing all of them while the backlog drained slowed the tail it
// measured.
func receiveToTask(url, lastExternalID string) (latencies, processingPace) {
	waitProcessed(url, lastExternalID, 2*time.Minute)
	ds := listAll(url)
	created := map[string]time.Time{}
	forEachTask(url, func(id string, at time.Time) { created[id] = at })
	var out latencies
	var firstReceived, lastReceived time.Time
	var createdAt []time.Time
	for _, d := range ds {
		if d.Outcome == nil {
			continue
		}
		c, ok := created[d.Outcome.TaskID]
		if !ok {
			continue
		}
		out.d = append(out.d, c.Sub(d.ReceivedAt))
		out.n++
		createdAt = append(createdAt, c)
		if firstReceived.IsZero() || d.ReceivedAt.Before(firstReceived) {
			firstReceived = d.ReceivedAt
		}
		if d.ReceivedAt.After(lastReceived) {
			lastReceived = d.ReceivedAt
		}
	}
	return out, paceOf(createdAt, firstReceived, lastReceived)
}

// processingPace is how fast tasks were created while the deliveries
// arrived, and after the last one: a gateway that keeps pace creates them
// as fast as they arrive; one that falls behind builds a backlog while they
// arrive and drains it after.
type processingPace struct {
	whileSending, after float64 // tasks/s
}

func paceOf(createdAt []time.Time, firstReceived, lastReceived time.Time) processingPace {
	var p processingPace
	var during, later int
	lastCreated := lastReceived
	for _, c := range createdAt {
		if c.After(lastReceived) {
			later++
			if c.After(lastCreated) {
				lastCreated = c
			}
		} else {
			during++
		}
	}
	if d := lastReceived.Sub(firstReceived).Seconds(); d > 0 {
		p.whileSending = float64(during) / d
	}
	if d := lastCreated.Sub(lastReceived).Seconds(); d > 0 && later > 0 {
		p.after = float64(later) / d
	}
	return p
}

func listAll(url string) []deliveryJSON {
	var all []deliveryJSON
	cursor := ""
	for range 1000 {
		var page struct {
			Deliveries []deliveryJSON `json:"deliveries"`
			NextCursor string         `json:"next_cursor"`
		}
		get(url, "/api/v1/deliveries?limit=1000&cursor="+cursor, &page)
		all = append(all, page.Deliveries...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	return all
}

// status is the HTTP status of an authenticated GET (0 when it fails).
func status(url, path string) int {
	req, _ := http.NewRequest(http.MethodGet, "http://"+url+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(url, path string, v any) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+url+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
}

// outboundCounts are the subscription counts the rounds' outbound phases
// measured, in order.
func outboundCounts(rs []round) []int {
	var out []int
	for _, r := range rs {
		for n := range r.outbound {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}
