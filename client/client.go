// Package client is the Go client for vstreamd; streams with automatic resume.
//
// A Client holds one gRPC connection. Stream opens VStreamService.Stream, hands
// every batch of events to a Handler and, when the stream breaks with a
// retryable error, reconnects with backoff and resumes from the last resume
// point it saw: the VGTID event that closes a transaction, a DDL or an OTHER
// statement.
//
// Delivery guarantee: a transaction whose closing VGTID event was delivered is
// never delivered again, and nothing is skipped. Batches are handed over as
// they arrive, so a reconnect can interrupt a transaction after some of its
// events were delivered. The client then delivers a synthetic event of type
// ROLLBACK (with keyspace and shard set), meaning "discard the unfinished
// transaction you were given", followed by the transaction again from its
// BEGIN. The same applies to a GTID event whose DDL or OTHER statement had not
// arrived yet.
//
// Encoded formats: with Request.Format other than the native one, OnMessages gets the
// messages and OnPosition each resume point after them, so that a consumer can commit its
// output together with the position it ends at (see package sink).
//
// Copy progress: while the server copies tables (a stream started from an empty position,
// or with Request.TablesToCopy), Request.OnCopyProgress hears, once per copy chunk, how
// many rows of each table are copied and how many the server estimates there are.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"

	// Registers the vtprotobuf gRPC codec, so that this end encodes and decodes without reflection.
	"github.com/vstream-cdc/vstream/internal/grpccodec"
)

// DefaultAckInterval is used when Options.AckInterval is zero.
const DefaultAckInterval = time.Second

// DefaultWindowSize is the HTTP/2 flow-control window, per stream and per connection, a
// Client's connection starts with: how many bytes of events the server may send ahead of
// the handler. A fixed window turns off grpc-go's bandwidth estimation, which answers every
// message received with a PING (and a WINDOW_UPDATE) that the server must read and answer:
// with a transaction a message, as a stream at a source's pace has, that is a wake-up of
// both sides per transaction, a fifth to almost half of the server's CPU per transaction
// (BenchmarkLatency).
// 8 MiB covers a gigabit link with a round trip up to 60 ms; a longer or faster link can
// set a larger Options.WindowSize.
const DefaultWindowSize = 8 << 20

// Options configure a Client. The zero value is usable.
type Options struct {
	// Token, when set, is sent with every stream as "authorization: Bearer <Token>".
	// Without TLS in DialOptions it travels in clear text.
	Token string

	// Identity, when set, names the program to the server with every stream, as the
	// x-vstream-client metadata (vstreamv1.ClientHeader): "program" or
	// "program/instance". The server's status page shows it (vstream-sink's streams as
	// sinks). It is a label, not a credential.
	Identity string

	// DialOptions are passed to grpc.NewClient after the defaults (insecure
	// transport credentials, a buffer pool that does not clear the buffers frames
	// are read into, and the WindowSize flow-control windows), so a
	// grpc.WithTransportCredentials here replaces that default. A credentials
	// bundle cannot be combined with it.
	DialOptions []grpc.DialOption

	// TLS, when set, secures the connection with this configuration (in place of
	// DialOptions' transport credentials). A TLS handshake the server's certificate fails
	// (an unknown authority, another name) or that the server refuses (a client
	// certificate missing or not trusted) ends Stream with an error wrapping ErrTLS rather
	// than a reconnect: a new connection would be refused the same way.
	TLS *tls.Config

	// WindowSize is the connection's fixed HTTP/2 flow-control window, per stream and per
	// connection, in bytes. Zero means DefaultWindowSize; a negative value leaves grpc-go's
	// own window, which grows with its estimate of the link's bandwidth.
	WindowSize int32

	// Backoff makes the reconnect delay policy for one Stream call; it is
	// called once per Stream so that concurrent calls do not share state.
	// Nil means exponential backoff with jitter from 100ms up to 10s. The
	// policy is reset after every batch the handler accepts; a policy that
	// returns backoff.Stop ends Stream with the last error.
	Backoff func() backoff.BackOff

	// MaxRetries bounds reconnects in a row that deliver nothing: after that
	// many retries have failed, Stream returns the last error. Zero retries
	// forever; a negative value never retries.
	MaxRetries int

	// Logger receives reconnect notices. Nil means slog.Default().
	Logger *slog.Logger

	// AckInterval is how often the last resume point, once the handler has
	// processed it, is acknowledged to the server (only when it changed).
	// Zero means DefaultAckInterval; negative disables acks.
	AckInterval time.Duration
}

