// Package server exposes the change-stream engine over gRPC: the native bidirectional
// vstream.v1 API, health and reflection, with authentication, logging, validation and panic
// recovery as interceptors. It is the one place that maps engine errors to gRPC status codes.
package server

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/validator"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/queryservice"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"

	// Registers the vtprotobuf gRPC codec, so that this end encodes and decodes without reflection.
	_ "github.com/vstream-cdc/vstream/internal/grpccodec"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Options configure the server.
type Options struct {
	// AuthToken, when set, must be presented by every call as "authorization: Bearer <token>"
	// (health and reflection included).
	AuthToken string
	// Cluster, when set, holds the keyspaces of a topology (vstreamd --topology): a stream
	// whose VGtid names them streams their shards, each from its own server, merged as
	// vtgate merges (package shards). Other keyspaces are the engine's.
	Cluster *shards.Cluster
	Logger  *slog.Logger
	// HealthInterval is how often the database is probed for the health service (default 5s).
	HealthInterval time.Duration
	// ExtraServerOptions are appended to the gRPC server options.
	ExtraServerOptions []grpc.ServerOption
	// Registerer receives the server's Prometheus metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
	// TLS, when set, serves gRPC over TLS (with ClientAuth set, mutual TLS).
	TLS *tls.Config
	// Limits bound streams and stream starts.
	Limits Limits
	// PurgeWarn configures the purge alarm that WatchBinlogs runs.
	PurgeWarn PurgeWarn
	// OnStreams, when set, hears how many streams are open whenever one opens or ends (over
	// every API), on the goroutine of that stream. Calls come one at a time, each with the
	// count when it is made, so the last call has the last count.
	OnStreams func(open int)
}

// maxMessageBytes bounds one response: batches are far smaller, but a single row may be as
// large as the server's max_allowed_packet.
const maxMessageBytes = 1 << 30

// Server is a gRPC server for one engine.
type Server struct {
	engine *vstreamer.Engine
	opts   Options
	log    *slog.Logger
	grpc   *grpc.Server
	health *health.Server
	stats  *metrics
	slots  *streamSlots
	// streamIDs numbers streams for logs and metrics.
	streamIDs atomic.Uint64
}

// New builds the gRPC server and registers every service on it.
func New(engine *vstreamer.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 5 * time.Second
	}
	if opts.PurgeWarn.Interval <= 0 {
		opts.PurgeWarn.Interval = DefaultPurgeCheckInterval
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{engine: engine, opts: opts, log: opts.Logger, health: health.NewServer(), stats: newMetrics(reg),
		slots: &streamSlots{max: int64(opts.Limits.MaxStreams), onChange: opts.OnStreams}}

	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		s.log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	recover := recovery.WithRecoveryHandlerContext(s.handlerPanic)
	authFn := s.authenticate
	streamInterceptors := []grpc.StreamServerInterceptor{
		s.stats.grpc.StreamServerInterceptor(),
		logging.StreamServerInterceptor(logger, logging.WithLogOnEvents(logging.StartCall, logging.FinishCall)),
		auth.StreamServerInterceptor(authFn),
	}
	if opts.Limits.StartsPerSecond > 0 {
		streamInterceptors = append(streamInterceptors, ratelimit.StreamServerInterceptor(newStartLimiter(opts.Limits.StartsPerSecond, opts.Limits.StartsBurst)))
	}
	streamInterceptors = append(streamInterceptors, validator.StreamServerInterceptor(), recovery.StreamServerInterceptor(recover))
	serverOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(
			s.stats.grpc.UnaryServerInterceptor(),
			logging.UnaryServerInterceptor(logger, logging.WithLogOnEvents(logging.FinishCall)),
			auth.UnaryServerInterceptor(authFn),
			validator.UnaryServerInterceptor(),
			recovery.UnaryServerInterceptor(recover),
		),
		grpc.ChainStreamInterceptor(streamInterceptors...),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.MaxRecvMsgSize(16 << 20),
		// Clients that ping every 10s must not be cut off.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	serverOpts = append(serverOpts, opts.ExtraServerOptions...)
	s.grpc = grpc.NewServer(serverOpts...)
	vstreamv1.RegisterVStreamServiceServer(s.grpc, &vstreamService{srv: s})
	vtgateservice.RegisterVitessServer(s.grpc, &vtgateService{srv: s})
	queryservice.RegisterQueryServer(s.grpc, &queryService{srv: s})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.stats.grpc.InitializeMetrics(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(vstreamv1.VStreamService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	return s
}

// GRPC returns the underlying server, to serve it or register more services.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	if s.opts.AuthToken == "" {
		return ctx, nil
	}
	token, err := auth.AuthFromMD(ctx, "bearer")
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, "missing token: send metadata \"authorization: Bearer <token>\"")
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.AuthToken)) != 1 {
		return nil, status.Error(codes.Unauthenticated, "invalid token")
	}
	return ctx, nil
}

// WatchHealth probes the database until ctx ends and reports the result through the health
// service: streams can start only while the database answers.
func (s *Server) WatchHealth(ctx context.Context) {
	last := healthpb.HealthCheckResponse_UNKNOWN
	t := time.NewTicker(s.opts.HealthInterval)
	defer t.Stop()
	for {
		st := healthpb.HealthCheckResponse_SERVING
		if err := s.engine.Ping(ctx); err != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
			s.stats.dbUp.Set(0)
			if st != last {
				s.log.Warn("database unreachable", "err", err)
			}
		} else {
			s.stats.dbUp.Set(1)
			if st != last {
				s.log.Info("database reachable")
			}
		}
		if st != last {
			s.health.SetServingStatus("", st)
			s.health.SetServingStatus(vstreamv1.VStreamService_ServiceDesc.ServiceName, st)
			last = st
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Shutdown drains the server: health turns NOT_SERVING, no new stream starts, and every open
// stream ends at its next transaction boundary with Unavailable, telling its client to resume
// from its last position. Streams still open when ctx ends are cut off.
func (s *Server) Shutdown(ctx context.Context) {
	s.health.Shutdown()
	s.engine.Drain()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
	}
}
