package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/topology"
	"github.com/vstream-cdc/vstream/vstreamer"
)

type vstreamService struct {
	vstreamv1.UnimplementedVStreamServiceServer
	srv *Server
}

func (v *vstreamService) Stream(stream vstreamv1.VStreamService_StreamServer) error {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	start, err := recvStart(stream)
	if err != nil {
		return err
	}
	req, sources, mopts, err := v.request(start)
	if err != nil {
		return err
	}
	enc, err := v.openEncoder(ctx, start, &req, sources)
	if err != nil {
		return err
	}
	// A batch of VEvents is marshalled and none of its events kept (the acks and the snapshot
	// requests keep a VGTID, never a row), so the engine builds its ROW events in the memory
	// of those already sent. An encoder may hold events across batches, and the merge of
	// shards holds them between its sources.
	req.SendRetainsNothing = enc == nil && sources == nil
	release, err := v.srv.admit(req)
	if err != nil {
		return err
	}
	defer release()
	id := v.srv.streamIDs.Add(1)
	format := formatName(start.GetFormat())
	log := v.srv.log.With("stream", id, "position", req.Position)
	log.Info("stream starting", "format", format)
	v.srv.reportSkips(enc, format, log)
	stats := v.srv.stats.stream(v.srv.streamInfo(ctx, id, "native", req, format))
	var engineErr error
	defer func() { stats.done(engineErr) }()
	progress := &copyProgress{streamStats: stats}
	req.Observer = progress
	for i := range sources {
		r := &sources[i].Request
		r.WithSource, r.SkipEmptyTransactions, r.Observer = req.WithSource, req.SkipEmptyTransactions, progress
		sources[i].Logger = log
	}

	out := &nativeSender{stream: stream, acks: &ackTracker{}, snaps: newSnapshots(start.GetVgtid()), stats: stats, progress: progress}
	if enc != nil {
		out.encoded = v.newEncodedBatch(enc, req, stats, log)
	}
	multi := len(req.Keyspaces) > 0 || sources != nil
	go v.serveRequests(ctx, cancel, stream, out, multi, log)

	err = v.runEngine(ctx, req, sources, mopts, out, log)
	err = causeOf(ctx, err)
	if cause := context.Cause(ctx); cause != nil && status.Code(cause) == codes.InvalidArgument {
		// A request on the running stream the server refused (a bad snapshot request).
		err = cause
	}
	engineErr = err
	acked, ackLag := out.acks.state()
	log.Info("stream ended", "err", err, "acked", acked, "ack_lag", ackLag)
	return toStatus(err)
}

// recvStart reads a native stream's first message, which must be its start.
func recvStart(stream vstreamv1.VStreamService_StreamServer) (*vstreamv1.Start, error) {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, status.Error(codes.InvalidArgument, "stream closed before its start message")
		}
		return nil, err
	}
	start := first.GetStart()
	if start == nil {
		return nil, status.Error(codes.InvalidArgument, "the first message must be a start; acks come after it")
	}
	return start, nil
}

// openEncoder opens the encoder of the format a start asks for (nil for VEvents) and sets
// what the request's events must carry for it.
func (v *vstreamService) openEncoder(ctx context.Context, start *vstreamv1.Start, req *vstreamer.Request, sources []shards.Source) (encoder.Encoder, error) {
	keyspaces := []string{req.Keyspace}
	if sources != nil {
		keyspaces = sourceKeyspaces(sources)
	} else if len(req.Keyspaces) > 0 {
		keyspaces = keyspaces[:0]
		for _, k := range req.Keyspaces {
			keyspaces = append(keyspaces, k.Keyspace)
		}
	}
	enc, err := v.srv.newEncoder(ctx, start.GetFormat(), start.GetFormatOptions(), keyspaces...)
	if err != nil {
		return nil, err
	}
	req.WithSource = enc != nil
	// A VEvent client needs no event for a transaction its filter leaves empty: the next VGTID
	// carries its position. Encoded formats keep them: several write a record per transaction
	// (Debezium's transaction metadata, Canal's transaction entries), and encodedBatch takes
	// its positions only from VGTIDs that end a transaction.
	req.SkipEmptyTransactions = enc == nil
	if enc != nil && len(req.EventTypes) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "event_types works with the vevent format only; format %q needs whole transactions", start.GetFormat())
	}
	return enc, nil
}

