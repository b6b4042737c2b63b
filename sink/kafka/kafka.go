// Package kafka is the sink's Kafka Publisher: one record per message, written by a
// transactional producer together with the position they end at, exactly once.
//
// As Kafka Connect's exactly-once source connectors do, the sink keeps its position in an
// offsets topic of its own (one partition, compacted, keyed by the sink's name). Each Commit
// writes the records published since the last one and a record holding the position into
// one Kafka transaction, so a reader with isolation.level=read_committed sees both or
// neither. Resume starts a new producer under the same transactional ID, which fences a
// predecessor that was killed and aborts its open transaction, and reads the last committed
// position back.
//
// Records keep their order per key: the default partitioner sends one key to one partition
// (or, with Options.PartitionKeys, one partition key: a table's records all to one), and the
// idempotent producer keeps a partition's records in order across retries. Memory is
// bounded by the producer's buffer (MaxBufferedBytes): Publish blocks while it is full.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/secure"
	"github.com/vstream-cdc/vstream/sink"
)

// DefaultMaxRecordBytes is Kafka's default message.max.bytes, the largest record a broker
// takes unless configured otherwise.
const DefaultMaxRecordBytes = 1048588

// Options configure a Publisher.
type Options struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Name is the sink's name: its transactional ID and its key in the offsets topic.
	Name string
	// OffsetsTopic holds the committed positions; created (one partition, compacted) when
	// missing.
	OffsetsTopic string
	// OffsetsReplication is the offsets topic's replication factor when it is created; zero
	// means the broker's default.
	OffsetsReplication int16
	// MaxRecordBytes is the largest record (key, value and headers) to send; a larger one
	// stops the sink with an error naming it. Zero means DefaultMaxRecordBytes.
	MaxRecordBytes int
	// MaxBufferedBytes bounds the records held in memory before the broker acknowledges
	// them; zero means 64 MiB.
	MaxBufferedBytes int
	// PartitionKeys partitions a record by its sink.Record.PartitionKey when it has one (a
	// partition rule by table) instead of its key; the records with none go by their key
	// either way.
	PartitionKeys bool
	// Extra are more client options (TLS, SASL, ...).
	Extra []kgo.Opt
	// Auth says how Extra authenticates, for errors: e.g. "SASL SCRAM-SHA-256 as user
	// sinker". It must hold no secret.
	Auth string
}

// Publisher writes to Kafka; see the package comment.
type Publisher struct {
	opts Options
	cl   *kgo.Client
	// inTxn: a transaction was begun and not ended.
	inTxn bool

	mu sync.Mutex
	// failed is the first produce error of the open transaction.
	failed error
}

// New checks opts; no connection is made until Resume.
func New(opts Options) (*Publisher, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	if opts.Name == "" || opts.OffsetsTopic == "" {
		return nil, errors.New("kafka: a sink name and an offsets topic are required")
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.MaxBufferedBytes <= 0 {
		opts.MaxBufferedBytes = 64 << 20
	}
	if opts.MaxBufferedBytes < opts.MaxRecordBytes {
		// The producer refuses a record larger than its whole buffer: a record the broker
		// would take would stop the sink.
		return nil, fmt.Errorf("kafka: max buffered bytes %d is less than max record bytes %d: the buffer must hold the largest record",
			opts.MaxBufferedBytes, opts.MaxRecordBytes)
	}
	return &Publisher{opts: opts}, nil
}

// Resume starts a producer (fencing any earlier one of the same name) and reads the last
// committed position.
func (p *Publisher) Resume(ctx context.Context) (*binlogdata.VGtid, error) {
	pos, err := p.resume(ctx)
	if err != nil {
		return nil, p.refused(err)
	}
	return pos, nil
}

// refused marks the refusals of the brokers' SASL or TLS as permanent, naming Kafka and how
// the sink authenticates: the brokers would refuse a new connection the same way, so a retry
// would only hide the error. (franz-go reports a broker's SASL_AUTHENTICATION_FAILED as
// kerr.SaslAuthenticationFailed, with the broker's message, which holds no secret.)
func (p *Publisher) refused(err error) error {
	brokers := strings.Join(p.opts.Brokers, ",")
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState):
		auth := p.opts.Auth
		if auth == "" {
			auth = "SASL"
		}
		return sink.Permanent(fmt.Errorf("kafka %s refused the credentials (%s): %w", brokers, auth, err))
	case secure.Refused(err):
		return sink.Permanent(fmt.Errorf("kafka %s: TLS handshake refused: %w", brokers, err))
	}
	return err
}