// Client streams change events from one vstreamd server.
type Client struct {
	target string
	// tls are the TLS credentials of Options.TLS, nil without.
	tls  *tlsCreds
	conn *grpc.ClientConn
	svc  vstreamv1.VStreamServiceClient
	opts Options
	log  *slog.Logger

	last atomic.Pointer[binlogdata.VGtid]
}

// Dial creates a Client for target (any grpc.NewClient target, e.g.
// "127.0.0.1:15991"). No connection is made until Stream.
func Dial(target string, opts Options) (*Client, error) {
	dopts := make([]grpc.DialOption, 0, len(opts.DialOptions)+4)
	// The frames read go into buffers that are not cleared first (see grpccodec.Pool).
	dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()), experimental.WithBufferPool(grpccodec.Pool))
	if opts.WindowSize == 0 {
		opts.WindowSize = DefaultWindowSize
	}
	if opts.WindowSize > 0 {
		dopts = append(dopts, grpc.WithInitialWindowSize(opts.WindowSize), grpc.WithInitialConnWindowSize(opts.WindowSize))
	}
	dopts = append(dopts, opts.DialOptions...)
	var creds *tlsCreds
	if opts.TLS != nil {
		creds = newTLSCreds(opts.TLS)
		dopts = append(dopts, grpc.WithTransportCredentials(creds))
	}
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.AckInterval == 0 {
		opts.AckInterval = DefaultAckInterval
	}
	return &Client{
		target: target,
		tls:    creds,
		conn:   conn,
		svc:    vstreamv1.NewVStreamServiceClient(conn),
		opts:   opts,
		log:    log,
	}, nil
}

// Close releases the connection. Running streams fail with Canceled.
func (c *Client) Close() error {
	return c.conn.Close()
}

