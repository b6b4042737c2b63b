package interop

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vterrors"
	"vitess.io/vitess/go/vt/vttablet/grpctabletconn"
	"vitess.io/vitess/go/vt/vttablet/queryservice"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// The filter language, event_types, config_overrides and tables created after the stream
// started, as Vitess's own clients see them: the vtgate client, and the tablet client vtgate
// itself uses to stream from a tablet (grpctabletconn).

// tabletConn dials vstreamd as Vitess dials a tablet.
func tabletConn(t *testing.T) queryservice.QueryService {
	t.Helper()
	return tabletConnAt(t, addr)
}

// tabletConnAt connects to the vstreamd listening at listen.
func tabletConnAt(t *testing.T, listen string) queryservice.QueryService {
	t.Helper()
	qs, err := grpctabletconn.DialTablet(context.Background(), &topodatapb.Tablet{Hostname: listen}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qs.Close(context.Background()) })
	return qs
}

var tabletTarget = &querypb.Target{Keyspace: "ks", Shard: "0", TabletType: topodatapb.TabletType_PRIMARY}

// serverPosition is the server's current GTID position in Vitess's notation
// ("MariaDB/0-1-5", "MySQL56/<uuid>:1-5").
func serverPosition(t *testing.T) string {
	t.Helper()
	pos, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// tabletBatches streams from the tablet API on a goroutine and hands out each batch (one
// VStreamResponse) as the short forms of its events, heartbeats left out.
func tabletBatches(t *testing.T, req *binlogdatapb.VStreamRequest) (next func() string, errc <-chan error) {
	t.Helper()
	qs := tabletConn(t)
	ctx, cancel := context.WithCancel(context.Background())
	batches := make(chan string, 100)
	ec := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ec <- qs.VStream(ctx, req, func(evs []*binlogdatapb.VEvent) error {
			var parts []string
			for _, ev := range evs {
				if ev.Type != binlogdatapb.VEventType_HEARTBEAT {
					parts = append(parts, short(ev))
				}
			}
			if len(parts) > 0 {
				batches <- strings.Join(parts, " ")
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return func() string {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case err := <-ec:
			t.Fatalf("stream ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("timed out waiting for a batch")
		}
		return ""
	}, ec
}

func expectTabletBatches(t *testing.T, next func() string, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := next(); got != w {
			t.Fatalf("batch %d\n got %s\nwant %s", i+1, got, w)
		}
	}
}

// TestFilterParenthesesAndRollup: rowstreamer_test.go's TestStreamRowsFilterInt (a
// parenthesised WHERE) through the copy and the binlog, and its rollup (the literal 1).
func TestFilterParenthesesAndRollup(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE flt_paren (id1 INT PRIMARY KEY, id2 INT, val VARBINARY(128))",
		"INSERT INTO flt_paren VALUES (1, 100, 'aaa'), (2, 200, 'bbb'), (3, 100, 'ccc')")
	conn := vtgate(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: ""}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{
			{Match: "flt_paren", Filter: "select id1, val from flt_paren where (id2 = 100)"},
		}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	var rows []string
	done := false
	for !done {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_FIELD:
				for _, f := range ev.FieldEvent.Fields {
					fields = append(fields, f.Name)
				}
			case binlogdatapb.VEventType_ROW:
				for _, rc := range ev.RowEvent.RowChanges {
					rows = append(rows, strings.Join(rowValues(rc.After), ","))
				}
			case binlogdatapb.VEventType_COPY_COMPLETED:
				done = ev.Keyspace == ""
			}
		}
	}
	if strings.Join(fields, " ") != "id1 val" || strings.Join(rows, " ") != "1,aaa 3,ccc" {
		t.Fatalf("copy: fields %v rows %v", fields, rows)
	}
	testkit.MustExec(t, db, "INSERT INTO flt_paren VALUES (4, 100, 'ddd'), (5, 200, 'eee')")
	rows = nil
	for len(rows) == 0 {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == binlogdatapb.VEventType_ROW {
				for _, rc := range ev.RowEvent.RowChanges {
					rows = append(rows, strings.Join(rowValues(rc.After), ","))
				}
			}
		}
	}
	if strings.Join(rows, " ") != "4,ddd" {
		t.Fatalf("binlog rows %v", rows)
	}

	// The rollup: select 1 streams the constant, a FIELD named "1" of type INT64.
	var rollFields []*querypb.Field
	var rollRows []string
	qs := tabletConn(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	err = qs.VStream(ctx2, &binlogdatapb.VStreamRequest{Target: tabletTarget,
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_paren", Filter: "select 1, id1, val from flt_paren where id1 < 3"}}}},
		func(evs []*binlogdatapb.VEvent) error {
			for _, ev := range evs {
				switch ev.Type {
				case binlogdatapb.VEventType_FIELD:
					rollFields = ev.FieldEvent.Fields
				case binlogdatapb.VEventType_ROW:
					for _, rc := range ev.RowEvent.RowChanges {
						rollRows = append(rollRows, strings.Join(rowValues(rc.After), ","))
					}
				case binlogdatapb.VEventType_COPY_COMPLETED:
					return io.EOF
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(rollFields) != 3 || rollFields[0].Name != "1" || rollFields[0].Type != querypb.Type_INT64 ||
		rollFields[0].Flags != uint32(querypb.MySqlFlag_NOT_NULL_FLAG|querypb.MySqlFlag_NUM_FLAG) || rollFields[1].Name != "id1" {
		t.Errorf("rollup fields %v", rollFields)
	}
	if strings.Join(rollRows, " ") != "1,1,aaa 1,2,bbb" {
		t.Errorf("rollup rows %v", rollRows)
	}
}

// TestFilterErrorsInVitessWords: what the planner refuses reaches the Vitess client as
// INVALID_ARGUMENT with Vitess's words.
func TestFilterErrorsInVitessWords(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE flt_err (id INT PRIMARY KEY, val VARCHAR(10))")
	conn := vtgate(t)
	cases := []struct{ filter, msg string }{
		{"select id from flt_err where id = 1 or id = 2", "unsupported constraint: id = 1 or id = 2"},
		{"bad query", "syntax error at position 4 near 'bad'"},
		{"select *, id from flt_err", "unsupported: *, id"},
		{"select id, val from flt_err where max(id)", "unsupported constraint: max(id)"},
		{"select id+1, val from flt_err", "unsupported: id + 1"},
		{"select nope from flt_err", "column nope not found in table flt_err"},
		{"select id from flt_err where val like 'a%'", "comparison operator like not supported"},
		{"select * from flt_other", "unsupported: select expression table flt_other does not match the table entry name flt_err"},
		{"select id, val from flt_err where in_keyrange(id, 'hash', '-80-')", "unexpected in_keyrange parameter: '-80-'"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
			&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "current"}}},
			&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_err", Filter: c.filter}}}, &vtgatepb.VStreamFlags{})
		if err == nil {
			_, err = r.Recv()
		}
		cancel()
		if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want INVALID_ARGUMENT with %q", c.filter, err, c.msg)
		}
	}
}

// TestMissingTableStreamsOnceCreated: Vitess's TestMissingTables. A named rule for a table
// that does not exist yet streams it once created; a copy refuses it with Vitess's words.
func TestMissingTableStreamsOnceCreated(t *testing.T) {
	next, _ := tabletBatches(t, &binlogdatapb.VStreamRequest{Target: tabletTarget, Position: serverPosition(t),
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_later", Filter: "select * from flt_later"}}}})
	testkit.MustExec(t, db, "CREATE TABLE flt_later (id INT PRIMARY KEY, v INT)", "INSERT INTO flt_later VALUES (101, 1010)")
	// The two transactions may share a batch.
	want := "GTID DDL BEGIN FIELD flt_later ROW flt_later 1 GTID COMMIT"
	got := next()
	for len(got) < len(want) {
		got += " " + next()
	}
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}

	qs := tabletConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := qs.VStream(ctx, &binlogdatapb.VStreamRequest{Target: tabletTarget,
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_never"}}}},
		func([]*binlogdatapb.VEvent) error { return nil })
	if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), "table flt_never is not present in the database") {
		t.Errorf("copy of a missing table: %v", err)
	}
}

// TestTabletEventTypes: Vitess's TestVStreamFilteredTerminalEventsFlushBufferedState with
// the options its schema tracker sends (GTID and DDL only).
func TestTabletEventTypes(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE flt_types (id INT PRIMARY KEY, val VARBINARY(128))")
	qs := tabletConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		batches [][]string
	)
	pos := serverPosition(t)
	errc := make(chan error, 1)
	go func() {
		errc <- qs.VStream(ctx, &binlogdatapb.VStreamRequest{Target: tabletTarget, Position: pos,
			Filter:  &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_types", Filter: "select * from flt_types"}}},
			Options: &binlogdatapb.VStreamOptions{EventTypes: []binlogdatapb.VEventType{binlogdatapb.VEventType_GTID, binlogdatapb.VEventType_DDL}},
		}, func(evs []*binlogdatapb.VEvent) error {
			var b []string
			for _, ev := range evs {
				if ev.Type != binlogdatapb.VEventType_HEARTBEAT {
					b = append(b, ev.Type.String())
				}
			}
			if len(b) == 0 {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, b)
			if len(batches) == 2 {
				return io.EOF
			}
			return nil
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(batches)
	}
	testkit.MustExec(t, db, "INSERT INTO flt_types VALUES (1, 'aaa')")
	for deadline := time.Now().Add(10 * time.Second); count() < 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	testkit.MustExec(t, db, "INSERT INTO flt_types VALUES (2, 'bbb')")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join([]string{strings.Join(batches[0], " "), strings.Join(batches[1], " ")}, " / "); got != "GTID / GTID" {
		t.Errorf("batches = %s, want GTID / GTID", got)
	}
}

// TestTabletPacketSize: config_overrides as Vitess's tests set them (TestStreamRowsCancel):
// vstream-packet-size 10 bounds the copy's batches (TestStreamRowsMultiPacket) and the
// binlog's (TestBuffering); keys Vitess does not know fail the request in its words.
func TestTabletPacketSize(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE flt_packet (id INT PRIMARY KEY, val VARBINARY(128))",
		"INSERT INTO flt_packet VALUES (1, '234'), (2, '6789'), (3, '1'), (4, '2345678901'), (5, '2')")
	opts := &binlogdatapb.VStreamOptions{ConfigOverrides: map[string]string{
		"vstream-dynamic-packet-size": "false", "vstream_dynamic_packet_size": "false",
		"vstream-packet-size": "10", "vstream_packet_size": "10",
	}}
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "flt_packet"}}}
	next, _ := tabletBatches(t, &binlogdatapb.VStreamRequest{Target: tabletTarget, Filter: filter, Options: opts})
	// The copy as uvstreamer sends it: BEGIN and FIELD, the snapshot's GTID, then one ROW a
	// row in packets each closed by LASTPK and COMMIT once their values reach 10 bytes (rows
	// 1-3 are 4+5+2 bytes), the table's completion, COPY_COMPLETED.
	expectTabletBatches(t, next,
		"BEGIN FIELD flt_packet",
		"GTID",
		"ROW flt_packet 1 ROW flt_packet 1 ROW flt_packet 1 LASTPK COMMIT",
		"BEGIN ROW flt_packet 1 LASTPK COMMIT",
		"BEGIN ROW flt_packet 1 LASTPK COMMIT",
		"BEGIN LASTPK COMMIT",
		"COPY_COMPLETED ks/0",
	)
	testkit.MustExec(t, db, "BEGIN", "INSERT INTO flt_packet VALUES (13, '123456')", "INSERT INTO flt_packet VALUES (14, '789012')",
		"DELETE FROM flt_packet WHERE id = 13", "COMMIT")
	// The binlog describes the table again after the copy, as a new binlog reader does.
	expectTabletBatches(t, next, "BEGIN FIELD flt_packet ROW flt_packet 1", "ROW flt_packet 1", "ROW flt_packet 1 GTID COMMIT")

	qs := tabletConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := qs.VStream(ctx, &binlogdatapb.VStreamRequest{Target: tabletTarget, Position: "current", Filter: filter,
		Options: &binlogdatapb.VStreamOptions{ConfigOverrides: map[string]string{"vstream-packet-size": "big", "no-such-flag": "1"}}},
		func([]*binlogdatapb.VEvent) error { return nil })
	want := "failed to parse VReplicationConfig: unknown vreplication config flag: no-such-flag, invalid value for vstream-packet-size: big"
	if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
		t.Errorf("bad overrides: %v, want INVALID_ARGUMENT with %q", err, want)
	}
	if errors.Is(err, io.EOF) {
		t.Error("the stream ended cleanly")
	}
}