func (p *Publisher) resume(ctx context.Context) (*binlogdata.VGtid, error) {
	p.closeClient()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(p.opts.Brokers...),
		kgo.TransactionalID(p.opts.Name),
		// A topic that does not exist yet is made if the broker allows it
		// (auto.create.topics.enable); otherwise producing to it fails and is retried.
		kgo.AllowAutoTopicCreation(),
		kgo.TransactionTimeout(time.Minute),
		kgo.MaxBufferedBytes(p.opts.MaxBufferedBytes),
		// The broker's message.max.bytes bounds a whole batch, so no batch may be larger.
		kgo.ProducerBatchMaxBytes(int32(min(p.opts.MaxRecordBytes, 1<<30))),
		kgo.RecordRetries(20),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(time.Duration(tries)*100*time.Millisecond, 2*time.Second)
		}),
	}, p.opts.Extra...)
	if p.opts.PartitionKeys {
		opts = append(opts, kgo.RecordPartitioner(newKeyPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	p.cl, p.inTxn, p.failed = cl, false, nil
	// Initializing the producer ID fences a predecessor and aborts its open transaction, so
	// that the offsets topic has nothing undecided when it is read.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return nil, classify(fmt.Errorf("kafka producer id: %w", err))
	}
	if err := p.ensureOffsetsTopic(ctx); err != nil {
		return nil, err
	}
	return p.readPosition(ctx)
}

func (p *Publisher) ensureOffsetsTopic(ctx context.Context) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = p.opts.OffsetsTopic
	t.NumPartitions = 1
	t.ReplicationFactor = -1
	if p.opts.OffsetsReplication > 0 {
		t.ReplicationFactor = p.opts.OffsetsReplication
	}
	policy := "compact"
	t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "cleanup.policy", Value: &policy})
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return fmt.Errorf("create offsets topic %s: %w", p.opts.OffsetsTopic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return classify(fmt.Errorf("create offsets topic %s: %w", p.opts.OffsetsTopic, err))
		}
	}
	return nil
}

// readPosition reads the offsets topic up to its last stable offset, with control records,
// so that it knows when it has seen the end, and returns the last position under its name.
func (p *Publisher) readPosition(ctx context.Context) (*binlogdata.VGtid, error) {
	end, err := p.lastStableOffset(ctx)
	if err != nil {
		return nil, err
	}
	if end == 0 {
		return nil, nil
	}
	cons, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(p.opts.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.opts.OffsetsTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, p.opts.Extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	defer cons.Close()
	var last []byte
	for {
		fetches := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, classify(fmt.Errorf("read offsets topic %s: %w", p.opts.OffsetsTopic, ferr))
		}
		done := false
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() && string(r.Key) == p.opts.Name {
				last = r.Value
			}
			if r.Offset >= end-1 {
				done = true
			}
		})
		if done {
			break
		}
	}
	if last == nil {
		return nil, nil
	}
	return sink.UnmarshalPosition(last)
}