// Request says what to stream.
type Request struct {
	// Position is where to start; nil means "current". See ParsePosition.
	// It is sent as given; on reconnect it is replaced by the last resume point.
	Position *binlogdata.VGtid
	// Filter selects tables; nil streams every table. See ParseTables.
	Filter *binlogdata.Filter
	// HeartbeatInterval asks for a HEARTBEAT after this much idle time; zero means none.
	HeartbeatInterval time.Duration
	// Format is the server's output format; empty means native VEvents.
	Format string
	// MaxBatchBytes bounds the encoded size of one batch; zero means the server default.
	MaxBatchBytes int64
	// FormatOptions are the options of Format.
	FormatOptions map[string]string
	// OnMessages receives the encoded messages of a Format other than the native one, in
	// order. Resume points then come from the server's batch positions: messages after the
	// last one may be delivered again after a reconnect.
	OnMessages func(ctx context.Context, msgs []*vstreamv1.EncodedMessage) error
	// OnPosition hears each resume point of a stream of encoded messages, after OnMessages
	// had the messages before it: every message before pos is complete, and a reconnect
	// resumes from pos once OnPosition returns nil for it (an error stops the stream as
	// OnMessages' does). It is for a consumer that commits its output with the position it
	// ends at, so that the two cannot disagree.
	OnPosition func(ctx context.Context, pos *binlogdata.VGtid) error
	// TablesToCopy, CopyTablesWithoutKey and CopyChunkRows tune a table copy (see Flags in
	// proto/vstream/v1/vstream.proto).
	TablesToCopy         []string
	CopyTablesWithoutKey bool
	CopyChunkRows        int64
	// CopyParallelism and CopyMaxRowsPerSecond pace a table copy (see Flags in the .proto);
	// zero leaves them to the server.
	CopyParallelism      int32
	CopyMaxRowsPerSecond int64
	// ColumnMasks name columns whose values the server replaces before they leave it (see
	// ColumnMask in the .proto).
	ColumnMasks []*vstreamv1.ColumnMask
	// FailureMode is what the server does with an event it cannot decode or encode: "fail"
	// (or empty) ends the stream with FailedPrecondition, which Stream returns without
	// retrying; "warn" and "skip" skip the event (see Flags in the .proto).
	FailureMode string
	// OnCopyProgress, when set, hears how far a table copy is: per table, the rows copied so
	// far and the server's estimate of the table's rows (information_schema's, read again as
	// the copy goes, so it moves). It is called once per copy chunk, with the batch the
	// progress came with, just before the handler gets that batch; an error stops the stream
	// as the handler's does. See CopyProgress in proto/vstream/v1/vstream.proto.
	OnCopyProgress func(ctx context.Context, progress []*vstreamv1.CopyProgress) error
	// EventTypes, when not empty, are the only event types sent (native format only); VGTID,
	// the resume point, always comes.
	EventTypes []binlogdata.VEventType
	// Snapshots, when set, takes requests to copy tables again on the running stream (see
	// Snapshot in proto/vstream/v1/vstream.proto): the stream goes on, and the tables' rows
	// come as a copy, chunk by chunk, between its changes. A request is read while the
	// stream is connected. Until the stream has passed a resume point after the copy of a
	// table began, the request is made again on every reconnect, so a broken stream does
	// not lose it.
	Snapshots <-chan Snapshot
	// WhenPurged is what Stream does when the server no longer has the binlogs the position
	// needs (a FailedPrecondition that vstreamv1.IsPositionPurged recognises), at the start
	// or at a reconnect: PurgedFail (or empty) returns that error; PurgedWhenNeeded logs a
	// warning, tells OnResnapshot, and starts over with a table copy of the filter's tables
	// (an empty position in the same keyspaces and shards, as ParsePosition's "copy"; the
	// copy is of every table the filter selects, TablesToCopy is dropped), then streams on
	// from where the copy ends. A handler then gets every selected row again as copy rows.
	WhenPurged string
	// OnResnapshot, when set, hears that the position was purged and a table copy starts
	// (WhenPurged PurgedWhenNeeded), before the copy's first batch; cause is the server's
	// error. A consumer that keeps the tables can mark or drop what it has. An error stops
	// the stream as the handler's does.
	OnResnapshot func(ctx context.Context, cause error) error
}

// Snapshot is a request to copy tables again on a running stream.
type Snapshot struct {
	Tables []string
	// Where, when set, copies only the rows for which it holds (a filter rule's WHERE).
	Where string
}

// What Request.WhenPurged may be.
const (
	// PurgedFail ends the stream with the server's FailedPrecondition.
	PurgedFail = "fail"
	// PurgedWhenNeeded starts over with a table copy, as Vitess's on-demand copy does.
	PurgedWhenNeeded = "when_needed"
)

// Handler gets each batch; returning an error stops the stream with that error (not retried).
//
// The events belong to the handler once passed. A batch that contains a
// resume point counts as processed, and may be acknowledged to the server,
// only after the handler returns nil for it. An event of type ROLLBACK means
// the events since the last VGTID will come again (see the package comment).
type Handler func(ctx context.Context, events []*binlogdata.VEvent) error

// handlerError marks an error that came from the Handler, so that it is
// returned as is instead of being classified for retry.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

// ErrStreamDown is wrapped, beside ctx.Err(), by the error of a Stream whose ctx ended while
// the stream was down: its last attempt had failed and it was waiting to reconnect. The
// error also says why the last attempt failed. A caller that ends streams with a deadline
// tells by it a stream that never reached the server from one that ran until the deadline.
var ErrStreamDown = errors.New("the stream was not connected")

// errStreamEnded stands for a stream the server closed with an OK status;
// a change stream has no natural end, so this is treated like a broken connection.
var errStreamEnded = errors.New("server ended the stream")

