// Package nats is the sink's NATS JetStream Publisher: one message per record, named so that
// the stream's duplicate window drops a repeat, with the position checkpointed in a KV
// bucket once the stream has acknowledged every message before it.
//
// The subject is the record's topic, which starts with the sink's topic prefix (characters a
// subject cannot hold become "_"); the record's headers travel as message headers, its key as Vstream-Key (base64 with
// Vstream-Key-Encoding: base64 when it is not printable text) and a tombstone as an empty
// message with Vstream-Tombstone: true. Nats-Msg-Id is the record's ID: the sink's name,
// the resume point the record follows and its index after it, the same every time the
// stream delivers the record, so a sink that resumes from its checkpoint publishes what the
// stream already holds under the same IDs and JetStream drops them, as long as they are
// within the stream's duplicate window.
//
// Order per key: a record is not published while an earlier record with the same subject
// and key waits for its acknowledgement, so a failed publish retried later cannot pass a
// later change of the same key. Memory is bounded by MaxInFlight.
//
// A table copy's records (sink.Record.Volatile) are not the same when the stream resumes:
// the rows are read again, later. JetStream cannot take back a message, so those records
// are held until the Commit that ends them, which first writes them, with the position,
// to an object store (the write-ahead log, one object per sink), then publishes them,
// saves the checkpoint and deletes the object. A sink that dies in between finds the
// object on Resume and publishes it again (the duplicate window drops what had arrived)
// before it resumes from the object's position: whatever a copy's chunk held is published
// exactly as it was first read, or not at all. The object names the checkpoint revision
// it follows, so one left behind by a failed delete is recognised and dropped.
package nats

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/secure"
	"github.com/vstream-cdc/vstream/sink"
)

// Header names the sink sets besides the record's own.
const (
	HeaderKey         = "Vstream-Key"
	HeaderKeyEncoding = "Vstream-Key-Encoding"
	HeaderTombstone   = "Vstream-Tombstone"
)

// Options configure a Publisher.
type Options struct {
	// URL is the NATS server URL (nats://host:port, comma-separated for several).
	URL string
	// Name is the sink's name: its key in the KV bucket.
	Name string
	// Stream is the JetStream stream the subjects belong to; created when missing, with
	// SubjectPrefix+">" as its subjects and Duplicates as its duplicate window.
	Stream string
	// SubjectPrefix is the prefix of every record's topic (sink.TopicMap puts it there),
	// e.g. "cdc.": the stream the sink creates takes SubjectPrefix+">".
	SubjectPrefix string
	// Duplicates is the duplicate window of a stream the sink creates; zero means 2 minutes.
	// A restarted sink repeats what it published since its last checkpoint: only repeats
	// within the window are dropped.
	Duplicates time.Duration
	// Bucket is the KV bucket of checkpoints; created when missing.
	Bucket string
	// MaxInFlight bounds the messages published and not yet acknowledged; zero means 1024.
	MaxInFlight int
	// RetryTimeout bounds how long one message is retried before the sink resumes from its
	// checkpoint; zero means one minute.
	RetryTimeout time.Duration
	// WALBucket is the object store of the write-ahead log of a copy's records; created
	// when missing; empty means Bucket + "-wal".
	WALBucket string
	// MaxHeldBytes bounds the copy records held between two commits (a copy chunk and the
	// changes streamed beside it); zero means 256 MiB. A larger chunk stops the sink with an
	// error that says to copy in smaller chunks.
	MaxHeldBytes int
	// Extra are more connection options (credentials, TLS, ...).
	Extra []nats.Option
}

type inflight struct {
	msg *nats.Msg
	fut jetstream.PubAckFuture
	key string
}

// Publisher writes to JetStream; see the package comment.
type Publisher struct {
	opts Options
	nc   *nats.Conn
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	// maxMsgSize is the stream's max_msg_size; zero or less when it sets none.
	maxMsgSize int64
	// queue holds the messages not yet acknowledged, in publish order; keys counts them by
	// subject and key.
	queue []inflight
	keys  map[string]int
	// wal is the write-ahead log's store; held the Volatile records' messages since the
	// last Commit and heldBytes their size; rev is the revision of the checkpoint last
	// read or written (0: none).
	wal       jetstream.ObjectStore
	held      []*nats.Msg
	heldBytes int
	rev       uint64
}