// newEncodedBatch is the batcher of a stream's encoded responses, each bounded by the
// request's max batch bytes (or the engine's).
func (v *vstreamService) newEncodedBatch(enc encoder.Encoder, req vstreamer.Request, stats *streamStats, log *slog.Logger) *encodedBatch {
	limit := req.MaxBatchBytes
	if limit <= 0 {
		limit = v.srv.engine.Config().MaxBatchBytes
	}
	return &encodedBatch{enc: enc, limit: limit, failMode: req.FailureMode, skipped: stats, log: log}
}

// serveRequests reads the client's acks and snapshot requests until the stream ends; a
// request the server refuses ends the stream through cancel.
func (v *vstreamService) serveRequests(ctx context.Context, cancel context.CancelCauseFunc, stream vstreamv1.VStreamService_StreamServer, out *nativeSender, multi bool, log *slog.Logger) {
	defer catchAcks(cancel, log)
	v.readAcks(ctx, stream, out.acks, log, out.stats, func(sn *vstreamv1.Snapshot) {
		if multi {
			cancel(status.Error(codes.InvalidArgument, "snapshot: a stream of several keyspaces cannot take snapshot requests; stream the keyspace alone"))
			return
		}
		out.snaps.request(sn.GetTables(), sn.GetWhere())
		log.Info("snapshot requested", "tables", sn.GetTables(), "where", sn.GetWhere())
	}, func(err error) { cancel(err) })
}

// runEngine streams req (or the shards of sources) into out, starting again from where it
// stopped each time a snapshot request restarts it to copy tables.
func (v *vstreamService) runEngine(ctx context.Context, req vstreamer.Request, sources []shards.Source, mopts shards.Options, out *nativeSender, log *slog.Logger) error {
	for {
		ectx, ecancel := context.WithCancelCause(ctx)
		out.snaps.run(ecancel)
		var err error
		if sources != nil {
			err = shards.StreamWith(ectx, sources, mopts, out.send)
		} else {
			err = v.srv.engine.Stream(ectx, req, out.send)
		}
		ecancel(nil)
		if ctx.Err() != nil || !out.snaps.restarting() {
			return err
		}
		req = out.snaps.next(req)
		log.Info("stream restarting to copy tables", "position", req.Position, "tables", len(req.TableLastPKs))
	}
}

// nativeSender sends the engine's batches to a native client. It owns what a batch passes
// through on its way out: the snapshot requests that stop the engine at a batch's edge,
// the sent positions that turn acks into lag, the stream's counters, the copy progress
// that rides on the next response, and the encoder's batcher for a format other than
// VEvents.
type nativeSender struct {
	stream   vstreamv1.VStreamService_StreamServer
	snaps    *snapshots
	acks     *ackTracker
	stats    *streamStats
	progress *copyProgress
	// encoded is nil for the vevent format; resp is then the response reused for each batch.
	encoded *encodedBatch
	resp    vstreamv1.StreamResponse
}

// send is the engine's SendFunc.
func (s *nativeSender) send(events []*binlogdata.VEvent) (err error) {
	if !s.snaps.before() {
		return errRestart
	}
	defer func() {
		if err == nil && s.snaps.after(events) {
			err = errRestart
		}
	}()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].GetType() == binlogdata.VEventType_VGTID {
			s.acks.sent(events[i].GetVgtid())
			break
		}
	}
	s.stats.sent(events)
	if s.encoded != nil {
		return s.encoded.send(events, s.sendEncoded)
	}
	resp := &s.resp
	resp.Events = events
	resp.CopyProgress = s.progress.take()
	serr := s.stream.Send(resp)
	resp.Events, resp.CopyProgress = nil, nil
	return serr
}

// sendEncoded sends one response of encoded messages.
func (s *nativeSender) sendEncoded(r *vstreamv1.StreamResponse) error {
	r.CopyProgress = s.progress.take()
	return s.stream.Send(r)
}

func formatName(f string) string {
	if f == "" {
		return "vevent"
	}
	return f
}

