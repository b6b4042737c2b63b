package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

func TestCanalJSONStream(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cj (id INT PRIMARY KEY, name VARCHAR(10), amount DECIMAL(6,2))")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:         &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter:        &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "cj"}}},
		Flags:         &vstreamv1.Flags{HeartbeatInterval: durationpb.New(300 * time.Millisecond)},
		Format:        "canal-json",
		FormatOptions: map[string]string{"profile": "dts"},
	}}})
	// Starting at "current" ends a transaction boundary: a position and no message.
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if first.Position == nil || len(first.Messages) != 0 || len(first.Events) != 0 {
		t.Fatalf("first response: %v", first)
	}
	testkit.MustExec(t, db, "INSERT INTO cj VALUES (1, 'a', 2.50)", "ALTER TABLE cj ADD COLUMN note TEXT")
	var msgs []*vstreamv1.EncodedMessage
	heartbeats := 0
	var last *binlogdata.VGtid
	for len(msgs) < 2 || heartbeats == 0 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, resp.Messages...)
		for _, ev := range resp.Events {
			if ev.Type == binlogdata.VEventType_HEARTBEAT {
				heartbeats++
			}
		}
		if resp.Position != nil {
			last = resp.Position
		}
	}
	var insert, alter map[string]any
	json.Unmarshal(msgs[0].Value, &insert)
	json.Unmarshal(msgs[1].Value, &alter)
	data := insert["data"].([]any)[0].(map[string]any)
	if insert["database"] != "test" || insert["table"] != "cj" || insert["type"] != "INSERT" || data["amount"] != "2.50" || data["name"] != "a" {
		t.Errorf("insert message: %s", msgs[0].Value)
	}
	if alter["type"] != "ALTER" || alter["isDdl"] != true || alter["table"] != "cj" {
		t.Errorf("DDL message: %s", msgs[1].Value)
	}
	// The insert can be received again from its position; the DDL's position is after it.
	if msgs[0].Position.ShardGtids[0].Gtid != first.Position.ShardGtids[0].Gtid {
		t.Errorf("insert position %v, want the boundary before it %v", msgs[0].Position, first.Position)
	}
	if last == nil || last.ShardGtids[0].Gtid == first.Position.ShardGtids[0].Gtid {
		t.Errorf("no resume position after the DDL: %v", last)
	}
}

func TestFormatErrors(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{}))
	start := func(format string, opts map[string]string) *vstreamv1.StreamRequest {
		return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}}, Format: format, FormatOptions: opts}}}
	}
	cases := []struct {
		req *vstreamv1.StreamRequest
		msg string
	}{
		{start("avro2", nil), "valid formats are vevent, avro, canal-json"},
		{start("canal-json", map[string]string{"profile": "x"}), "want one of canal, dts"},
		{start("canal-json", map[string]string{"colour": "red"}), "unknown format option colour: valid options are"},
		{start("vevent", map[string]string{"a": "b"}), "takes no format_options"},
	}
	for _, c := range cases {
		s := firstError(t, cc, context.Background(), c.req)
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("got %v %q, want InvalidArgument with %q", s.Code(), s.Message(), c.msg)
		}
	}
}

// TestClientEncodedMessages streams canal-json through the Go client: messages reach
// OnMessages and the resume point follows the server's batch positions.
func TestClientEncodedMessages(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cjc (id INT PRIMARY KEY)")
	c, err := client.Dial(serve(t, dbConfig(), Options{}), client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- c.Stream(ctx, client.Request{Filter: client.ParseTables("cjc"), Format: "canal-json",
			OnMessages: func(_ context.Context, msgs []*vstreamv1.EncodedMessage) error {
				for _, m := range msgs {
					got <- string(m.Value)
				}
				return nil
			}}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	}()
	testkit.WaitFor(t, 20*time.Second, "a resume point", func() bool { return c.LastPosition() != nil })
	before := c.LastPosition().ShardGtids[0].Gtid
	testkit.MustExec(t, db, "INSERT INTO cjc VALUES (7)")
	select {
	case v := <-got:
		if !strings.Contains(v, `"data":[{"id":"7"}]`) {
			t.Fatalf("message %s", v)
		}
	case err := <-done:
		t.Fatalf("stream ended: %v", err)
	case <-ctx.Done():
		t.Fatal("no message")
	}
	testkit.WaitFor(t, 20*time.Second, "the resume point to move", func() bool { return c.LastPosition().ShardGtids[0].Gtid != before })
	cancel()
	<-done
}

// TestRenderZoneFollowsSource prints TIMESTAMP text in the source server's time zone unless
// render_zone says otherwise, so it equals what SELECT prints there.
func TestRenderZoneFollowsSource(t *testing.T) {
	testkit.MustExec(t, db, "SET GLOBAL time_zone = '+03:00'", "CREATE TABLE rz (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL)")
	defer testkit.MustExec(t, db, "SET GLOBAL time_zone = 'SYSTEM'")
	// The server describes the database once, when its first encoded stream starts.
	cc := dial(t, serve(t, dbConfig(), Options{}))
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{nil, "2024-01-02 06:04:05.678"},
		{map[string]string{"render_zone": "UTC"}, "2024-01-02 03:04:05.678"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:         &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
			Filter:        &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "rz"}}},
			Format:        "canal-json",
			FormatOptions: c.opts,
		}}})
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		testkit.MustExec(t, db, "SET time_zone = '+00:00'", "DELETE FROM rz", "INSERT INTO rz VALUES (1, '2024-01-02 03:04:05.678')")
		var msg *vstreamv1.EncodedMessage
		for msg == nil {
			resp, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range resp.Messages {
				if strings.Contains(string(m.Value), `"INSERT"`) {
					msg = m
				}
			}
		}
		if !strings.Contains(string(msg.Value), `"ts":"`+c.want+`"`) {
			t.Errorf("options %v: %s, want ts %s", c.opts, msg.Value, c.want)
		}
		cancel()
	}
}
