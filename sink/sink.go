// Package sink delivers a vstreamd change stream, in one of the server's encoded formats, into
// a message broker, each source change exactly once.
//
// Run streams with the Go client (package client, which reconnects and resumes by itself)
// and hands every encoded message to a Publisher as a Record. Each time the stream reaches a
// resume point (a batch that ends at a transaction boundary), Run asks the Publisher to
// commit what it was given together with that position, and only then lets the client move
// its resume point on. When a reconnect interrupts a transaction, the client says so (a
// ROLLBACK) and Run tells the Publisher to abort what it holds since its last commit; the
// client then delivers those messages again.
//
// On start, and after a broker error, Run asks the Publisher for the position it last
// committed and streams from there, so a sink that was killed repeats only what it had not
// committed. A Publisher makes that repetition harmless: Kafka's writes the records and the
// position in one transaction (package sink/kafka), NATS JetStream's names every message
// after its position so that the stream's duplicate window drops a repeat (package
// sink/nats).
//
// A table copy (a start position with no GTID: "copy") is delivered the same way, chunk by
// chunk: each chunk ends at a resume point that carries every table's last primary key, so
// a sink killed in the middle of the snapshot resumes it after the last chunk it committed,
// and the binlog changes after the snapshot follow, in order per key. What a copy sends
// after a resume point is read again, at a later snapshot, when the stream resumes there:
// its records are marked Volatile, and a Publisher that cannot take back what it published
// keeps them from the broker until their commit is certain (sink/nats writes them ahead).
package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
)

// Record is one message for the broker.
type Record struct {
	// Topic is the destination after the topic mapping; never empty.
	Topic string
	// Key may be empty; records with the same key keep their order.
	Key []byte
	// PartitionKey, when set, picks the record's partition instead of Key (a partition rule
	// by table: every record of the table in one partition, in order); Key stays the
	// record's key.
	PartitionKey []byte
	// Value is nil for a tombstone.
	Value   []byte
	Headers map[string]string
	// ID names the record uniquely and the same way every time the stream delivers it:
	// the sink's name, the resume point the record follows and its index after that point.
	ID string
	// Volatile marks a record that follows its resume point during a table copy: resumed
	// from that point, the stream reads the tables again and may send other records under
	// the same IDs (rows changed or gone since). A Publisher whose broker cannot take back
	// what it was given (NATS) must not let such a record be seen before the Commit that
	// ends it is certain to complete.
	Volatile bool
}

// Publisher writes records into a broker. Run calls it from one goroutine.
type Publisher interface {
	// Resume (re)opens the broker session, dropping any left by an earlier one, and returns
	// the position of the last Commit, nil when there was none.
	Resume(ctx context.Context) (*binlogdata.VGtid, error)
	// Publish hands over a record. It may return before the broker has it, and may block
	// while too much is in flight.
	Publish(ctx context.Context, r *Record) error
	// Commit returns once every record published since the last Commit is in the broker
	// together with pos, the position to resume from after them.
	Commit(ctx context.Context, pos *binlogdata.VGtid) error
	// Abort drops, as far as the broker can, what was published since the last Commit:
	// those records will be published again.
	Abort(ctx context.Context) error
	// Close ends the session without committing.
	Close() error
}

// Schemas takes over the avro format's schema messages (package sink/registry: a schema
// registry). Run gives it each schema message instead of publishing it, and publishes the
// keys and values of avro records as Reframe returns them.
type Schemas interface {
	// Register takes the schema the stream frames with streamID, for the keys (value false)
	// or values of topic (the destination's). An error marked Permanent stops the sink.
	Register(ctx context.Context, topic string, value bool, streamID int32, schema []byte) error
	// Reframe returns a framed key or value with the id the stream gave its schema replaced.
	Reframe(b []byte) ([]byte, error)
}

// permanent marks an error that retrying cannot cure.
type permanent struct{ err error }