// request reads a Start: the engine's request, or, for a VGtid of the topology's keyspaces,
// the shards to stream (and the request for the logs and limits) and the merge's options.
func (v *vstreamService) request(start *vstreamv1.Start) (vstreamer.Request, []shards.Source, shards.Options, error) {
	var opts shards.Options
	req, err := v.baseRequest(start)
	if err != nil {
		return req, nil, opts, err
	}
	flags := start.GetFlags()
	sel, err := nativeSelection(flags)
	if err != nil {
		return req, nil, opts, err
	}
	// The shards' engines send heartbeats only for minimize_skew to keep time by; the merge
	// drops them and sends its own after heartbeat_interval without anything sent, as
	// vtgate does (see vitessService.VStream).
	base := req
	base.HeartbeatInterval = 0
	if flags.GetMinimizeSkew() {
		base.HeartbeatInterval = tabletHeartbeat
	}
	sources, err := v.srv.clusterSources(start.GetVgtid(), base, sel)
	if err != nil || sources != nil {
		if sources != nil {
			req.Keyspace, req.Position = sources[0].Request.Keyspace, sources[0].Request.Position
			opts = shards.Options{MinimizeSkew: flags.GetMinimizeSkew(), Heartbeat: req.HeartbeatInterval, DropShardHeartbeats: true}
		}
		return req, sources, opts, err
	}
	if flags.GetMinimizeSkew() || flags.GetTabletType() != "" || len(flags.GetCells()) > 0 || flags.GetCellPreference() != "" {
		return req, nil, opts, status.Error(codes.InvalidArgument, "minimize_skew, tablet_type, cells and cell_preference choose among the shards and servers of a keyspace of vstreamd --topology; this stream is of one server: leave them unset")
	}
	req, err = v.keyspaceRequest(start, req)
	return req, nil, opts, err
}

// nativeSelection reads how a native request chooses a shard's servers.
func nativeSelection(flags *vstreamv1.Flags) (shards.Selection, error) {
	tt := strings.ToLower(strings.TrimSpace(flags.GetTabletType()))
	switch tt {
	case "", topology.Primary, topology.Replica, topology.RdOnly:
	default:
		return shards.Selection{}, status.Errorf(codes.InvalidArgument, "tablet_type %q: want primary (the default), replica or rdonly", flags.GetTabletType())
	}
	var cells []string
	for _, c := range flags.GetCells() {
		if c = strings.TrimSpace(c); c != "" {
			cells = append(cells, c)
		}
	}
	return cellSelection(tt, cells, flags.GetCellPreference())
}

