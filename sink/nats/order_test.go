package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/sink"
)

// faultyJS is a JetStream whose asynchronous publishes can be lost (the message never
// reaches the server and its acknowledgement never comes) or have their acknowledgements
// held back, to test what the Publisher does while messages are in flight.
type faultyJS struct {
	jetstream.JetStream
	mu sync.Mutex
	// lose names the message IDs whose next asynchronous publish is lost.
	lose map[string]bool
	// hold, while open, holds back every acknowledgement.
	hold chan struct{}
	// async counts asynchronous publishes.
	async int
}

var errLost = errors.New("no acknowledgement: the message was lost")

func (f *faultyJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f.mu.Lock()
	f.async++
	id := msg.Header.Get(jetstream.MsgIDHeader)
	lost := f.lose[id]
	delete(f.lose, id)
	hold := f.hold
	f.mu.Unlock()
	if lost {
		l := &lostFuture{msg: msg, err: make(chan error, 1)}
		time.AfterFunc(300*time.Millisecond, func() { l.err <- errLost })
		return l, nil
	}
	fut, err := f.JetStream.PublishMsgAsync(msg, opts...)
	if err != nil || hold == nil {
		return fut, err
	}
	h := &heldFuture{PubAckFuture: fut, ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	go func() {
		select {
		case ack := <-fut.Ok():
			<-hold
			h.ok <- ack
		case err := <-fut.Err():
			<-hold
			h.err <- err
		}
	}()
	return h, nil
}

func (f *faultyJS) asyncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.async
}

// lostFuture fails after a while, as an acknowledgement that timed out.
type lostFuture struct {
	msg *nats.Msg
	err chan error
}

func (l *lostFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (l *lostFuture) Err() <-chan error            { return l.err }
func (l *lostFuture) Msg() *nats.Msg               { return l.msg }

// heldFuture passes the server's answer on once the hold is released.
type heldFuture struct {
	jetstream.PubAckFuture
	ok  chan *jetstream.PubAck
	err chan error
}

func (h *heldFuture) Ok() <-chan *jetstream.PubAck { return h.ok }
func (h *heldFuture) Err() <-chan error            { return h.err }

// newFaulty returns a Publisher on a fresh nats-server whose JetStream is a faultyJS.
func newFaulty(t *testing.T, maxInFlight int) (*Publisher, *faultyJS, string) {
	t.Helper()
	srv := sinktest.StartNATS(t)
	p, err := New(Options{URL: srv.URL(), Name: "faulty", Stream: "FAULTY", SubjectPrefix: "cdc.", Bucket: "checkpoints", MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if _, err := p.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &faultyJS{JetStream: p.js, lose: map[string]bool{}}
	p.js = f
	return p, f, srv.URL()
}

var testPos = &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "MariaDB/0-1-1"}}}

// ids reads the stream's Nats-Msg-Ids in the order it stored them.
func ids(t *testing.T, url string, want int) []string {
	t.Helper()
	var out []string
	for _, g := range sinktest.ReadNATS(t, url, "FAULTY", want+1, 500*time.Millisecond) {
		out = append(out, g.Headers[jetstream.MsgIDHeader])
	}
	return out
}

// A message whose publish is lost is published again, and the next message of its key
// waits for it, so the stream stores that key's changes in order; a message of another
// key does not wait.
func TestNATSOrderPerKey(t *testing.T) {
	p, f, url := newFaulty(t, 0)
	f.lose["a1"] = true
	ctx := context.Background()
	for _, r := range []struct{ id, key string }{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"b2", "b"}} {
		if err := p.Publish(ctx, &sink.Record{Topic: "cdc.t", Key: []byte(r.key), Value: []byte(r.id), ID: r.id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Commit(ctx, testPos); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ids(t, url, 4))
	// a1 is stored after b1 (which did not wait for it) and before a2 (which did).
	if want := "[b1 a1 a2 b2]"; got != want {
		t.Fatalf("the stream stored %s, want %s", got, want)
	}
}

// No more than MaxInFlight messages wait for their acknowledgements: Publish waits for
// room, and once the acknowledgements come every message is stored once.
func TestNATSMaxInFlight(t *testing.T) {
	const maxInFlight, n = 3, 8
	p, f, url := newFaulty(t, maxInFlight)
	f.hold = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := range n {
			id := fmt.Sprintf("m%d", i)
			if err := p.Publish(ctx, &sink.Record{Topic: "cdc.t", Key: []byte(id), Value: []byte(id), ID: id}); err != nil {
				done <- err
				return
			}
		}
		done <- p.Commit(ctx, testPos)
	}()
	testkit.WaitFor(t, 10*time.Second, "the first messages", func() bool { return f.asyncCount() >= maxInFlight })
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("every message was published with no acknowledgement back (%v): nothing bounds the messages in flight", err)
	default:
	}
	if got := f.asyncCount(); got != maxInFlight {
		t.Fatalf("%d messages published with no acknowledgement back, want %d (MaxInFlight)", got, maxInFlight)
	}
	close(f.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(ids(t, url, n)), "[m0 m1 m2 m3 m4 m5 m6 m7]"; got != want {
		t.Fatalf("the stream stored %s, want %s", got, want)
	}
}