func (e *permanent) Error() string { return e.err.Error() }
func (e *permanent) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot cure (a record larger than the broker
// takes, a refused authorization): Run returns it instead of retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

// IsPermanent reports whether err was marked by Permanent.
func IsPermanent(err error) bool {
	_, ok := errors.AsType[*permanent](err)
	return ok
}

// Config is what Run needs.
type Config struct {
	// Name identifies the sink: it keys the saved position and prefixes record IDs, so two
	// sinks must not share one.
	Name      string
	Client    *client.Client
	Publisher Publisher
	// Request says what to stream. Its Format must be an encoded one (not vevent); its
	// Position is where to start when the Publisher has no saved position (nil: current).
	// Its WhenPurged (client.PurgedWhenNeeded) starts over with a table copy when the saved
	// position is gone from the server; its Snapshots take snapshot requests for the
	// running stream (see client.Request).
	Request client.Request
	// Topics maps each message's topic to the destination's.
	Topics TopicMap
	// Oversize says what a record larger than the broker takes does, when the Publisher can
	// tell (a Limiter): stop the sink (the default), or send a marker or a claim-check
	// reference in its place.
	Oversize Oversize
	// Schemas, when set, registers avro's schemas and reframes its records; nil publishes
	// the schema messages as records, in the stream's framing.
	Schemas Schemas
	// CheckpointInterval bounds how long a resume point with no records after the last
	// commit waits before it is committed alone; zero means 5s.
	CheckpointInterval time.Duration
	// Backoff makes the delay policy between attempts after a broker error; nil means
	// exponential from about 100ms up to about 10s (defaultBackoff).
	Backoff func() backoff.BackOff
	Logger  *slog.Logger
	Metrics *Metrics
	// Stop, when closed, ends Run at the next resume point after committing it (a graceful
	// stop), or at the next heartbeat when nothing is open; ctx ending stops it at once.
	Stop <-chan struct{}
	// DrainTimeout bounds how long a stop waits for a resume point before it drops what is
	// open (it comes again on the next start); zero means 10s.
	DrainTimeout time.Duration
}

// handlerError marks an error of the sink's own callbacks, to tell it from the stream's.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

func fromHandler(err error) error {
	if err == nil {
		return nil
	}
	return &handlerError{err}
}

// errStopped ends a stream at a resume point once Stop is closed.
var errStopped = errors.New("sink stopped")

// Run delivers the stream until ctx ends, Stop is closed, or a permanent error. It returns
// nil after a stop through Stop, ctx.Err() when ctx ends, and otherwise the error.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Request.Format == "" || cfg.Request.Format == "vevent" {
		return errors.New("sink: the request needs an encoded format (e.g. debezium-json), not native VEvents")
	}
	if err := cfg.Oversize.Validate(); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = 5 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	newBackoff := cfg.Backoff
	if newBackoff == nil {
		newBackoff = defaultBackoff
	}
	bo := newBackoff()
	for attempt := 1; ; attempt++ {
		r := &runner{cfg: cfg, log: cfg.Logger}
		delivered, err := r.attempt(ctx)
		if errors.Is(err, errStopped) || (ctx.Err() == nil && r.stopping()) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if IsPermanent(err) {
			return err
		}
		if delivered {
			bo.Reset()
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return fmt.Errorf("sink: giving up after %d attempts: %w", attempt, err)
		}
		cfg.Metrics.retry()
		cfg.Logger.Warn("sink attempt failed; resuming from the last committed position", "err", err, "delay", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		case <-cfg.Stop:
			return nil
		}
	}
}

// defaultBackoff waits from about 100ms after the first failure, growing by half each time
// up to about 10s (each delay drawn within half of it either side), and never gives up.
func defaultBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 10*time.Second
	return b
}