// baseRequest reads a Start's flags.
func (v *vstreamService) baseRequest(start *vstreamv1.Start) (vstreamer.Request, error) {
	flags := start.GetFlags()
	req := vstreamer.Request{
		Filter:               start.GetFilter(),
		MaxBatchBytes:        int(flags.GetMaxBatchBytes()),
		TablesToCopy:         flags.GetTablesToCopy(),
		CopyTablesWithoutKey: flags.GetCopyTablesWithoutKey(),
		CopyChunkRows:        int(flags.GetCopyChunkRows()),
		CopyParallelism:      int(flags.GetCopyParallelism()),
		CopyMaxRowsPerSecond: flags.GetCopyMaxRowsPerSecond(),
		FailureMode:          flags.GetEventProcessingFailureHandlingMode(),
		EventTypes:           flags.GetEventTypes(),
	}
	for _, m := range flags.GetColumnMasks() {
		req.ColumnMasks = append(req.ColumnMasks, filter.Mask{Table: m.GetTable(), Column: m.GetColumn(), Rule: m.GetRule()})
	}
	if _, err := vstreamer.ParseFailureMode(req.FailureMode); err != nil {
		return req, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := checkEventTypes(req.EventTypes); err != nil {
		return req, err
	}
	if d := start.GetFlags().GetHeartbeatInterval(); d != nil {
		req.HeartbeatInterval = d.AsDuration()
	}
	if d := flags.GetCopyMaxReplicationLag(); d != nil {
		if err := d.CheckValid(); err != nil {
			return req, status.Errorf(codes.InvalidArgument, "copy_max_replication_lag: %v; give a duration of zero or more", err)
		}
		// The engine refuses a negative bound, naming the flag.
		req.CopyMaxReplicationLag = d.AsDuration()
	}
	return req, nil
}

// keyspaceRequest adds a Start's positions: one keyspace (database) of the engine's server,
// or several.
func (v *vstreamService) keyspaceRequest(start *vstreamv1.Start, req vstreamer.Request) (vstreamer.Request, error) {
	cfg := v.srv.engine.Config()
	// Several ShardGtids name several keyspaces (databases) of the server, streamed in one
	// stream (vstreamer.Request.Keyspaces).
	for _, sg := range start.GetVgtid().GetShardGtids() {
		ks := sg.GetKeyspace()
		if ks != "" {
			if _, err := v.srv.engine.Database(ks); err != nil {
				return req, toStatus(err)
			}
		}
		if sh := sg.GetShard(); sh != "" && sh != cfg.Shard {
			return req, status.Errorf(codes.InvalidArgument, "vgtid shard %q is not served here; this server streams shard %q", sh, cfg.Shard)
		}
		req.Keyspaces = append(req.Keyspaces, vstreamer.KeyspaceStart{Keyspace: ks, Position: sg.GetGtid(), TableLastPKs: sg.GetTablePKs()})
	}
	if len(req.Keyspaces) == 1 {
		req.Keyspace, req.Position, req.TableLastPKs = req.Keyspaces[0].Keyspace, req.Keyspaces[0].Position, req.Keyspaces[0].TableLastPKs
		req.Keyspaces = nil
	}
	if len(req.Keyspaces) > 0 {
		// For the logs: every keyspace starts there.
		req.Position = req.Keyspaces[0].Position
	}
	return req, nil
}

// readAcks records the client's acknowledgements until the stream ends. A client that closes
// its sending side keeps receiving.
func (v *vstreamService) readAcks(ctx context.Context, stream vstreamv1.VStreamService_StreamServer, acks *ackTracker, log *slog.Logger, stats *streamStats, snapshot func(*vstreamv1.Snapshot), fail func(error)) {
	for {
		msg, err := stream.Recv()
		if err != nil {
			if status.Code(err) == codes.InvalidArgument {
				// A message the validator refused: the stream ends saying what to fix.
				fail(err)
			}
			return
		}
		if sn := msg.GetSnapshot(); sn != nil {
			snapshot(sn)
			continue
		}
		ack := msg.GetAck()
		if faults.Enabled() {
			faults.At(faults.Ack, "", ack)
		}
		if ack == nil {
			log.Warn("ignoring a second start message on a running stream")
			continue
		}
		lag := acks.acked(ack.GetVgtid())
		stats.ackedLag(lag)
		log.Debug("client ack", "acked", gtidOf(ack.GetVgtid()), "ack_lag", lag)
		if ctx.Err() != nil {
			return
		}
	}
}

func gtidOf(v *binlogdata.VGtid) string {
	if len(v.GetShardGtids()) == 0 {
		return ""
	}
	return v.GetShardGtids()[0].GetGtid()
}

// ackTracker remembers when recent positions were sent, so that an ack can be turned into the
// client's lag: how long ago the position it acknowledges was sent.
type ackTracker struct {
	mu      sync.Mutex
	ring    [256]sentPos
	next    int
	ackGTID string
	ackLag  time.Duration
}

type sentPos struct {
	gtid string
	at   time.Time
}

func (a *ackTracker) sent(v *binlogdata.VGtid) {
	a.mu.Lock()
	a.ring[a.next%len(a.ring)] = sentPos{gtid: gtidOf(v), at: time.Now()}
	a.next++
	a.mu.Unlock()
}

func (a *ackTracker) acked(v *binlogdata.VGtid) time.Duration {
	g := gtidOf(v)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ackGTID = g
	for _, p := range a.ring {
		if p.gtid == g {
			a.ackLag = time.Since(p.at)
			break
		}
	}
	return a.ackLag
}

func (a *ackTracker) state() (string, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ackGTID, a.ackLag
}

// copyProgress reports the copy's progress to the metrics and keeps it for the next response,
// so that a client hears of it once per chunk: the engine reports it once a chunk is read,
// before the chunk's LASTPK goes out.
type copyProgress struct {
	*streamStats
	mu      sync.Mutex
	pending []*vstreamv1.CopyProgress
}

func (p *copyProgress) CopyProgress(table string, copied, estimated int64) {
	p.streamStats.CopyProgress(table, copied, estimated)
	// Heartbeats may be sent from another goroutine while a chunk is read.
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.pending {
		if c.GetTable() == table {
			c.RowsCopied, c.RowsEstimated = copied, estimated
			return
		}
	}
	p.pending = append(p.pending, &vstreamv1.CopyProgress{Table: table, RowsCopied: copied, RowsEstimated: estimated})
}

// take returns the progress not sent yet, and forgets it.
func (p *copyProgress) take() []*vstreamv1.CopyProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.pending
	p.pending = nil
	return c
}

// sourceKeyspaces are the keyspaces of a stream's shards, each once, in order.
func sourceKeyspaces(sources []shards.Source) []string {
	var out []string
	for _, src := range sources {
		if ks := src.Members[0].Engine.Config().Keyspace; !slices.Contains(out, ks) {
			out = append(out, ks)
		}
	}
	return out
}