// New checks opts; no connection is made until Resume.
func New(opts Options) (*Publisher, error) {
	if opts.URL == "" || opts.Name == "" || opts.Stream == "" || opts.Bucket == "" {
		return nil, errors.New("nats: url, sink name, stream and bucket are required")
	}
	if opts.Duplicates <= 0 {
		opts.Duplicates = 2 * time.Minute
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 1024
	}
	if opts.RetryTimeout <= 0 {
		opts.RetryTimeout = time.Minute
	}
	if opts.WALBucket == "" {
		opts.WALBucket = opts.Bucket + "-wal"
	}
	if opts.MaxHeldBytes <= 0 {
		opts.MaxHeldBytes = 256 << 20
	}
	return &Publisher{opts: opts, keys: map[string]int{}}, nil
}

// Resume connects (once; the connection reconnects by itself), makes the stream and the
// bucket when missing and reads the checkpoint.
func (p *Publisher) Resume(ctx context.Context) (*binlogdata.VGtid, error) {
	pos, err := p.resume(ctx)
	if err == nil || p.nc == nil {
		return pos, err
	}
	// A connection the server refused is closed by the client, and what it is asked next
	// fails with "connection closed": the refusal itself is the connection's last error.
	// Credentials the server refuses are refused again: the error names them (never their
	// secret: the server's error holds none) and ends the sink.
	last := p.nc.LastError()
	if secure.Refused(last) {
		// A TLS verdict (a certificate that does not verify, a client certificate the
		// server refused): the client would reconnect to meet it again, forever.
		p.nc.Close()
		p.nc, p.js = nil, nil
		return nil, sink.Permanent(fmt.Errorf("nats %s: TLS handshake refused: %w", p.opts.URL, last))
	}
	if last == nil || !p.nc.IsClosed() {
		return nil, err
	}
	p.nc.Close()
	p.nc, p.js = nil, nil
	if errors.Is(last, nats.ErrAuthorization) || errors.Is(last, nats.ErrAuthExpired) || errors.Is(last, nats.ErrAuthRevoked) ||
		errors.Is(last, nats.ErrAccountAuthExpired) || errors.Is(last, nats.ErrPermissionViolation) {
		return nil, sink.Permanent(fmt.Errorf("nats %s refused the credentials: %w", p.opts.URL, last))
	}
	return nil, fmt.Errorf("nats %s: %w (connection closed: %w)", p.opts.URL, last, err)
}

func (p *Publisher) resume(ctx context.Context) (*binlogdata.VGtid, error) {
	p.drop()
	if p.nc == nil {
		nc, err := nats.Connect(p.opts.URL, append([]nats.Option{
			nats.Name("vstream-sink " + p.opts.Name),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(200 * time.Millisecond),
			nats.RetryOnFailedConnect(true),
		}, p.opts.Extra...)...)
		if err != nil {
			return nil, fmt.Errorf("nats connect %s: %w", p.opts.URL, err)
		}
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(p.opts.MaxInFlight+1),
			jetstream.WithPublishAsyncTimeout(10*time.Second))
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		p.nc, p.js = nc, js
	}
	st, err := p.js.Stream(ctx, p.opts.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = p.js.CreateStream(ctx, jetstream.StreamConfig{Name: p.opts.Stream,
			Subjects: []string{p.opts.SubjectPrefix + ">"}, Duplicates: p.opts.Duplicates})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = p.js.Stream(ctx, p.opts.Stream)
		}
		if err != nil {
			err = fmt.Errorf("create stream %s: %w", p.opts.Stream, err)
			if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok && apiErr.Code == 400 {
				// A stream the server refuses (its subjects overlap another's, say).
				return nil, sink.Permanent(err)
			}
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("stream %s: %w", p.opts.Stream, err)
	}
	// A stream made beforehand may take less than the server: a record over its limit is
	// caught before it is sent, as one over max_payload is, so that no message of another
	// key published after it is stored.
	p.maxMsgSize = int64(st.CachedInfo().Config.MaxMsgSize)
	kv, err := p.js.KeyValue(ctx, p.opts.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = p.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: p.opts.Bucket})
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint bucket %s: %w", p.opts.Bucket, err)
	}
	p.kv = kv
	wal, err := p.js.ObjectStore(ctx, p.opts.WALBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		wal, err = p.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: p.opts.WALBucket,
			Description: "vstream-sink: a table copy's records between their write and their checkpoint"})
	}
	if err != nil {
		return nil, fmt.Errorf("write-ahead bucket %s: %w", p.opts.WALBucket, err)
	}
	p.wal = wal
	var saved *binlogdata.VGtid
	p.rev = 0
	e, err := kv.Get(ctx, p.kvKey())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case errors.Is(err, jetstream.ErrInvalidKey):
		return nil, sink.Permanent(fmt.Errorf("read checkpoint %q: %w", p.kvKey(), err))
	case err != nil:
		return nil, fmt.Errorf("read checkpoint: %w", err)
	default:
		if saved, err = sink.UnmarshalPosition(e.Value()); err != nil {
			return nil, err
		}
		p.rev = e.Revision()
	}
	return p.replayWAL(ctx, saved)
}