// runner is one attempt: a broker session and one client stream.
type runner struct {
	cfg Config
	log *slog.Logger

	// open counts records published since the last commit.
	open int
	// committed is the last position committed; pending a later resume point with no
	// records before it, not yet committed.
	committed, pending *binlogdata.VGtid
	lastCommit         time.Time
	// base and index make record IDs: base names the last resume point seen (or the
	// start), index counts the messages after it.
	base, resumeBase string
	// lastMsgPos is the last position a message carried, to compare the next one's with
	// without making its text.
	lastMsgPos *binlogdata.VGtid
	index      int
	delivered  bool
	// copying is set while the records follow a position inside a table copy (InCopy).
	copying bool
}

func (r *runner) attempt(ctx context.Context) (delivered bool, err error) {
	pub := r.cfg.Publisher
	saved, err := pub.Resume(ctx)
	if err != nil {
		if cerr := pub.Close(); cerr != nil {
			r.log.Debug("sink close", "err", cerr)
		}
		return false, fmt.Errorf("resume: %w", err)
	}
	req := r.cfg.Request
	if saved != nil {
		req.Position = saved
		r.log.Info("sink resuming from its committed position", "position", PositionText(saved))
	} else {
		r.log.Info("sink starting: no committed position", "position", PositionText(req.Position))
	}
	r.committed = req.Position
	r.copying = InCopy(req.Position)
	r.base = r.baseOf(req.Position)
	r.resumeBase = r.base
	r.lastCommit = time.Now()
	// The stream runs on a context that a graceful stop does not cancel: the commit in
	// progress finishes and the stream ends at the resume point after it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sctx.Done():
			return
		case <-r.cfg.Stop:
		}
		t := time.NewTimer(r.cfg.DrainTimeout)
		defer t.Stop()
		select {
		case <-sctx.Done():
		case <-t.C:
			r.log.Warn("sink stop: no transaction boundary within the drain timeout; what is open is dropped and comes again on the next start", "drain_timeout", r.cfg.DrainTimeout)
			cancel()
		}
	}()
	req.OnResnapshot = func(ctx context.Context, cause error) error {
		// The client starts over with a copy: its records follow no saved position, and
		// are read again after a restart before their first commit.
		r.log.Warn("sink position purged from the server: starting over with a table copy (when_needed)", "err", cause)
		r.copying, r.base, r.index, r.lastMsgPos = true, "copy@"+uuid.NewString(), 0, nil
		r.resumeBase = r.base
		return nil
	}
	req.OnMessages = func(ctx context.Context, msgs []*vstreamv1.EncodedMessage) error {
		return fromHandler(r.onMessages(ctx, msgs))
	}
	req.OnPosition = func(ctx context.Context, pos *binlogdata.VGtid) error {
		return fromHandler(r.onPosition(ctx, pos))
	}
	err = r.cfg.Client.Stream(sctx, req, func(ctx context.Context, events []*binlogdata.VEvent) error {
		return fromHandler(r.onEvents(ctx, events))
	})
	if herr, ok := errors.AsType[*handlerError](err); ok {
		err = herr.err
	} else if err != nil && ctx.Err() == nil && !r.stopping() {
		// The client retries what a reconnect can cure; what it returns, the server refused
		// (or the client gave up): retrying from the broker's side cannot help.
		err = Permanent(fmt.Errorf("vstreamd stream: %w", err))
	}
	if !errors.Is(err, errStopped) {
		// What was published after the last commit comes again on the next attempt.
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer acancel()
		if aerr := pub.Abort(actx); aerr != nil {
			r.log.Warn("sink abort failed", "err", aerr)
		}
	}
	if cerr := pub.Close(); cerr != nil {
		r.log.Debug("sink close", "err", cerr)
	}
	if err == nil {
		err = errors.New("stream ended")
	}
	return r.delivered || errors.Is(err, errStopped), err
}