// Stream runs until ctx ends, the handler fails, or a permanent error.
//
// Retryable errors (see IsRetryable) lead to a reconnect from the last resume
// point, subject to Options.MaxRetries and Options.Backoff. Stream returns
// ctx.Err() when ctx ends (wrapped with ErrStreamDown and the last failure when the stream
// was down then), the handler's error unchanged when the handler
// fails, and otherwise the stream error: a permanent gRPC status error as
// received, or the last retryable one, wrapped, once retries are exhausted
// (status.Code sees through the wrapping).
//
// Several Streams may run on one Client at once, but LastPosition then
// reports whichever reached a resume point last.
func (c *Client) Stream(ctx context.Context, req Request, h Handler) error {
	if h == nil {
		return errors.New("client.Stream: nil handler")
	}
	switch req.WhenPurged {
	case "", PurgedFail, PurgedWhenNeeded:
	default:
		return fmt.Errorf("client.Stream: WhenPurged %q: want %q or %q", req.WhenPurged, PurgedFail, PurgedWhenNeeded)
	}
	s := &stream{c: c, req: req, h: h}
	if sg := req.Position.GetShardGtids(); len(sg) > 0 {
		s.tr.keyspace, s.tr.shard = sg[0].GetKeyspace(), sg[0].GetShard()
	}
	bo := c.newBackoff()
	failures := 0
	// down is the failure the stream has not recovered from: set when an attempt fails,
	// cleared when one delivers a batch.
	var down error
	// recopied is set when the stream started over with a table copy and has not delivered a
	// batch since: a copy whose position is purged again at once is not started a third time.
	recopied := false
	ended := func() error {
		if down != nil {
			return fmt.Errorf("%w: %w; last failure: %w", ctx.Err(), ErrStreamDown, down)
		}
		return ctx.Err()
	}
	for {
		progressed, err := s.attempt(ctx)
		if herr, ok := errors.AsType[*handlerError](err); ok {
			return herr.err
		}
		if progressed {
			down, recopied = nil, false
		}
		if ctxDone(ctx) {
			return ended()
		}
		if s.req.WhenPurged == PurgedWhenNeeded && vstreamv1.IsPositionPurged(err) && !recopied {
			if rerr := s.recopy(ctx, err); rerr != nil {
				return rerr
			}
			recopied = true
			continue
		}
		if !IsRetryable(err) {
			return err
		}
		if terr := c.tlsRefused(err); terr != nil {
			return terr
		}
		if progressed {
			bo.Reset()
			failures = 0
		}
		failures++
		down = err
		if c.opts.MaxRetries < 0 || (c.opts.MaxRetries > 0 && failures > c.opts.MaxRetries) {
			return fmt.Errorf("giving up after %d failed attempts in a row: %w", failures, err)
		}
		if rerr := s.rollback(ctx); rerr != nil {
			return rerr
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return fmt.Errorf("backoff gave up after %d failed attempts in a row: %w", failures, err)
		}
		c.log.Warn("vstream stream broken, reconnecting",
			"err", err, "delay", wait, "failures", failures, "position", gtidOf(s.startPosition()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ended()
		case <-t.C:
		}
	}
}

// ctxDone also reports a deadline that has passed but whose timer has not yet
// fired: gRPC turns the server's reset of such a stream into DeadlineExceeded
// slightly before ctx.Err() is set, and that must not count as a stream error.
func ctxDone(ctx context.Context) bool {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
	}
	return ctx.Err() != nil
}

func gtidOf(v *binlogdata.VGtid) string {
	if sg := v.GetShardGtids(); len(sg) > 0 {
		return sg[0].GetGtid()
	}
	return ""
}

// LastPosition returns the last resume VGtid (nil before the first).
// It is a copy, safe to keep and to pass back as Request.Position.
func (c *Client) LastPosition() *binlogdata.VGtid {
	p := c.last.Load()
	if p == nil {
		return nil
	}
	return proto.CloneOf(p)
}

// stream is the state of one Stream call across its attempts.
type stream struct {
	c   *Client
	req Request
	h   Handler

	// tr is only touched by the Stream goroutine.
	tr tracker
	// snapMu guards snapPending: the tables of Snapshot requests whose copy has not yet
	// been passed by a resume point.
	snapMu      sync.Mutex
	snapPending map[string]pendingSnapshot
	// resume mirrors tr.resume for the ack goroutine.
	resume atomic.Pointer[binlogdata.VGtid]
}

