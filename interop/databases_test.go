package interop

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"vitess.io/vitess/go/vt/vterrors"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestSecondDatabase: a vstreamd started with --databases serves a second database of its
// server as the keyspace of its name to Vitess's own vtgate client, beside the DSN's, both
// in one stream of a VGtid naming the two, and refuses a keyspace it does not list.
func TestSecondDatabase(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS it_second", "CREATE DATABASE it_second",
		"CREATE TABLE ks.it_dbs (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE it_second.it_dbs (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO ks.it_dbs VALUES (1, 'a')", "INSERT INTO it_second.it_dbs VALUES (2, 'b')")
	t.Cleanup(func() { _ = db.Exec("DROP DATABASE IF EXISTS it_second") })
	logName := filepath.Join(workDir, "second-database.log")
	listen, stop, err := launchVstreamd(logName, "--databases", "it_second")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("vstreamd log tail:\n%s", logTail(logName))
		}
	})
	conn, err := vtgateconn.DialProtocol(context.Background(), "grpc", listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_dbs"}}}
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "it_second", Shard: "0", Gtid: ""}}}, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var last *binlogdatapb.VGtid
	got := read(t, r, 11, &last)
	if want := "BEGIN FIELD it_second.it_dbs VGTID ROW it_second.it_dbs 1 VGTID COMMIT BEGIN VGTID COMMIT COPY_COMPLETED it_second/0 COPY_COMPLETED /"; strings.Join(got, " ") != want {
		t.Fatalf("copy:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	testkit.MustExec(t, db, "INSERT INTO it_second.it_dbs VALUES (3, 'c')", "INSERT INTO ks.it_dbs VALUES (3, 'c')")
	// The other database's transaction follows, empty, possibly in the same response.
	if got := read(t, r, 5, &last); strings.Join(got[:5], " ") != "BEGIN FIELD it_second.it_dbs ROW it_second.it_dbs 1 VGTID COMMIT" {
		t.Fatalf("binlog: %v", got)
	}
	if sg := last.GetShardGtids(); len(sg) != 1 || sg[0].Keyspace != "it_second" {
		t.Errorf("resume position %v, want keyspace it_second", last)
	}

	// One stream of both keyspaces: each row named by its own keyspace, in binlog order, and
	// every VGTID naming both; a stream resumed from the last VGTID sends only what followed.
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	both := &binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "current"}, {Keyspace: "it_second", Shard: "0", Gtid: "current"}}}
	r3, err := conn.VStream(ctx3, topodatapb.TabletType_PRIMARY, both, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	// readRows reads until n rows came, and then to the VGTID after them; n 0 reads to the
	// first VGTID, the start of a stream from "current".
	readRows := func(r vtgateconn.VStreamReader, n int, last **binlogdatapb.VGtid) []string {
		t.Helper()
		var rows []string
		for len(rows) < n || *last == nil {
			evs, err := r.Recv()
			if err != nil {
				t.Fatalf("after %v: %v", rows, err)
			}
			for _, ev := range evs {
				switch ev.Type {
				case binlogdatapb.VEventType_VGTID:
					sg := ev.Vgtid.GetShardGtids()
					if len(sg) != 2 || sg[0].Keyspace != "ks" || sg[1].Keyspace != "it_second" || sg[0].Gtid != sg[1].Gtid {
						t.Fatalf("VGTID %v, want keyspaces ks and it_second at one position", ev.Vgtid)
					}
					if len(rows) >= n {
						*last = ev.Vgtid
					}
				case binlogdatapb.VEventType_ROW:
					rows = append(rows, ev.Keyspace+" "+ev.RowEvent.TableName+" "+strings.Join(rowValues(ev.RowEvent.RowChanges[0].After), ","))
				}
			}
		}
		return rows
	}
	var lastBoth *binlogdatapb.VGtid
	readRows(r3, 0, &lastBoth)
	testkit.MustExec(t, db, "INSERT INTO it_second.it_dbs VALUES (4, 'd')", "INSERT INTO ks.it_dbs VALUES (4, 'd')")
	lastBoth = nil
	if got, want := strings.Join(readRows(r3, 2, &lastBoth), "|"), "it_second it_second.it_dbs 4,d|ks ks.it_dbs 4,d"; got != want {
		t.Fatalf("stream of two keyspaces: got %s, want %s", got, want)
	}
	cancel3()
	testkit.MustExec(t, db, "INSERT INTO ks.it_dbs VALUES (5, 'e')", "INSERT INTO it_second.it_dbs VALUES (5, 'e')")
	ctx4, cancel4 := context.WithCancel(context.Background())
	defer cancel4()
	r4, err := conn.VStream(ctx4, topodatapb.TabletType_PRIMARY, lastBoth, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	lastBoth = nil
	if got, want := strings.Join(readRows(r4, 2, &lastBoth), "|"), "ks ks.it_dbs 5,e|it_second it_second.it_dbs 5,e"; got != want {
		t.Fatalf("resumed stream of two keyspaces: got %s, want %s", got, want)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	r2, err := conn.VStream(ctx2, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "it_third", Gtid: "current"}}}, filter, &vtgatepb.VStreamFlags{})
	if err == nil {
		_, err = r2.Recv()
	}
	if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), `keyspace "it_third" is not served here`) {
		t.Errorf("unlisted keyspace: got %v, want InvalidArgument", err)
	}
}