// baseOf names a start position in record IDs. "current" is no place in the binlog, and a
// copy's start is a snapshot taken when the stream starts: each start from them gets a name
// of its own, so that no earlier run's IDs are taken for repeats.
func (r *runner) baseOf(pos *binlogdata.VGtid) string {
	if isCurrent(pos) {
		return "current@" + uuid.NewString()
	}
	if sg := pos.GetShardGtids(); len(sg) > 0 && sg[0].GetGtid() == "" {
		return "copy@" + uuid.NewString()
	}
	return PositionText(pos)
}

// isCurrent reports whether pos is "current" (or none, which means the same).
func isCurrent(pos *binlogdata.VGtid) bool {
	sg := pos.GetShardGtids()
	return len(sg) == 0 || strings.EqualFold(sg[0].GetGtid(), "current")
}

func (r *runner) onMessages(ctx context.Context, msgs []*vstreamv1.EncodedMessage) error {
	for _, m := range msgs {
		// A message carries the last transaction boundary before it; a new one starts a new
		// run of IDs. Messages before the server's first boundary carry none, and count
		// from where the stream started.
		if pt := m.GetPosition(); len(pt.GetShardGtids()) > 0 && !samePosition(pt, r.lastMsgPos) {
			r.lastMsgPos = pt
			r.copying = InCopy(pt)
			if txt := PositionText(pt); txt != r.base {
				r.base, r.index = txt, 0
			}
		}
		topic, err := r.cfg.Topics.Route(m.GetTopic(), m.GetDatabase(), m.GetTable())
		if err != nil {
			return Permanent(err)
		}
		h := m.GetHeaders()
		if r.cfg.Schemas != nil && h[avro.HeaderMessage] == avro.MessageSchema {
			if err = r.registerSchema(ctx, topic, m); err != nil {
				return err
			}
			continue
		}
		rec := &Record{Topic: topic, Key: m.GetKey(), Headers: h, Volatile: r.copying,
			PartitionKey: r.cfg.Topics.PartitionKey(m.GetDatabase(), m.GetTable())}
		if h[avro.HeaderMessage] == avro.MessageSchema {
			// A schema announcement comes again on every new stream, so it is no change of
			// the source and takes no index: it is named by what it announces.
			rec.ID = r.cfg.Name + "/schema/" + h[avro.HeaderSubject] + "/" + h[avro.HeaderSchemaID]
		} else {
			rec.ID = r.cfg.Name + "/" + r.base + "/" + strconv.Itoa(r.index)
			r.index++
		}
		if !m.GetTombstone() {
			rec.Value = m.GetValue()
			if rec.Value == nil {
				rec.Value = []byte{}
			}
		}
		if r.cfg.Schemas != nil && m.GetFormat() == avro.Name {
			if rec.Key, err = r.cfg.Schemas.Reframe(rec.Key); err != nil {
				return Permanent(fmt.Errorf("key of a record for %s: %w", topic, err))
			}
			if rec.Value, err = r.cfg.Schemas.Reframe(rec.Value); err != nil {
				return Permanent(fmt.Errorf("value of a record for %s: %w", topic, err))
			}
		}
		// After the reframe: fit may put a marker or a claim-check reference in place
		// of the value, which is no Avro datum.
		if rec, err = r.fit(ctx, rec); err != nil {
			return err
		}
		if err := r.cfg.Publisher.Publish(ctx, rec); err != nil {
			return fmt.Errorf("publish to %s: %w", topic, err)
		}
		r.open++
		r.cfg.Metrics.published(rec)
	}
	return nil
}

// registerSchema gives a schema message to the registry instead of the broker.
func (r *runner) registerSchema(ctx context.Context, topic string, m *vstreamv1.EncodedMessage) error {
	h := m.GetHeaders()
	id, err := strconv.ParseInt(h[avro.HeaderSchemaID], 10, 32)
	if err != nil {
		return Permanent(fmt.Errorf("schema message for %s: schema id %q: %w", topic, h[avro.HeaderSchemaID], err))
	}
	value := strings.HasSuffix(h[avro.HeaderSubject], "-value")
	if err := r.cfg.Schemas.Register(ctx, topic, value, int32(id), m.GetValue()); err != nil {
		return fmt.Errorf("schema for %s: %w", topic, err)
	}
	return nil
}