func (s *stream) startPosition() *binlogdata.VGtid {
	if s.tr.resume != nil {
		return s.tr.resume
	}
	if s.req.Position != nil {
		return s.req.Position
	}
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}}
}

func (s *stream) startRequest() *vstreamv1.StreamRequest {
	flags := &vstreamv1.Flags{MaxBatchBytes: s.req.MaxBatchBytes, TablesToCopy: s.req.TablesToCopy,
		CopyTablesWithoutKey: s.req.CopyTablesWithoutKey, CopyChunkRows: s.req.CopyChunkRows,
		CopyParallelism: s.req.CopyParallelism, CopyMaxRowsPerSecond: s.req.CopyMaxRowsPerSecond,
		EventProcessingFailureHandlingMode: s.req.FailureMode, EventTypes: s.req.EventTypes, ColumnMasks: s.req.ColumnMasks}
	if s.req.HeartbeatInterval > 0 {
		flags.HeartbeatInterval = durationpb.New(s.req.HeartbeatInterval)
	}
	return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  s.startPosition(),
		Filter: s.req.Filter,
		Flags:  flags,
		Format: s.req.Format, FormatOptions: s.req.FormatOptions,
	}}}
}

// attempt runs one gRPC stream until it fails. progressed reports whether the
// handler accepted at least one batch, which is what resets the retry budget.
func (s *stream) attempt(ctx context.Context) (progressed bool, err error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.c.opts.Token != "" {
		actx = metadata.AppendToOutgoingContext(actx, "authorization", "Bearer "+s.c.opts.Token)
	}
	if s.c.opts.Identity != "" {
		actx = metadata.AppendToOutgoingContext(actx, vstreamv1.ClientHeader, s.c.opts.Identity)
	}
	st, err := s.c.svc.Stream(actx)
	if err != nil {
		return false, err
	}
	if err := st.Send(s.startRequest()); err != nil {
		// Send reports only io.EOF for a stream that already failed; the
		// status that explains it comes from Recv.
		if errors.Is(err, io.EOF) {
			_, err = st.Recv()
		}
		return false, streamErr(err)
	}
	// The server sees a new stream at a clean boundary, so nothing of an
	// earlier attempt is still open.
	s.tr.open = false

	var wg sync.WaitGroup
	defer wg.Wait()
	// Runs before wg.Wait: ending the stream is what stops the ack goroutine.
	defer cancel()
	if d := s.c.opts.AckInterval; d > 0 || s.req.Snapshots != nil {
		acked := s.resume.Load()
		wg.Go(func() { s.sendLoop(actx, st, d, acked) })
	}

	for {
		resp, err := st.Recv()
		if err != nil {
			return progressed, streamErr(err)
		}
		events, msgs := resp.GetEvents(), resp.GetMessages()
		progress := resp.GetCopyProgress()
		if len(events) == 0 && len(msgs) == 0 && resp.GetPosition() == nil && len(progress) == 0 {
			continue
		}
		next := s.tr.advance(events).advanceEncoded(len(msgs) > 0, resp.GetPosition())
		if len(progress) > 0 && s.req.OnCopyProgress != nil {
			if err := s.req.OnCopyProgress(ctx, progress); err != nil {
				return progressed, &handlerError{err}
			}
		}
		if len(events) > 0 {
			if err := s.h(ctx, events); err != nil {
				return progressed, &handlerError{err}
			}
		}
		if len(msgs) > 0 && s.req.OnMessages != nil {
			if err := s.req.OnMessages(ctx, msgs); err != nil {
				return progressed, &handlerError{err}
			}
		}
		if next.resume != s.tr.resume && resp.GetPosition() != nil && s.req.OnPosition != nil {
			if err := s.req.OnPosition(ctx, proto.CloneOf(next.resume)); err != nil {
				return progressed, &handlerError{err}
			}
		}
		progressed = true
		if s.req.Snapshots != nil {
			s.snapshotProgress(events, progress, next.resume != s.tr.resume)
		}
		if next.resume != s.tr.resume {
			s.resume.Store(next.resume)
			s.c.last.Store(next.resume)
		}
		s.tr = next
	}
}

