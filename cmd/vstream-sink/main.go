// Command vstream-sink delivers a vstreamd change stream, in one of the server's encoded
// formats, into Kafka or NATS JetStream, each change exactly once: see package sink.
//
// It is configured like vstreamd: flags, VSTREAM_SINK_* environment variables and a YAML
// file (--config); --check-config validates and exits. The file may list named pipelines
// (pipelines.go), which the process runs side by side, each a sink of its own. SIGTERM or
// SIGINT stop every pipeline at its next transaction boundary, after committing it; it then
// exits 0. A pipeline that fails stops the others the same way, and the process exits 1.
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/internal/cliconfig"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/claimcheck"
	"github.com/vstream-cdc/vstream/sink/kafka"
	"github.com/vstream-cdc/vstream/sink/nats"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := loadConfig(args, getenv)
	if err != nil {
		var h *cliconfig.HelpError
		if errors.As(err, &h) {
			fmt.Fprint(stderr, h.Usage)
			return 0
		}
		fmt.Fprintln(stderr, "vstream-sink:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.parsed.level}))
	// named says the pipelines come from a pipelines list: errors and log lines name them.
	named := len(cfg.Pipelines) > 0
	pipes, err := newPipes(cfg, named, log)
	if err != nil {
		fmt.Fprintln(stderr, "vstream-sink:", err)
		return 2
	}
	if cfg.checkOnly {
		return checkConfig(cfg, named, stderr)
	}
	closeClients, err := dialPipes(pipes, named)
	defer closeClients()
	if err != nil {
		fmt.Fprintln(stderr, "vstream-sink:", err)
		return 1
	}
	reg := newMetrics(pipes, named)
	if cfg.MetricsListen != "" {
		closeMetrics, merr := serveMetrics(cfg.MetricsListen, reg, pipes, log)
		if merr != nil {
			fmt.Fprintln(stderr, "vstream-sink: metrics:", merr)
			return 1
		}
		defer closeMetrics()
	}
	return runPipes(pipes, named, log)
}

// newPipes makes the pipelines' publishers and schema registries; an error names the
// pipeline when they are named.
func newPipes(cfg *config, named bool, log *slog.Logger) ([]*pipe, error) {
	pipes := make([]*pipe, len(cfg.pipelines))
	for i, pc := range cfg.pipelines {
		p := &pipe{cfg: pc, log: log, snapshots: make(chan client.Snapshot)}
		if named {
			p.log = log.With("pipeline", pc.Name)
		}
		var err error
		if p.pub, err = newPublisher(pc); err != nil {
			return nil, p.errorf(named, err)
		}
		// A nil *registry.Registry must not become a non-nil sink.Schemas.
		if r, rerr := newRegistry(pc, p.log); rerr != nil {
			return nil, p.errorf(named, rerr)
		} else if r != nil {
			p.schemas = r
		}
		pipes[i] = p
	}
	return pipes, nil
}

// checkConfig ends --check-config, once the pipelines are made: the metrics address must
// resolve. It binds nothing, so that a check beside the running sink does not fail.
func checkConfig(cfg *config, named bool, stderr io.Writer) int {
	if cfg.MetricsListen != "" {
		if _, err := net.ResolveTCPAddr("tcp", cfg.MetricsListen); err != nil {
			fmt.Fprintf(stderr, "vstream-sink: metrics-listen %q: %v\n", cfg.MetricsListen, err)
			return 2
		}
	}
	if named {
		fmt.Fprintf(stderr, "vstream-sink: configuration is valid: %d pipelines (%s)\n", len(cfg.pipelines), strings.Join(pipelineNames(cfg.pipelines), ", "))
		return 0
	}
	fmt.Fprintln(stderr, "vstream-sink: configuration is valid")
	return 0
}

// dialPipes connects each pipeline to its server. The function it returns closes the
// clients dialled, also when one failed.
func dialPipes(pipes []*pipe, named bool) (func(), error) {
	var dialled []*client.Client
	closeAll := func() {
		// The process is exiting when this runs: an error closing a client loses nothing.
		for i := len(dialled) - 1; i >= 0; i-- {
			_ = dialled[i].Close()
		}
	}
	for _, p := range pipes {
		var err error
		p.client, err = client.Dial(p.cfg.Server, client.Options{Token: p.cfg.parsed.token, Logger: p.log,
			Identity: "vstream-sink/" + p.cfg.Name, TLS: p.cfg.parsed.serverTLS})
		if err != nil {
			return closeAll, p.errorf(named, err)
		}
		dialled = append(dialled, p.client)
	}
	return closeAll, nil
}

// newMetrics is the registry of the process's and the pipelines' metrics. A single sink's
// series keep the labels they always had; pipelines' carry their names.
func newMetrics(pipes []*pipe, named bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, p := range pipes {
		label := ""
		if named {
			label = p.cfg.Name
		}
		p.metrics = sink.NewMetrics(reg, p.cfg.Sink, label)
	}
	return reg
}

// serveMetrics serves /metrics and the pipelines' /snapshot requests on addr until the
// function it returns is called.
func serveMetrics(addr string, reg *prometheus.Registry, pipes []*pipe, log *slog.Logger) (func(), error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	snapshots := map[string]chan<- client.Snapshot{}
	for _, p := range pipes {
		snapshots[p.cfg.Name] = p.snapshots
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/snapshot", snapshotHandler(snapshots, snapshotWait, log))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if serr := hs.Serve(lis); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", serr)
		}
	}()
	log.Info("metrics serving", "listen", lis.Addr().String())
	// The process is exiting when this runs: an error closing the listener loses nothing.
	return func() { _ = hs.Close() }, nil
}

