// Command vstreamd serves the change stream of one MySQL or MariaDB server over gRPC.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/statuspage"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/topology"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// gcPercent is vstreamd's default GOGC: the stream allocates many short-lived row buffers,
// and collecting less often buys throughput for a bounded amount of memory (each stream holds
// at most a batch and a few dozen binlog events). GOGC in the environment overrides it.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := loadConfig(args, getenv)
	if err != nil {
		var h *helpError
		if errors.As(err, &h) {
			fmt.Fprint(stderr, h.Usage)
			return 0
		}
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
	}
	p := cfg.parsed
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: p.level}))
	d := p.dsn
	host, _, err := net.SplitHostPort(d.Addr)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd: mysql address:", err)
		return 2
	}
	dbTLS, err := cfg.mysqlTLS(host)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
	}
	ecfg := vstreamer.Config{
		TLS:         dbTLS,
		Addr:        d.Addr,
		User:        d.User,
		Password:    d.Password,
		Database:    d.Database,
		Keyspace:    cfg.Keyspace,
		Databases:   p.databases,
		Shard:       cfg.Shard,
		Flavor:      cfg.Flavor,
		Positions:   cfg.Positions,
		VSchema:     p.vschema,
		ColumnMasks: p.masks,
		OwnReaders:  p.ownReaders,
		Logger:      log,

		CopyParallelism:       p.copyParallelism,
		CopyMaxRowsPerSecond:  p.copyMaxRows,
		CopyMaxReplicationLag: p.copyMaxLag,
	}
	if !cfg.checkOnly {
		// Opening the history takes its lock, which a check beside the running server must
		// not fail on nor take.
		ecfg.SchemaHistoryDir = cfg.SchemaHistoryDir
	}
	engine, err := vstreamer.NewEngine(ecfg)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
	}
	if cfg.checkOnly {
		// Checking binds nothing: a check beside the running server must not fail because
		// the server holds its port, nor take the port from it.
		for name, addr := range map[string]string{"listen": cfg.Listen, "metrics-listen": cfg.MetricsListen} {
			if addr == "" {
				continue
			}
			if _, err = net.ResolveTCPAddr("tcp", addr); err != nil {
				fmt.Fprintf(stderr, "vstreamd: %s %q: %v\n", name, addr, err)
				return 2
			}
		}
		fmt.Fprintln(stderr, "vstreamd: configuration is valid")
		return 0
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 1
	}
	if cfg.CPUProfile != "" {
		stopProfile, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(stderr, "vstreamd:", err)
			return 1
		}
		defer stopProfile()
	}
	var cluster *shards.Cluster
	if cfg.Topology != "" {
		top, terr := topology.Load(cfg.Topology)
		if terr == nil {
			tcfg := ecfg
			tcfg.SchemaHistoryDir = ""
			cluster, terr = shards.NewCluster(top, tcfg)
		}
		if terr != nil {
			fmt.Fprintln(stderr, "vstreamd:", terr)
			return 2
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := server.New(engine, server.Options{AuthToken: cfg.AuthToken, Logger: log, Registerer: reg, TLS: tlsCfg, Limits: p.limits, PurgeWarn: p.purgeWarn,
		OnStreams: memoryBudget(getenv), Cluster: cluster})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "vstream", Name: "schema_history_restarts_total",
		Help: "Times the schema history tracker failed (or panicked) and started again."},
		func() float64 { return float64(engine.SchemaHistoryRestarts()) }))
	for _, kind := range []string{vstreamer.ReaderShared, vstreamer.ReaderCatchUp} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "vstream", Name: "binlog_readers",
			Help:        "Binlog dump connections of the shared readers: shared (at the server's head) and catch-up (for streams behind it).",
			ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { return float64(engine.BinlogReaders()[kind]) }))
	}
	// The history outlives the streams: those that drain at shutdown still describe their
	// rows with it.
	hctx, stopHistory := context.WithCancel(context.Background())
	historyDone := make(chan struct{})
	go func() {
		defer close(historyDone)
		if err := engine.RunSchemaHistory(hctx); err != nil {
			log.Error("schema history stopped; streams describe rows by the tables as they are now", "err", err)
		}
	}()
	defer func() { stopHistory(); <-historyDone }()
	if cfg.MetricsListen != "" {
		mlis, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			fmt.Fprintln(stderr, "vstreamd: metrics:", err)
			return 1
		}
		hs := &http.Server{Handler: metricsHandler(reg, srv, log), ReadHeaderTimeout: 10 * time.Second}
		go serveMetrics(hs, mlis, log)
		// The process is exiting when this runs: an error closing the listener loses nothing.
		defer func() { _ = hs.Close() }()
		log.Info("metrics serving", "listen", mlis.Addr().String())
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go srv.WatchHealth(ctx)
	go srv.WatchBinlogs(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.GRPC().Serve(lis) }()
	ec := engine.Config()
	log.Info("vstreamd serving", "listen", lis.Addr().String(), "mysql", d.Addr, "keyspace", ec.Keyspace, "keyspaces", engine.Keyspaces(), "shard", ec.Shard)
	select {
	case err := <-errc:
		log.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down: ending streams at transaction boundaries", "drain_timeout", p.drain)
	sctx, cancel := context.WithTimeout(context.Background(), p.drain)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}

// startCPUProfile starts profiling the process's CPU into file; the function it returns
// stops and writes the profile.
func startCPUProfile(file string) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpuprofile %s: %w", file, err)
	}
	return func() {
		pprof.StopCPUProfile()
		// The process is exiting: a profile that failed to close is reported, not fatal.
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "vstreamd: cpuprofile:", err)
		}
	}, nil
}

// metricsHandler serves the metrics at /metrics and the status page at / (and /status.json).
func metricsHandler(reg *prometheus.Registry, srv *server.Server, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", statuspage.New(srv, statuspage.Options{Logger: log}))
	return mux
}

// serveMetrics serves the metrics until hs is closed. The change streams do not depend on it,
// so a failure is logged, loudly, rather than taking the server down.
func serveMetrics(hs *http.Server, lis net.Listener, log *slog.Logger) {
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics server stopped; /metrics is no longer served", "listen", lis.Addr().String(), "err", err)
	}
}