func streamErr(err error) error {
	if errors.Is(err, io.EOF) {
		return errStreamEnded
	}
	return err
}

// sendLoop is the only goroutine that sends on st after the Start message,
// which keeps to gRPC's rule of one sender per stream while the Stream
// goroutine is blocked in Recv or in the handler. It sends acks every every (none when
// zero) and the Snapshot requests: first those not yet begun before a resume point.
func (s *stream) sendLoop(ctx context.Context, st grpc.BidiStreamingClient[vstreamv1.StreamRequest, vstreamv1.StreamResponse], every time.Duration, acked *binlogdata.VGtid) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	sendSnapshot := func(sn Snapshot) bool {
		req := &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Snapshot{Snapshot: &vstreamv1.Snapshot{Tables: sn.Tables, Where: sn.Where}}}
		if err := st.Send(req); err != nil {
			s.c.log.Debug("vstream snapshot request not sent", "err", err)
			return false
		}
		return true
	}
	for _, sn := range s.pendingSnapshots() {
		s.c.log.Info("vstream asking again for the snapshot of tables whose copy had not begun", "tables", sn.Tables, "where", sn.Where)
		if !sendSnapshot(sn) {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case sn := <-s.req.Snapshots:
			s.addSnapshot(sn)
			if !sendSnapshot(sn) {
				return
			}
			continue
		case <-tick:
		}
		pos := s.resume.Load()
		if pos == nil || pos == acked {
			continue
		}
		req := &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: pos}}}
		if err := st.Send(req); err != nil {
			// Recv in the Stream goroutine reports why the stream ended.
			s.c.log.Debug("vstream ack not sent", "err", err)
			return
		}
		acked = pos
	}
}

// pendingSnapshot is a table of a Snapshot request: begun once the server reported its
// copy.
type pendingSnapshot struct {
	where string
	begun bool
}

// addSnapshot adds a request's tables to the pending ones, as not begun.
func (s *stream) addSnapshot(sn Snapshot) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if s.snapPending == nil {
		s.snapPending = map[string]pendingSnapshot{}
	}
	for _, t := range sn.Tables {
		s.snapPending[t] = pendingSnapshot{where: sn.Where}
	}
}

// pendingSnapshots are the pending tables as requests, one per condition.
func (s *stream) pendingSnapshots() []Snapshot {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	byWhere := map[string][]string{}
	for t, p := range s.snapPending {
		byWhere[p.where] = append(byWhere[p.where], t)
	}
	out := make([]Snapshot, 0, len(byWhere))
	for _, where := range slices.Sorted(maps.Keys(byWhere)) {
		out = append(out, Snapshot{Tables: slices.Sorted(slices.Values(byWhere[where])), Where: where})
	}
	return out
}

// snapshotProgress follows the copies of requested tables: a table's copy has begun when
// the server reports progress of it or its COPY_COMPLETED, and the request is done once a
// resume point comes after that (resumed tells that this batch brought one): a stream
// resumed from it goes on with the copy.
func (s *stream) snapshotProgress(events []*binlogdata.VEvent, progress []*vstreamv1.CopyProgress, resumed bool) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if len(s.snapPending) == 0 {
		return
	}
	begin := func(t string) {
		if p, ok := s.snapPending[t]; ok {
			p.begun = true
			s.snapPending[t] = p
		}
	}
	for _, p := range progress {
		begin(p.GetTable())
	}
	for _, ev := range events {
		if ev.GetType() != binlogdata.VEventType_COPY_COMPLETED {
			continue
		}
		if t := ev.GetLastPKEvent().GetTableLastPK().GetTableName(); t != "" {
			begin(t)
		}
	}
	if resumed {
		maps.DeleteFunc(s.snapPending, func(_ string, p pendingSnapshot) bool { return p.begun })
	}
}

