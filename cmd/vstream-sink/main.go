// Command vstream-sink delivers a vstreamd change stream, in one of the server's encoded
// formats, into Kafka or NATS JetStream, each change exactly once: see package sink.
//
// It is configured like vstreamd: flags, VSTREAM_SINK_* environment variables and a YAML
// file (--config); --check-config validates and exits. SIGTERM or SIGINT stop it at the next
// transaction boundary, after committing it; it then exits 0.
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
	p := cfg.parsed
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: p.level}))
	pub, err := newPublisher(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "vstream-sink:", err)
		return 2
	}
	if cfg.checkOnly {
		if cfg.MetricsListen != "" {
			if _, err = net.ResolveTCPAddr("tcp", cfg.MetricsListen); err != nil {
				fmt.Fprintf(stderr, "vstream-sink: metrics-listen %q: %v\n", cfg.MetricsListen, err)
				return 2
			}
		}
		fmt.Fprintln(stderr, "vstream-sink: configuration is valid")
		return 0
	}
	cl, err := client.Dial(cfg.Server, client.Options{Token: p.token, Logger: log, Identity: "vstream-sink/" + cfg.Name,
		TLS: p.serverTLS})
	if err != nil {
		fmt.Fprintln(stderr, "vstream-sink:", err)
		return 1
	}
	defer func() { _ = cl.Close() }()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := sink.NewMetrics(reg, cfg.Sink)
	snapshots := make(chan client.Snapshot)
	if cfg.MetricsListen != "" {
		lis, lerr := net.Listen("tcp", cfg.MetricsListen)
		if lerr != nil {
			fmt.Fprintln(stderr, "vstream-sink: metrics:", lerr)
			return 1
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
		// The process is exiting when this runs: an error closing the listener loses nothing.
		defer func() { _ = hs.Close() }()
		log.Info("metrics serving", "listen", lis.Addr().String())
	}

	// The first signal stops at the next transaction boundary; a second one at once.
	stop := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		log.Info("stopping at the next transaction boundary", "drain_timeout", p.drain)
		close(stop)
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()

	oversize, err := openOversize(ctx, cfg)
	if err != nil {
		log.Error("vstream-sink", "err", err)
		return 1
	}
	var schemas sink.Schemas
	if reg, rerr := newRegistry(cfg, log); rerr != nil {
		fmt.Fprintln(stderr, "vstream-sink:", rerr)
		return 2
	} else if reg != nil {
		schemas = reg
	}
	log.Info("vstream-sink starting", "sink", cfg.Sink, "server", cfg.Server, "name", cfg.Name, "format", cfg.Format)
	req := p.request
	req.Snapshots = snapshots
	err = sink.Run(ctx, sink.Config{
		Name: cfg.Name, Client: cl, Publisher: pub, Request: req, Topics: p.topics, Schemas: schemas,
		Oversize: oversize, CheckpointInterval: p.checkpoint, DrainTimeout: p.drain, Logger: log, Metrics: metrics, Stop: stop,
	})
	if err != nil {
		log.Error("vstream-sink stopped", "err", err)
		return 1
	}
	log.Info("vstream-sink stopped")
	return 0
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
			MaxRecordBytes: p.maxRecord, MaxBufferedBytes: p.maxBuffer, Extra: p.kafkaOpts(), Auth: p.kafkaAuth})
	case "nats":
		return nats.New(nats.Options{URL: cfg.NATSURL, Name: cfg.Name, Stream: cfg.NATSStream, SubjectPrefix: cfg.TopicPrefix,
			Duplicates: p.duplicates, Bucket: cfg.NATSBucket, MaxInFlight: p.inFlight, Extra: p.natsAuth})
	default:
		return nil, fmt.Errorf("sink %q: want kafka or nats", cfg.Sink)
	}
}