// replayWAL finishes a Commit the sink died in: it publishes the records the write-ahead
// log holds again and saves its position. A log that does not follow the checkpoint read
// (its commit completed, the delete did not) is deleted. It returns the position to resume
// from.
func (p *Publisher) replayWAL(ctx context.Context, saved *binlogdata.VGtid) (*binlogdata.VGtid, error) {
	data, err := p.wal.GetBytes(ctx, p.kvKey())
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return saved, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log: %w", err)
	}
	w, err := decodeWAL(data)
	if err != nil {
		return nil, sink.Permanent(fmt.Errorf("write-ahead log %s/%s: %w", p.opts.WALBucket, p.kvKey(), err))
	}
	if w.rev != p.rev {
		if err := p.wal.Delete(ctx, p.kvKey()); err != nil {
			return nil, fmt.Errorf("delete a spent write-ahead log: %w", err)
		}
		return saved, nil
	}
	for _, m := range w.msgs {
		if err := p.send(ctx, m); err != nil {
			return nil, fmt.Errorf("publish the write-ahead log again: %w", err)
		}
	}
	if err := p.checkpoint(ctx, w.pos); err != nil {
		return nil, err
	}
	if err := p.wal.Delete(ctx, p.kvKey()); err != nil {
		return nil, fmt.Errorf("delete the write-ahead log: %w", err)
	}
	return w.pos, nil
}

// kvKey is the sink's key in the checkpoint bucket and the write-ahead bucket.
func (p *Publisher) kvKey() string { return CheckpointKey(p.opts.Name) }

// CheckpointKey is a sink name in the characters a KV key may hold anywhere (a dot may not
// start or end one): others become "_". Names differing only there ("a.b", "a_b") share a
// key, so sinks of one server and bucket must not be named so.
func CheckpointKey(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '=':
			return r
		}
		return '_'
	}, name)
}

// Subject is the subject of a topic (which has the sink's topic prefix already): the topic
// with each character a subject cannot hold (white space, * and >) and each empty token
// replaced by "_".
func Subject(topic string) string {
	t := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n', '*', '>':
			return '_'
		}
		return r
	}, topic)
	tokens := strings.Split(t, ".")
	for i, tok := range tokens {
		if tok == "" {
			tokens[i] = "_"
		}
	}
	return strings.Join(tokens, ".")
}

// Publish sends the record asynchronously once no earlier record of its key is in flight,
// or holds it until the next Commit when it is Volatile.
func (p *Publisher) Publish(ctx context.Context, r *sink.Record) error {
	msg, size, err := p.message(r)
	if err != nil {
		return err
	}
	if r.Volatile {
		if p.heldBytes += size; p.heldBytes > p.opts.MaxHeldBytes {
			return sink.Permanent(fmt.Errorf("a table copy's chunk holds more than %d bytes of records before its commit: copy in smaller chunks (copy-chunk-rows)", p.opts.MaxHeldBytes))
		}
		p.held = append(p.held, msg)
		return nil
	}
	return p.send(ctx, msg)
}

