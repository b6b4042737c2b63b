package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/topodata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/topology"
)

// clusterServer serves keyspace commerce in two shards: -80 on the package's database
// server, 80- on a second one, both with table sh.
func clusterServer(t *testing.T) (addr string, other *testdb.Server) {
	t.Helper()
	other, err := testdb.Start(testdb.Options{Database: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	for _, s := range []*testdb.Server{db, other} {
		if err := s.Exec("DROP TABLE IF EXISTS sh", "CREATE TABLE sh (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
			t.Fatal(err)
		}
	}
	return serve(t, dbConfig(), Options{Cluster: clusterOf(t, other)}), other
}

// clusterOf is the cluster of clusterServer's topology: each call makes engines of its own,
// as a second vstreamd process has.
func clusterOf(t *testing.T, other *testdb.Server) *shards.Cluster {
	t.Helper()
	top, err := topology.Parse(fmt.Appendf(nil, `
keyspaces:
  - name: commerce
    database: test
    shards:
      - name: "-80"
        servers: [{addr: %q}]
      - name: "80-"
        servers: [{addr: %q}]
`, db.Addr(), other.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := shards.NewCluster(top, dbConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cluster
}

// insertBoth writes rows 1..n to shard -80's server and n+1..2n to 80-'s, one
// transaction each.
func insertBoth(t *testing.T, other *testdb.Server, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO sh VALUES (%d, 'a%d')", i, i))
		if err := other.Exec(fmt.Sprintf("INSERT INTO sh VALUES (%d, 'b%d')", n+i, n+i)); err != nil {
			t.Fatal(err)
		}
	}
}

// A keyspace of the topology streams both shards as one stream, on the native API in
// VEvents and in an encoded format: every row once, with its shard, each VGTID naming
// both shards, and a stream resumed from one goes on, on a second server of the same
// topology (vstreamd keeps no state: the client's VGTID is the whole position, so several
// behind a load balancer serve one client).
func TestClusterNative(t *testing.T) {
	addr, other := clusterServer(t)
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	start := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: "current"}}}

	var mu sync.Mutex
	var rows []string
	var last *binlogdata.VGtid
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cl.Stream(ctx, client.Request{Position: start, Filter: client.ParseTables("sh")}, func(_ context.Context, events []*binlogdata.VEvent) error {
			mu.Lock()
			defer mu.Unlock()
			for _, ev := range events {
				if ev.GetType() == binlogdata.VEventType_VGTID {
					last = ev.GetVgtid()
				}
				for _, rc := range ev.GetRowEvent().GetRowChanges() {
					rows = append(rows, ev.GetShard()+":"+strings.Join(rowCells(rc.GetAfter()), "="))
				}
			}
			return nil
		})
	}()
	testkit.WaitFor(t, 20*time.Second, "both shards' positions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		sg := last.GetShardGtids()
		return len(sg) == 2 && sg[0].GetGtid() != "current" && sg[1].GetGtid() != "current"
	})
	insertBoth(t, other, 5)
	testkit.WaitFor(t, 20*time.Second, "ten rows", func() bool { mu.Lock(); defer mu.Unlock(); return len(rows) >= 10 })
	cancel()
	<-done
	got := strings.Join(rows, " ")
	for i := 1; i <= 5; i++ {
		for _, want := range []string{fmt.Sprintf("-80:%d=a%d", i, i), fmt.Sprintf("80-:%d=b%d", 5+i, 5+i)} {
			if strings.Count(got, want+" ")+strings.Count(got+" ", want+" ") == 0 || strings.Count(" "+got+" ", " "+want+" ") != 1 {
				t.Fatalf("rows %s: want %s once", got, want)
			}
		}
	}
	if sg := last.GetShardGtids(); sg[0].GetShard() != "-80" || sg[1].GetShard() != "80-" || sg[0].GetKeyspace() != "commerce" {
		t.Fatalf("last VGTID %v", last)
	}

	// Resumed from the last VGTID on a second server, in debezium-json: only what comes
	// after.
	cl2, err := client.Dial(serve(t, dbConfig(), Options{Cluster: clusterOf(t, other)}), client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl2.Close() }()
	insertBoth(t, other, 0)
	testkit.MustExec(t, db, "INSERT INTO sh VALUES (100, 'a100')")
	if err := other.Exec("INSERT INTO sh VALUES (200, 'b200')"); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- cl2.Stream(ctx, client.Request{Position: last, Filter: client.ParseTables("sh"), Format: "debezium-json",
			OnMessages: func(_ context.Context, ms []*vstreamv1.EncodedMessage) error {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range ms {
					if v := string(m.GetValue()); strings.Contains(v, `"op":"c"`) {
						msgs = append(msgs, v)
					}
				}
				return nil
			}}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	}()
	testkit.WaitFor(t, 20*time.Second, "the two rows after the VGTID", func() bool { mu.Lock(); defer mu.Unlock(); return len(msgs) >= 2 })
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 2 || !strings.Contains(strings.Join(msgs, ""), `"v":"a100"`) || !strings.Contains(strings.Join(msgs, ""), `"v":"b200"`) {
		t.Fatalf("resumed stream's records: %v", msgs)
	}
}

// On the vtgate API, a VGtid of the keyspace with no shard streams every shard of the
// topology: each VGTID names both shards and table names carry the keyspace, as vtgate
// sends them; a shard the topology does not have is refused.
func TestClusterVtgate(t *testing.T) {
	addr, other := clusterServer(t)
	cc := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{TabletType: topodata.TabletType_PRIMARY,
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "sh"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	var vgtids int
	inserted := false
	for len(got) < 4 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.GetEvents() {
			switch ev.GetType() {
			case binlogdata.VEventType_VGTID:
				if len(ev.GetVgtid().GetShardGtids()) != 2 {
					t.Fatalf("VGTID %v does not name both shards", ev.GetVgtid())
				}
				vgtids++
			case binlogdata.VEventType_ROW:
				if ev.GetRowEvent().GetTableName() != "commerce.sh" {
					t.Fatalf("table name %q, want commerce.sh", ev.GetRowEvent().GetTableName())
				}
				for _, rc := range ev.GetRowEvent().GetRowChanges() {
					got[ev.GetShard()+":"+rowCells(rc.GetAfter())[0]] = true
				}
			default:
			}
		}
		if !inserted && vgtids >= 2 {
			inserted = true
			insertBoth(t, other, 2)
		}
	}
	for _, want := range []string{"-80:1", "-80:2", "80-:3", "80-:4"} {
		if !got[want] {
			t.Fatalf("rows %v: no %s", got, want)
		}
	}

	st, err = vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Shard: "-40", Gtid: "current"}}}})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `no shard "-40"`) {
		t.Fatalf("a shard the topology lacks: %v", err)
	}
}