func (r *runner) onPosition(ctx context.Context, pos *binlogdata.VGtid) error {
	txt := PositionText(pos)
	if txt != r.base {
		r.base, r.index = txt, 0
	}
	r.resumeBase, r.lastMsgPos = r.base, nil
	r.copying = InCopy(pos)
	if r.open == 0 && !isCurrent(r.committed) {
		// Nothing to write: the position waits for the next records, or the interval. (A
		// start from "current" saves its first real position at once, so that a restart
		// comes back to it rather than to a later "current".)
		r.pending = pos
		if time.Since(r.lastCommit) < r.cfg.CheckpointInterval {
			return r.stopAtBoundary()
		}
	}
	if err := r.commit(ctx, pos); err != nil {
		return err
	}
	return r.stopAtBoundary()
}

func (r *runner) stopping() bool {
	select {
	case <-r.cfg.Stop:
		return true
	default:
		return false
	}
}

func (r *runner) stopAtBoundary() error {
	select {
	case <-r.cfg.Stop:
		if r.pending != nil {
			// Commit the position alone so a restart does not read the empty stretch again.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.commit(ctx, r.pending); err != nil {
				return err
			}
		}
		return errStopped
	default:
		return nil
	}
}

func (r *runner) commit(ctx context.Context, pos *binlogdata.VGtid) error {
	start := time.Now()
	if err := r.cfg.Publisher.Commit(ctx, pos); err != nil {
		return fmt.Errorf("commit at %s: %w", PositionText(pos), err)
	}
	r.cfg.Metrics.committed(time.Since(start))
	r.committed, r.pending, r.open, r.lastCommit = pos, nil, 0, time.Now()
	r.delivered = true
	return nil
}

func (r *runner) onEvents(ctx context.Context, events []*binlogdata.VEvent) error {
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_ROLLBACK:
			// The client reconnected inside a transaction: it delivers the messages since
			// the last resume point again, so what was published of them is dropped and
			// their IDs start over.
			if err := r.cfg.Publisher.Abort(ctx); err != nil {
				return fmt.Errorf("abort: %w", err)
			}
			r.open, r.index, r.base, r.lastMsgPos = 0, 0, r.resumeBase, nil
			resume := r.committed
			if r.pending != nil {
				resume = r.pending
			}
			r.copying = InCopy(resume)
		case binlogdata.VEventType_HEARTBEAT:
			// A heartbeat comes when the stream is idle: the time to save a position that
			// had no records, or to stop.
			if r.open > 0 {
				continue
			}
			if r.stopping() {
				return r.stopAtBoundary()
			}
			if r.pending != nil && time.Since(r.lastCommit) >= r.cfg.CheckpointInterval {
				if err := r.commit(ctx, r.pending); err != nil {
					return err
				}
			}
		default:
		}
	}
	return nil
}

// samePosition reports whether a and b name the same positions (as PositionText would),
// without allocating.
func samePosition(a, b *binlogdata.VGtid) bool {
	as, bs := a.GetShardGtids(), b.GetShardGtids()
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i].GetGtid() != bs[i].GetGtid() || as[i].GetKeyspace() != bs[i].GetKeyspace() || as[i].GetShard() != bs[i].GetShard() {
			return false
		}
		if ta, tb := as[i].GetTablePKs(), bs[i].GetTablePKs(); (len(ta) > 0 || len(tb) > 0) && !slices.EqualFunc(ta, tb, func(x, y *binlogdata.TableLastPK) bool {
			return proto.Equal(x, y)
		}) {
			return false
		}
	}
	return true
}