func (p *Publisher) lastStableOffset(ctx context.Context) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1 // read_committed: the last stable offset
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = p.opts.OffsetsTopic
	pt := kmsg.NewListOffsetsRequestTopicPartition()
	pt.Partition = 0
	pt.Timestamp = -1 // the end
	t.Partitions = append(t.Partitions, pt)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return 0, fmt.Errorf("offsets topic end: %w", err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, fmt.Errorf("offsets topic %s: no partition 0 in the answer", p.opts.OffsetsTopic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, classify(fmt.Errorf("offsets topic %s end: %w", p.opts.OffsetsTopic, err))
	}
	return rp.Offset, nil
}

// Publish buffers the record in the open transaction, beginning one if needed.
func (p *Publisher) Publish(ctx context.Context, r *sink.Record) error {
	if err := p.failure(); err != nil {
		return err
	}
	if size := recordSize(r); size > p.opts.MaxRecordBytes {
		return sink.Permanent(fmt.Errorf("record %s for topic %s is %d bytes, more than the %d a broker takes (max-record-bytes)",
			r.ID, r.Topic, size, p.opts.MaxRecordBytes))
	}
	if err := p.begin(); err != nil {
		return err
	}
	rec := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}
	if r.PartitionKey != nil {
		if !p.opts.PartitionKeys {
			return sink.Permanent(fmt.Errorf("record %s for topic %s has a partition key, and the publisher was made without PartitionKeys", r.ID, r.Topic))
		}
		rec.Context = withPartitionKey(ctx, r.PartitionKey)
	}
	if len(r.Headers) > 0 {
		rec.Headers = make([]kgo.RecordHeader, 0, len(r.Headers))
		for k, v := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
	}
	p.cl.Produce(ctx, rec, p.promise)
	return nil
}

// Fit says how large the record is as Publish counts it and the largest Publish takes
// (sink.Limiter).
func (p *Publisher) Fit(r *sink.Record) (size, limit int, what string) {
	return recordSize(r), p.opts.MaxRecordBytes, "max-record-bytes"
}

// recordSize is the record's key, value and headers.
func recordSize(r *sink.Record) int {
	size := len(r.Key) + len(r.Value)
	for k, v := range r.Headers {
		size += len(k) + len(v)
	}
	return size
}

func (p *Publisher) begin() error {
	if p.inTxn {
		return nil
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return classify(fmt.Errorf("begin transaction: %w", err))
	}
	p.inTxn = true
	return nil
}

func (p *Publisher) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = classify(fmt.Errorf("produce to %s (%d bytes): %w", r.Topic, len(r.Key)+len(r.Value), err))
	}
}

func (p *Publisher) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// Commit writes pos into the offsets topic in the open transaction and commits it.
func (p *Publisher) Commit(ctx context.Context, pos *binlogdata.VGtid) error {
	val, err := sink.MarshalPosition(pos)
	if err != nil {
		return err
	}
	if err := p.begin(); err != nil {
		return err
	}
	p.cl.Produce(ctx, &kgo.Record{Topic: p.opts.OffsetsTopic, Key: []byte(p.opts.Name), Value: val}, p.promise)
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := p.failure(); err != nil {
		return err
	}
	p.inTxn = false
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return classify(fmt.Errorf("commit transaction: %w", err))
	}
	return nil
}

// Abort drops the open transaction's records.
func (p *Publisher) Abort(ctx context.Context) error {
	if p.cl == nil || !p.inTxn {
		return nil
	}
	p.inTxn = false
	p.mu.Lock()
	p.failed = nil
	p.mu.Unlock()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("abort buffered records: %w", err)
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("abort transaction: %w", err)
	}
	return nil
}

// Close closes the producer; an open transaction is aborted by the broker (or fenced by the
// next Resume).
func (p *Publisher) Close() error {
	p.closeClient()
	return nil
}

func (p *Publisher) closeClient() {
	if p.cl != nil {
		p.cl.Close()
		p.cl = nil
	}
}

// classify marks the errors no retry can cure.
func classify(err error) error {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.InvalidTopicException):
		return sink.Permanent(err)
	}
	return err
}
