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
)

// TestSecondDatabase: a vstreamd started with --databases serves a second database of its
// server as the keyspace of its name to Vitess's own vtgate client, beside the DSN's, and
// refuses a keyspace it does not list.
func TestSecondDatabase(t *testing.T) {
	execSQL(t, "DROP DATABASE IF EXISTS it_second", "CREATE DATABASE it_second",
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
	execSQL(t, "INSERT INTO it_second.it_dbs VALUES (3, 'c')", "INSERT INTO ks.it_dbs VALUES (3, 'c')")
	// The other database's transaction follows, empty, possibly in the same response.
	if got := read(t, r, 5, &last); strings.Join(got[:5], " ") != "BEGIN FIELD it_second.it_dbs ROW it_second.it_dbs 1 VGTID COMMIT" {
		t.Fatalf("binlog: %v", got)
	}
	if sg := last.GetShardGtids(); len(sg) != 1 || sg[0].Keyspace != "it_second" {
		t.Errorf("resume position %v, want keyspace it_second", last)
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