// message makes the record's message and checks its size against the broker's limits.
func (p *Publisher) message(r *sink.Record) (*nats.Msg, int, error) {
	msg, size := newMsg(r)
	limit, what := p.limit()
	if int64(size) > limit {
		return nil, 0, sink.Permanent(fmt.Errorf("record %s for subject %s is %d bytes, more than %s of %d",
			r.ID, msg.Subject, size, what, limit))
	}
	return msg, size, nil
}

// limit is the largest message the broker takes and its name: the server's max_payload, or
// the stream's max_msg_size when lower.
func (p *Publisher) limit() (int64, string) {
	limit, what := p.nc.MaxPayload(), "the server's max_payload"
	if p.maxMsgSize > 0 && p.maxMsgSize < limit {
		limit, what = p.maxMsgSize, "the stream "+p.opts.Stream+"'s max_msg_size"
	}
	return limit, what
}

// Fit says how large the record's message is as the server counts it (as newMsg does,
// without making it) and the largest the broker takes (sink.Limiter).
func (p *Publisher) Fit(r *sink.Record) (size, limit int, what string) {
	l, what := p.limit()
	return msgSize(r), int(l), what
}

// msgSize is the size newMsg returns, without making the message.
func msgSize(r *sink.Record) int {
	size := len(r.Value) + 12 + len(jetstream.MsgIDHeader) + len(r.ID) + 4
	for k, v := range r.Headers {
		size += len(k) + len(v) + 4
	}
	if len(r.Key) > 0 {
		if printable(r.Key) {
			size += len(HeaderKey) + len(r.Key) + 4
		} else {
			size += len(HeaderKey) + base64.StdEncoding.EncodedLen(len(r.Key)) + 4 + len(HeaderKeyEncoding) + len("base64") + 4
		}
	}
	if r.Value == nil {
		size += len(HeaderTombstone) + len("true") + 4
	}
	return size
}

// newMsg makes the record's message; size is its size as the server counts it.
func newMsg(r *sink.Record) (msg *nats.Msg, size int) {
	msg = nats.NewMsg(Subject(r.Topic))
	for k, v := range r.Headers {
		msg.Header.Set(k, v)
	}
	if len(r.Key) > 0 {
		if printable(r.Key) {
			msg.Header.Set(HeaderKey, string(r.Key))
		} else {
			msg.Header.Set(HeaderKey, base64.StdEncoding.EncodeToString(r.Key))
			msg.Header.Set(HeaderKeyEncoding, "base64")
		}
	}
	if r.Value == nil {
		msg.Header.Set(HeaderTombstone, "true")
	}
	msg.Header.Set(jetstream.MsgIDHeader, r.ID)
	msg.Data = r.Value
	// The size as the server counts it: the header block ("NATS/1.0\r\n", "Key: value\r\n"
	// each, "\r\n") and the data.
	size = len(msg.Data) + 12
	for k, vs := range msg.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	return msg, size
}