// runPipes runs the pipelines side by side until each has stopped, and returns the
// process's exit code. The first signal stops every pipeline at its next transaction
// boundary; a second one at once. A pipeline that fails stops the others the way the first
// signal does.
func runPipes(pipes []*pipe, named bool, log *slog.Logger) int {
	drain := time.Duration(0)
	for _, p := range pipes {
		drain = max(drain, p.cfg.parsed.drain)
	}
	stop := make(chan struct{})
	stopAll := sync.OnceFunc(func() { close(stop) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go stopOnSignals(ctx, sigs, stopAll, cancel, drain, log)

	for _, p := range pipes {
		var err error
		if p.oversize, err = openOversize(ctx, p.cfg); err != nil {
			p.log.Error("vstream-sink", "err", err)
			return 1
		}
	}
	results := make(chan pipeResult, len(pipes))
	for _, p := range pipes {
		c := p.cfg
		p.log.Info("vstream-sink starting", "sink", c.Sink, "server", c.Server, "name", c.Name, "format", c.Format)
		req := c.parsed.request
		req.Snapshots = p.snapshots
		go func() {
			results <- pipeResult{p, sink.Run(ctx, sink.Config{
				Name: c.Name, Client: p.client, Publisher: p.pub, Request: req, Topics: c.parsed.topics, Schemas: p.schemas,
				Oversize: p.oversize, CheckpointInterval: c.parsed.checkpoint, DrainTimeout: c.parsed.drain, Logger: p.log,
				Metrics: p.metrics, Stop: stop,
			})}
		}()
	}
	return waitPipes(results, len(pipes), named, stopAll, log)
}

// stopOnSignals stops the pipelines at the first signal (stopAll) and at once at the
// second (cancel), until ctx ends.
func stopOnSignals(ctx context.Context, sigs <-chan os.Signal, stopAll, cancel func(), drain time.Duration, log *slog.Logger) {
	select {
	case <-sigs:
	case <-ctx.Done():
		return
	}
	log.Info("stopping at the next transaction boundary", "drain_timeout", drain)
	stopAll()
	select {
	case <-sigs:
		cancel()
	case <-ctx.Done():
	}
}

// pipeResult is how a pipeline's run ended.
type pipeResult struct {
	p   *pipe
	err error
}

// waitPipes waits for n pipelines to stop, stopping the others when one fails, and returns
// the exit code: 1 when any failed.
func waitPipes(results <-chan pipeResult, n int, named bool, stopAll func(), log *slog.Logger) int {
	code := 0
	for range n {
		r := <-results
		if r.err == nil {
			if named {
				r.p.log.Info("pipeline stopped")
			}
			continue
		}
		if code == 0 && n > 1 {
			r.p.log.Error("pipeline failed: stopping the others at their next transaction boundary", "err", r.err)
		}
		code = 1
		stopAll()
		r.p.log.Error("vstream-sink stopped", "err", r.p.errorf(named, r.err))
	}
	if code == 0 {
		log.Info("vstream-sink stopped")
	}
	return code
}

// pipe is one pipeline being run: its configuration and what is made of it.
type pipe struct {
	cfg       *config
	log       *slog.Logger
	pub       sink.Publisher
	schemas   sink.Schemas
	oversize  sink.Oversize
	client    *client.Client
	metrics   *sink.Metrics
	snapshots chan client.Snapshot
}

// errorf names the pipeline in err when the pipelines are named.
func (p *pipe) errorf(named bool, err error) error {
	if !named {
		return err
	}
	return fmt.Errorf("pipeline %q: %w", p.cfg.Name, err)
}

func pipelineNames(ps []*config) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// openOversize opens the claim-check store, if any, checking that it can be written to.
func openOversize(ctx context.Context, cfg *config) (sink.Oversize, error) {
	o := sink.Oversize{Mode: cfg.OnOversize}
	if o.Mode != sink.OversizeClaimCheck {
		return o, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := claimcheck.Open(ctx, cfg.ClaimCheckURL)
	if err != nil {
		return o, err
	}
	o.Store = st
	return o, nil
}

func newPublisher(cfg *config) (sink.Publisher, error) {
	p := cfg.parsed
	switch cfg.Sink {
	case "kafka":
		return kafka.New(kafka.Options{Brokers: p.brokers, Name: cfg.Name, OffsetsTopic: cfg.KafkaOffsetsTopic,
			MaxRecordBytes: p.maxRecord, MaxBufferedBytes: p.maxBuffer, Extra: p.kafkaOpts(), Auth: p.kafkaAuth,
			PartitionKeys: len(p.topics.Partitions) > 0})
	case "nats":
		return nats.New(nats.Options{URL: cfg.NATSURL, Name: cfg.Name, Stream: cfg.NATSStream, SubjectPrefix: cfg.TopicPrefix,
			Duplicates: p.duplicates, Bucket: cfg.NATSBucket, MaxInFlight: p.inFlight, Extra: p.natsAuth})
	default:
		return nil, fmt.Errorf("sink %q: want kafka or nats", cfg.Sink)
	}
}