// recopy starts the stream over with a table copy after the server said its position is
// purged (Request.WhenPurged PurgedWhenNeeded): the unfinished transaction, if any, is rolled
// back for the handler, and the next attempt starts from an empty position in the same
// keyspaces and shards, copying every table of the filter.
func (s *stream) recopy(ctx context.Context, cause error) error {
	from := s.startPosition()
	s.c.log.Warn("vstream position purged from the server's binlogs: starting over with a table copy of the streamed tables (when_needed)",
		"position", gtidOf(from), "err", cause)
	if err := s.rollback(ctx); err != nil {
		return err
	}
	if s.req.OnResnapshot != nil {
		if err := s.req.OnResnapshot(ctx, cause); err != nil {
			return err
		}
	}
	fresh := &binlogdata.VGtid{}
	for _, sg := range from.GetShardGtids() {
		fresh.ShardGtids = append(fresh.ShardGtids, &binlogdata.ShardGtid{Keyspace: sg.GetKeyspace(), Shard: sg.GetShard()})
	}
	if len(fresh.ShardGtids) == 0 {
		fresh.ShardGtids = []*binlogdata.ShardGtid{{}}
	}
	s.req.Position, s.req.TablesToCopy = fresh, nil
	s.tr.resume, s.tr.pending, s.tr.open = nil, false, false
	s.resume.Store(nil)
	return nil
}

// rollback tells the handler to drop an unfinished transaction before it is
// delivered again from its start.
func (s *stream) rollback(ctx context.Context) error {
	if !s.tr.pending {
		return nil
	}
	ev := &binlogdata.VEvent{
		Type:     binlogdata.VEventType_ROLLBACK,
		Keyspace: s.tr.keyspace,
		Shard:    s.tr.shard,
	}
	if err := s.h(ctx, []*binlogdata.VEvent{ev}); err != nil {
		return err
	}
	s.tr.pending = false
	s.tr.open = false
	return nil
}

// tracker follows transaction boundaries. It is a value so that a batch can
// be scanned before the handler sees it and committed only once it accepts it.
type tracker struct {
	// open: a BEGIN has not been closed by COMMIT or ROLLBACK yet.
	open bool
	// pending: events were delivered after the resume point, so a reconnect
	// would deliver them again.
	pending bool
	// resume is the last VGtid seen outside a transaction, kept as received.
	resume *binlogdata.VGtid
	// keyspace and shard label the synthetic ROLLBACK.
	keyspace, shard string
}

// advanceEncoded follows a batch of encoded messages: the server marks where such a batch
// ends at a transaction boundary.
func (t tracker) advanceEncoded(messages bool, position *binlogdata.VGtid) tracker {
	if messages {
		t.pending = true
	}
	if len(position.GetShardGtids()) > 0 {
		t.resume = proto.CloneOf(position)
		t.pending = false
	}
	return t
}

func (t tracker) advance(events []*binlogdata.VEvent) tracker {
	for _, ev := range events {
		if ev.GetKeyspace() != "" {
			t.keyspace, t.shard = ev.GetKeyspace(), ev.GetShard()
		}
		switch ev.GetType() {
		case binlogdata.VEventType_HEARTBEAT:
			// Not part of the binlog; redelivering or losing one is harmless.
		case binlogdata.VEventType_BEGIN:
			t.open, t.pending = true, true
		case binlogdata.VEventType_COMMIT, binlogdata.VEventType_ROLLBACK:
			t.open, t.pending = false, true
		case binlogdata.VEventType_VGTID:
			// The server sends VGTID after COMMIT, DDL and OTHER. Any VGTID
			// outside a transaction is an equally safe place to resume, and
			// taking one also pins a "current" start to a real position.
			sg := ev.GetVgtid().GetShardGtids()
			if t.open || len(sg) == 0 {
				t.pending = true
				continue
			}
			// A copy, so that a handler changing its events cannot change
			// what is sent back to the server.
			t.resume = proto.CloneOf(ev.GetVgtid())
			t.pending = false
			if t.keyspace == "" {
				t.keyspace, t.shard = sg[0].GetKeyspace(), sg[0].GetShard()
			}
		default:
			t.pending = true
		}
	}
	return t
}
