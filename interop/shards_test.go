package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// Vitess's own vtgate client streams a keyspace of two shards, each on its own server,
// from vstreamd --topology as from vtgate: a copy of both shards, a COPY_COMPLETED per
// shard and one for the stream, VGTIDs naming both shards, table names keyspace.table,
// the changes of both shards after it; and a stream resumed from a VGTID it received goes
// on with only what follows.
func TestTopologyShards(t *testing.T) {
	other, err := testdb.Start(testdb.Options{Database: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	testkit.MustExec(t, db, "CREATE TABLE it_sh (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO it_sh VALUES (1, 'a1'), (2, 'a2')")
	if err = other.Exec("CREATE TABLE it_sh (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO it_sh VALUES (3, 'b3')"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	topo := filepath.Join(dir, "topology.yaml")
	if err = os.WriteFile(topo, fmt.Appendf(nil, `keyspaces:
  - name: commerce
    database: ks
    shards:
      - {name: "-80", servers: [{addr: %q}]}
      - {name: "80-", servers: [{addr: %q}]}
`, db.Addr(), other.Addr()), 0o600); err != nil {
		t.Fatal(err)
	}
	logName := filepath.Join(dir, "vstreamd.log")
	listen, stop, err := launchVstreamd(logName, "--topology", topo)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	defer func() {
		if t.Failed() {
			t.Log(logTail(logName))
		}
	}()
	conn, err := vtgateconn.DialProtocol(context.Background(), "grpc", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_sh"}}}
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "commerce", Gtid: ""}}}, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var rows, completed []string
	var last *binlogdatapb.VGtid
	for !contains(completed, "/") {
		evs, err := r.Recv()
		if err != nil {
			t.Fatalf("after rows %v, COPY_COMPLETED %v: %v", rows, completed, err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_VGTID:
				if sg := ev.Vgtid.ShardGtids; len(sg) != 2 || sg[0].Keyspace != "commerce" || sg[0].Shard != "-80" || sg[1].Shard != "80-" {
					t.Fatalf("VGTID %v does not name both shards", ev.Vgtid)
				}
				last = ev.Vgtid
			case binlogdatapb.VEventType_ROW:
				for _, rc := range ev.RowEvent.RowChanges {
					rows = append(rows, ev.RowEvent.TableName+"@"+ev.Shard+":"+strings.Join(rowValues(rc.After), "="))
				}
			case binlogdatapb.VEventType_COPY_COMPLETED:
				completed = append(completed, ev.Keyspace+"/"+ev.Shard)
			}
		}
	}
	if got := strings.Join(completed, " "); got != "commerce/-80 commerce/80- /" && got != "commerce/80- commerce/-80 /" {
		t.Fatalf("COPY_COMPLETED %s, want one per shard then the stream's", got)
	}
	for _, want := range []string{"commerce.it_sh@-80:1=a1", "commerce.it_sh@-80:2=a2", "commerce.it_sh@80-:3=b3"} {
		if !contains(rows, want) {
			t.Fatalf("copied rows %v: no %s", rows, want)
		}
	}
	cancel()

	// From the last VGTID: only the changes after it, from both shards.
	testkit.MustExec(t, db, "INSERT INTO it_sh VALUES (10, 'a10')")
	if err = other.Exec("INSERT INTO it_sh VALUES (30, 'b30')"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	r, err = conn.VStream(ctx, topodatapb.TabletType_PRIMARY, last, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	rows = nil
	for len(rows) < 2 {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			for _, rc := range ev.GetRowEvent().GetRowChanges() {
				rows = append(rows, ev.Shard+":"+strings.Join(rowValues(rc.After), "="))
			}
		}
	}
	if !contains(rows, "-80:10=a10") || !contains(rows, "80-:30=b30") || len(rows) != 2 {
		t.Fatalf("resumed rows %v, want -80:10=a10 and 80-:30=b30", rows)
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
