package interop

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vitess.io/vitess/go/vt/discovery"
	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	queryservicepb "vitess.io/vitess/go/vt/proto/queryservice"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// inStatementMode runs sqls in a session logging binlog_format=STATEMENT, then puts the
// shared test session back to ROW.
func inStatementMode(t *testing.T, sqls ...string) {
	t.Helper()
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_format = 'ROW'") })
	testkit.MustExec(t, db, append(append([]string{"SET SESSION binlog_format = 'STATEMENT'"}, sqls...), "SET SESSION binlog_format = 'ROW'")...)
}

// Vitess's TestStatementMode through Vitess's own vtgate client and its generated
// queryservice client: statement-based DML arrives as INSERT, UPDATE and DELETE events with
// the statement in dml.
func TestStatementModeVitessClients(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE it_stmt (id INT, val VARBINARY(128), PRIMARY KEY (id))")
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_stmt"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "current"}}}, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	read(t, r, 2, nil)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tablet, err := queryservicepb.NewQueryClient(cc).VStream(ctx, &binlogdatapb.VStreamRequest{Position: "current", Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	recvTablet := func() ([]*binlogdatapb.VEvent, error) { resp, err := tablet.Recv(); return resp.GetEvents(), err }
	// The tablet stream starts with GTID, OTHER.
	for started := false; !started; {
		evs, err := recvTablet()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			started = started || ev.Type == binlogdatapb.VEventType_OTHER
		}
	}

	stmts := []string{
		"insert into it_stmt values (1, 'aaa')",
		"update it_stmt set val='bbb' where id = 1",
		"delete from it_stmt where id = 1",
	}
	inStatementMode(t, append(append([]string{"begin"}, stmts...), "commit")...)
	wantTypes := []binlogdatapb.VEventType{binlogdatapb.VEventType_INSERT, binlogdatapb.VEventType_UPDATE, binlogdatapb.VEventType_DELETE}
	check := func(api string, evs []*binlogdatapb.VEvent, want string) {
		t.Helper()
		var got []string
		var dml []string
		for _, ev := range evs {
			got = append(got, ev.Type.String())
			if ev.Dml != "" {
				dml = append(dml, ev.Type.String()+" "+ev.Dml)
			}
		}
		var wantDML []string
		for i, s := range stmts {
			wantDML = append(wantDML, wantTypes[i].String()+" "+s)
		}
		if strings.Join(got, " ") != want || strings.Join(dml, "; ") != strings.Join(wantDML, "; ") {
			t.Errorf("%s:\n got %s (%s)\nwant %s (%s)", api, strings.Join(got, " "), strings.Join(dml, "; "), want, strings.Join(wantDML, "; "))
		}
	}
	check("vtgate", collectEvents(t, r.Recv, 6), "BEGIN INSERT UPDATE DELETE VGTID COMMIT")
	check("tablet", collectEvents(t, recvTablet, 6), "BEGIN INSERT UPDATE DELETE GTID COMMIT")
}

// collectEvents reads n events, heartbeats left out.
func collectEvents(t *testing.T, recv func() ([]*binlogdatapb.VEvent, error), n int) []*binlogdatapb.VEvent {
	t.Helper()
	var out []*binlogdatapb.VEvent
	for len(out) < n {
		evs, err := recv()
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		for _, ev := range evs {
			if ev.Type != binlogdatapb.VEventType_HEARTBEAT {
				out = append(out, ev)
			}
		}
	}
	return out
}

// Vitess's TestOther and TestMissingTables: OTHER carries no statement, be it a DDL of a table
// the filter leaves out or a GRANT.
func TestOtherWithoutStatementVitessClient(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE it_oth (id INT PRIMARY KEY)", "CREATE TABLE it_oth_short (id INT PRIMARY KEY)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "current"}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_oth", Filter: "select * from it_oth"}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	read(t, r, 2, nil)
	for _, sql := range []string{
		"ALTER TABLE it_oth_short RENAME TO _it_oth_short",
		"/*!40000 ALTER TABLE `it_oth` DISABLE KEYS */",
		"GRANT SELECT ON ks.it_oth TO CURRENT_USER()",
	} {
		testkit.MustExec(t, db, sql)
		evs := collectEvents(t, r.Recv, 2)
		if evs[0].Type != binlogdatapb.VEventType_VGTID || evs[1].Type != binlogdatapb.VEventType_OTHER || evs[1].Statement != "" {
			t.Errorf("%s: got %v, want VGTID and OTHER with no statement", sql, evs)
		}
	}
}

// Vitess's TestNoFutureGTID: a position ahead of the server is refused with the words vtgate
// reads to try another tablet (discovery.ShouldRetryTabletError), with InvalidArgument.
func TestFuturePositionIgnoresTablet(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS it_future (id INT PRIMARY KEY)", "INSERT INTO it_future VALUES (1)")
	// Vitess's recipe for both flavors: one more than the number after the last '-'.
	pos := serverPosition(t)
	i := strings.LastIndexByte(pos, '-')
	n, err := strconv.Atoi(pos[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	future := pos[:i+1] + strconv.Itoa(n+1)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: future}}}, nil, &vtgatepb.VStreamFlags{})
	if err == nil {
		_, err = r.Recv()
	}
	if err == nil || !strings.Contains(err.Error(), vterrors.GTIDSetMismatch) || !strings.Contains(err.Error(), future) {
		t.Fatalf("err = %v, want %q naming %s", err, vterrors.GTIDSetMismatch, future)
	}
	if a := discovery.ShouldRetryTabletError(err); a != discovery.TabletErrorActionIgnoreTablet {
		t.Errorf("vtgate's action for %v = %v, want TabletErrorActionIgnoreTablet", err, a)
	}
}