// The checkpoint is written only once every message before it is acknowledged.
func TestNATSCheckpointAfterAcks(t *testing.T) {
	p, f, _ := newFaulty(t, 0)
	ctx := context.Background()
	hold := make(chan struct{})
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
	if err := p.Publish(ctx, &sink.Record{Topic: "cdc.t", Key: []byte("k"), Value: []byte("v"), ID: "m"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Commit(ctx, testPos) }()
	time.Sleep(300 * time.Millisecond)
	if _, err := p.kv.Get(ctx, p.kvKey()); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("checkpoint before the acknowledgement: %v, want none", err)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e, err := p.kv.Get(ctx, p.kvKey())
	if err != nil {
		t.Fatalf("checkpoint after the acknowledgement: %v", err)
	}
	if saved, err := sink.UnmarshalPosition(e.Value()); err != nil || sink.PositionText(saved) != sink.PositionText(testPos) {
		t.Fatalf("checkpoint %q: %v", e.Value(), err)
	}
}

// A stream whose max_msg_size was lowered after the sink read it refuses a larger record:
// the sink stops with an error naming it instead of publishing it again and again.
func TestNATSStreamLimitLowered(t *testing.T) {
	p, _, url := newFaulty(t, 0)
	ctx := context.Background()
	js := sinktest.JetStream(t, url)
	if _, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: "FAULTY", Subjects: []string{"cdc.>"}, Duplicates: 2 * time.Minute, MaxMsgSize: 1024}); err != nil {
		t.Fatal(err)
	}
	err := p.Publish(ctx, &sink.Record{Topic: "cdc.t", Key: []byte("k"), Value: make([]byte, 4096), ID: "big"})
	if err == nil {
		err = p.Commit(ctx, testPos)
	}
	if !sink.IsPermanent(err) || !strings.Contains(err.Error(), "record big for subject cdc.t is 4096 bytes, more than the stream FAULTY's max_msg_size") {
		t.Fatalf("got %v, want the record-too-large error", err)
	}
}

// A record's headers travel as message headers; a key that is not printable text travels
// in base64, and a tombstone is an empty message marked as one.
func TestNATSHeaders(t *testing.T) {
	p, _, url := newFaulty(t, 0)
	ctx := context.Background()
	for _, r := range []*sink.Record{
		{Topic: "cdc.t", Key: []byte{0xff, 0x00, 'k'}, Value: []byte("v"), ID: "binary", Headers: map[string]string{"sdc.operation.type": "1"}},
		{Topic: "cdc.t", Key: []byte(`{"id":1}`), ID: "tombstone"},
	} {
		if err := p.Publish(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Commit(ctx, testPos); err != nil {
		t.Fatal(err)
	}
	// A stream the sink makes takes its subject prefix, with a 2 minute duplicate window.
	st, err := p.js.Stream(ctx, "FAULTY")
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; fmt.Sprint(c.Subjects) != "[cdc.>]" || c.Duplicates != 2*time.Minute {
		t.Errorf("stream subjects %v, duplicate window %v; want [cdc.>] and 2m", c.Subjects, c.Duplicates)
	}
	got := sinktest.ReadNATS(t, url, "FAULTY", 3, 500*time.Millisecond)
	if len(got) != 2 {
		t.Fatalf("%d messages, want 2", len(got))
	}
	b, tomb := got[0], got[1]
	if b.Headers["sdc.operation.type"] != "1" || b.Key != "/wBr" || b.Headers[HeaderKeyEncoding] != "base64" || b.Tombstone || string(b.Value) != "v" {
		t.Errorf("binary key: headers %v, value %q", b.Headers, b.Value)
	}
	if tomb.Key != `{"id":1}` || tomb.Headers[HeaderKeyEncoding] != "" || !tomb.Tombstone || len(tomb.Value) != 0 {
		t.Errorf("tombstone: headers %v, value %q", tomb.Headers, tomb.Value)
	}
}