// send publishes msg asynchronously once no earlier message of its subject and key is in
// flight.
func (p *Publisher) send(ctx context.Context, msg *nats.Msg) error {
	key := msg.Subject + "\x00" + msg.Header.Get(HeaderKey)
	for len(p.queue) > 0 && (p.keys[key] > 0 || len(p.queue) >= p.opts.MaxInFlight) {
		if err := p.settleFirst(ctx); err != nil {
			return err
		}
	}
	fut, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		// The connection is down or the async window full: publish this one synchronously,
		// with retries, after the ones before it.
		if serr := p.settleAll(ctx); serr != nil {
			return serr
		}
		return p.retry(ctx, msg, err)
	}
	p.queue = append(p.queue, inflight{msg: msg, fut: fut, key: key})
	p.keys[key]++
	return nil
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// settleFirst waits for the oldest message in flight, publishing it again on failure.
func (p *Publisher) settleFirst(ctx context.Context) error {
	f := p.queue[0]
	p.queue[0] = inflight{}
	p.queue = p.queue[1:]
	if p.keys[f.key]--; p.keys[f.key] <= 0 {
		delete(p.keys, f.key)
	}
	select {
	case <-f.fut.Ok():
		return nil
	case err := <-f.fut.Err():
		return p.retry(ctx, f.msg, err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Publisher) settleAll(ctx context.Context) error {
	for len(p.queue) > 0 {
		if err := p.settleFirst(ctx); err != nil {
			return err
		}
	}
	return nil
}

// retry publishes msg synchronously with backoff until JetStream acknowledges it (a
// duplicate counts: it is there) or RetryTimeout passes.
func (p *Publisher) retry(ctx context.Context, msg *nats.Msg, cause error) error {
	if err := p.tooLarge(msg, cause); err != nil {
		return err
	}
	op := func() (*jetstream.PubAck, error) {
		ack, err := p.js.PublishMsg(ctx, msg)
		if terr := p.tooLarge(msg, err); terr != nil {
			return nil, backoff.Permanent(terr)
		}
		return ack, err
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 2*time.Second
	if _, err := backoff.Retry(ctx, op, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(p.opts.RetryTimeout)); err != nil {
		return fmt.Errorf("publish to %s (first error: %v): %w", msg.Subject, cause, err)
	}
	return nil
}

// tooLarge is the error that stops the sink when err says msg is larger than the broker
// takes (the server's max_payload, or the stream's max_msg_size when it was lowered after
// Resume read it); nil for any other error.
func (p *Publisher) tooLarge(msg *nats.Msg, err error) error {
	var limit string
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		limit = "the server's max_payload"
	case errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum):
		limit = "the stream " + p.opts.Stream + "'s max_msg_size"
	default:
		return nil
	}
	return sink.Permanent(fmt.Errorf("record %s for subject %s is %d bytes, more than %s: %w",
		msg.Header.Get(jetstream.MsgIDHeader), msg.Subject, len(msg.Data), limit, err))
}

// Commit waits for every message in flight, then writes pos to the bucket. Held records go
// through the write-ahead log first (see the package comment).
func (p *Publisher) Commit(ctx context.Context, pos *binlogdata.VGtid) error {
	logged := len(p.held) > 0
	if logged {
		data, err := encodeWAL(walEntry{pos: pos, rev: p.rev, msgs: p.held})
		if err != nil {
			return err
		}
		op := func() (*jetstream.ObjectInfo, error) { return p.wal.PutBytes(ctx, p.kvKey(), data) }
		if _, err := backoff.Retry(ctx, op, backoff.WithBackOff(p.backoff()), backoff.WithMaxElapsedTime(p.opts.RetryTimeout)); err != nil {
			return fmt.Errorf("write-ahead log: %w", err)
		}
		held := p.held
		p.held, p.heldBytes = nil, 0
		for _, m := range held {
			if err := p.send(ctx, m); err != nil {
				return err
			}
		}
	}
	if err := p.settleAll(ctx); err != nil {
		return err
	}
	if err := p.checkpoint(ctx, pos); err != nil {
		return err
	}
	if logged {
		if err := p.wal.Delete(ctx, p.kvKey()); err != nil {
			// The checkpoint is saved: the next Resume sees the log is spent.
			return fmt.Errorf("delete the write-ahead log: %w", err)
		}
	}
	return nil
}

// checkpoint writes pos to the bucket, with retries.
func (p *Publisher) checkpoint(ctx context.Context, pos *binlogdata.VGtid) error {
	val, err := sink.MarshalPosition(pos)
	if err != nil {
		return err
	}
	op := func() (uint64, error) { return p.kv.Put(ctx, p.kvKey(), val) }
	rev, err := backoff.Retry(ctx, op, backoff.WithBackOff(p.backoff()), backoff.WithMaxElapsedTime(p.opts.RetryTimeout))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	p.rev = rev
	return nil
}

func (p *Publisher) backoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 2*time.Second
	return b
}

// Abort forgets the messages in flight and those held: whether or not JetStream stored
// those in flight, they are published again under the same IDs; the held ones were not
// published.
func (p *Publisher) Abort(context.Context) error {
	p.drop()
	return nil
}

func (p *Publisher) drop() {
	clear(p.queue)
	p.queue = p.queue[:0]
	clear(p.keys)
	p.dropHeld()
}

func (p *Publisher) dropHeld() {
	clear(p.held)
	p.held, p.heldBytes = p.held[:0], 0
}

// Close closes the connection.
func (p *Publisher) Close() error {
	p.drop()
	if p.nc != nil {
		p.nc.Close()
		p.nc, p.js, p.kv, p.wal = nil, nil, nil, nil
	}
	return nil
}
