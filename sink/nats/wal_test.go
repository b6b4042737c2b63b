package nats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/sink"
)

func walPos(gtid string) *binlogdata.VGtid {
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: gtid,
		TablePKs: []*binlogdata.TableLastPK{{TableName: "t"}}}}}
}

func must(m *nats.Msg, _ int) *nats.Msg { return m }

func TestWALRoundTrip(t *testing.T) {
	var msgs []*sink.Record
	for i, v := range [][]byte{[]byte(`{"a":1}`), nil, {}, []byte("\x00\xff")} {
		msgs = append(msgs, &sink.Record{Topic: "cdc.t", Key: []byte{byte(i), 0xff}, Value: v, ID: fmt.Sprint("id-", i),
			Headers: map[string]string{"h": "v"}})
	}
	w := walEntry{pos: walPos("MariaDB/0-1-7"), rev: 42}
	for _, r := range msgs {
		m, _ := newMsg(r)
		w.msgs = append(w.msgs, m)
	}
	data, err := encodeWAL(w)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeWAL(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.rev != 42 || sink.PositionText(got.pos) != sink.PositionText(w.pos) || len(got.msgs) != len(w.msgs) {
		t.Fatalf("decoded rev %d pos %s, %d messages", got.rev, sink.PositionText(got.pos), len(got.msgs))
	}
	for i, m := range got.msgs {
		want := w.msgs[i]
		if m.Subject != want.Subject || string(m.Data) != string(want.Data) || fmt.Sprint(m.Header) != fmt.Sprint(want.Header) {
			t.Errorf("message %d: got %s %v %q, want %s %v %q", i, m.Subject, m.Header, m.Data, want.Subject, want.Header, want.Data)
		}
	}
	for cut := range len(data) - 1 {
		if _, err := decodeWAL(data[:cut]); err == nil {
			t.Fatalf("a log cut at %d of %d bytes decoded", cut, len(data))
		}
	}
}

// A sink that died after writing the log and publishing part of it: the next Resume
// publishes the rest, each record once, saves the log's position and deletes the log. A
// log its commit completed (the delete failed) is dropped without publishing.
func TestWALReplay(t *testing.T) {
	srv := sinktest.StartNATS(t)
	ctx := context.Background()
	opts := Options{URL: srv.URL(), Name: "wal", Stream: "WAL", SubjectPrefix: "cdc.", Bucket: "checkpoints"}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if pos, err := p.Resume(ctx); err != nil || pos != nil {
		t.Fatalf("first resume: %v %v", pos, err)
	}
	rec := func(i int) *sink.Record {
		return &sink.Record{Topic: "cdc.t", Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "row %d", i), ID: fmt.Sprintf("wal/%d", i), Volatile: true}
	}
	// A commit that completes: its records are published, the log is gone.
	if err := p.Publish(ctx, rec(0)); err != nil {
		t.Fatal(err)
	}
	if got := sinktest.ReadNATS(t, srv.URL(), "WAL", 10, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("a held record was published before its commit: %v", got)
	}
	if err := p.Commit(ctx, walPos("MariaDB/0-1-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.wal.GetBytes(ctx, p.kvKey()); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("the log of a completed commit: %v", err)
	}
	// A commit that dies after two of four records.
	for i := 1; i <= 4; i++ {
		if err := p.Publish(ctx, rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := encodeWAL(walEntry{pos: walPos("MariaDB/0-1-2"), rev: p.rev, msgs: p.held})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.wal.PutBytes(ctx, p.kvKey(), data); err != nil {
		t.Fatal(err)
	}
	for _, m := range p.held[:2] {
		if err := p.send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.settleAll(ctx); err != nil {
		t.Fatal(err)
	}
	_ = p.Close()

	p2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p2.Close() }()
	pos, err := p2.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.PositionText(pos); got != sink.PositionText(walPos("MariaDB/0-1-2")) {
		t.Fatalf("resumed from %s, want the log's position", got)
	}
	got := sinktest.ReadNATS(t, srv.URL(), "WAL", 100, 300*time.Millisecond)
	var values []string
	for _, g := range got {
		values = append(values, string(g.Value))
	}
	if fmt.Sprint(values) != "[row 0 row 1 row 2 row 3 row 4]" {
		t.Fatalf("stream holds %q, want rows 0 to 4 once each", values)
	}
	if _, err := p2.wal.GetBytes(ctx, p2.kvKey()); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("the replayed log: %v", err)
	}

	// A spent log: written for the checkpoint before the current one.
	spent, err := encodeWAL(walEntry{pos: walPos("MariaDB/0-1-1"), rev: p2.rev - 1, msgs: []*nats.Msg{must(newMsg(rec(9)))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.wal.PutBytes(ctx, p2.kvKey(), spent); err != nil {
		t.Fatal(err)
	}
	pos, err = p2.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.PositionText(pos); got != sink.PositionText(walPos("MariaDB/0-1-2")) {
		t.Fatalf("resumed from %s past a spent log, want the checkpoint", got)
	}
	if got := sinktest.ReadNATS(t, srv.URL(), "WAL", 100, 300*time.Millisecond); len(got) != 5 {
		t.Fatalf("a spent log was published again: %d messages", len(got))
	}
	if _, err := p2.wal.GetBytes(ctx, p2.kvKey()); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("the spent log: %v", err)
	}
}
