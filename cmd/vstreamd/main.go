// Command vstreamd serves the change stream of one MySQL or MariaDB server over gRPC.
package main

import (
	"context"
	"crypto/tls"
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.parsed.level}))
	ecfg, err := engineConfig(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
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
		return checkAddrs(cfg, stderr)
	}
	return serve(cfg, ecfg, engine, tlsCfg, log, getenv, stderr)
}

// engineConfig is the engine's configuration: the server to stream and how to copy.
func engineConfig(cfg *config, log *slog.Logger) (vstreamer.Config, error) {
	p := cfg.parsed
	d := p.dsn
	host, _, err := net.SplitHostPort(d.Addr)
	if err != nil {
		return vstreamer.Config{}, fmt.Errorf("mysql address: %w", err)
	}
	dbTLS, err := cfg.mysqlTLS(host)
	if err != nil {
		return vstreamer.Config{}, err
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
	return ecfg, nil
}

// checkAddrs ends --check: the addresses to listen on must resolve. Checking binds
// nothing: a check beside the running server must not fail because the server holds its
// port, nor take the port from it.
func checkAddrs(cfg *config, stderr io.Writer) int {
	for name, addr := range map[string]string{"listen": cfg.Listen, "metrics-listen": cfg.MetricsListen} {
		if addr == "" {
			continue
		}
		if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
			fmt.Fprintf(stderr, "vstreamd: %s %q: %v\n", name, addr, err)
			return 2
		}
	}
	fmt.Fprintln(stderr, "vstreamd: configuration is valid")
	return 0
}

// serve listens, serves the streams (and the metrics) until SIGINT or SIGTERM, and drains
// them.
func serve(cfg *config, ecfg vstreamer.Config, engine *vstreamer.Engine, tlsCfg *tls.Config, log *slog.Logger, getenv func(string) string, stderr io.Writer) int {
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 1
	}
	if cfg.CPUProfile != "" {
		stopProfile, perr := startCPUProfile(cfg.CPUProfile)
		if perr != nil {
			fmt.Fprintln(stderr, "vstreamd:", perr)
			return 1
		}
		defer stopProfile()
	}
	cluster, err := newCluster(cfg, ecfg)
	if err != nil {
		fmt.Fprintln(stderr, "vstreamd:", err)
		return 2
	}
	p := cfg.parsed
	reg := newRegistry(engine)
	srv := server.New(engine, server.Options{AuthToken: cfg.AuthToken, Logger: log, Registerer: reg, TLS: tlsCfg, Limits: p.limits, PurgeWarn: p.purgeWarn,
		OnStreams: memoryBudget(getenv), Cluster: cluster})
	stopHistory := runHistory(engine, log)
	defer stopHistory()
	if cfg.MetricsListen != "" {
		mlis, merr := net.Listen("tcp", cfg.MetricsListen)
		if merr != nil {
			fmt.Fprintln(stderr, "vstreamd: metrics:", merr)
			return 1
		}
		hs := &http.Server{Handler: metricsHandler(reg, srv, log), ReadHeaderTimeout: 10 * time.Second}
		go serveMetrics(hs, mlis, log)
		// The process is exiting when this runs: an error closing the listener loses nothing.
		defer func() { _ = hs.Close() }()
		log.Info("metrics serving", "listen", mlis.Addr().String())
	}
	return serveGRPC(srv, engine, lis, p.drain, log)
}

// serveGRPC serves the streams on lis until a signal, then ends them at transaction
// boundaries, waiting at most drain.
func serveGRPC(srv *server.Server, engine *vstreamer.Engine, lis net.Listener, drain time.Duration, log *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go srv.WatchHealth(ctx)
	go srv.WatchBinlogs(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.GRPC().Serve(lis) }()
	ec := engine.Config()
	log.Info("vstreamd serving", "listen", lis.Addr().String(), "mysql", ec.Addr, "keyspace", ec.Keyspace, "keyspaces", engine.Keyspaces(), "shard", ec.Shard)
	select {
	case err := <-errc:
		log.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down: ending streams at transaction boundaries", "drain_timeout", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}

// newCluster opens the shards of --topology (nil without it), whose engines are configured
// as the server's own but keep no schema history: the history belongs to the server's
// engine alone.
func newCluster(cfg *config, ecfg vstreamer.Config) (*shards.Cluster, error) {
	if cfg.Topology == "" {
		return nil, nil
	}
	top, err := topology.Load(cfg.Topology)
	if err != nil {
		return nil, err
	}
	ecfg.SchemaHistoryDir = ""
	return shards.NewCluster(top, ecfg)
}

// newRegistry is the metrics registry with the process's and the engine's own metrics; the
// server adds the streams'.
func newRegistry(engine *vstreamer.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "vstream", Name: "schema_history_restarts_total",
		Help: "Times the schema history tracker failed (or panicked) and started again."},
		func() float64 { return float64(engine.SchemaHistoryRestarts()) }))
	for _, kind := range []string{vstreamer.ReaderShared, vstreamer.ReaderCatchUp} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "vstream", Name: "binlog_readers",
			Help:        "Binlog dump connections of the shared readers: shared (at the server's head) and catch-up (for streams behind it).",
			ConstLabels: prometheus.Labels{"kind": kind}},
			func() float64 { return float64(engine.BinlogReaders()[kind]) }))
	}
	return reg
}

// runHistory runs the engine's schema history until the function it returns is called,
// which waits for it to stop. The history outlives the streams: those that drain at
// shutdown still describe their rows with it.
func runHistory(engine *vstreamer.Engine, log *slog.Logger) func() {
	hctx, stopHistory := context.WithCancel(context.Background())
	historyDone := make(chan struct{})
	go func() {
		defer close(historyDone)
		if err := engine.RunSchemaHistory(hctx); err != nil {
			log.Error("schema history stopped; streams describe rows by the tables as they are now", "err", err)
		}
	}()
	return func() { stopHistory(); <-historyDone }
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
