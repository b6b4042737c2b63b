package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/topology"
)

// The native API's server choice and merge flags on a keyspace of the topology whose one
// shard has a primary and a replica in cell zone1 and a replica in zone2 (the servers of
// Vitess's TestVStreamRetriableErrors' two cells, with a primary). Values that name no
// choice are refused with what to fix, as are the flags on a stream of one server. Each
// stream names the server it streams from by the one row it receives: with replication
// stopped, every server is written a row of its own. tablet_type picks the type (the
// topology's order among its servers), cells puts a cell's servers first, and
// cell_preference onlyspecified keeps to them, falling back to another type when the cells
// have none of the type asked; minimize_skew and heartbeat_interval give the merge's
// heartbeats, with no keyspace or shard.
func TestClusterNativeFlags(t *testing.T) {
	primary, err := testdb.Start(testdb.Options{Database: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Close)
	if err := primary.Exec("CREATE TABLE ce (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
		t.Fatal(err)
	}
	var replicas [2]*testdb.Server
	for i := range replicas {
		if replicas[i], err = primary.StartReplica(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(replicas[i].Close)
	}
	top, err := topology.Parse(fmt.Appendf(nil, `
keyspaces:
  - name: cells
    database: test
    shards:
      - name: "0"
        servers:
          - {addr: %q, tablet_type: primary, cell: zone1}
          - {addr: %q, tablet_type: replica, cell: zone1}
          - {addr: %q, tablet_type: replica, cell: zone2}
`, primary.Addr(), replicas[0].Addr(), replicas[1].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := shards.NewCluster(top, dbConfig())
	if err != nil {
		t.Fatal(err)
	}
	cc := dial(t, serve(t, dbConfig(), Options{Cluster: cluster}))
	filter := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "ce"}}}
	start := func(keyspace string, flags *vstreamv1.Flags) *vstreamv1.StreamRequest {
		return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: keyspace, Gtid: "current"}}},
			Filter: filter, Flags: flags}}}
	}

	refused := []struct {
		keyspace string
		flags    *vstreamv1.Flags
		msg      string
	}{
		{"cells", &vstreamv1.Flags{TabletType: "master"}, `tablet_type "master": want primary (the default), replica or rdonly`},
		{"cells", &vstreamv1.Flags{CellPreference: "nearest"}, `cell_preference "nearest": want preferlocalwithalias (the default) or onlyspecified`},
		{"cells", &vstreamv1.Flags{CellPreference: "onlyspecified"}, "cell_preference onlyspecified needs the cells"},
		{"cells", &vstreamv1.Flags{CellPreference: "onlyspecified", Cells: []string{"zone9"}}, "shard cells/0 has no server in cells zone9"},
		{"", &vstreamv1.Flags{MinimizeSkew: true}, "this stream is of one server: leave them unset"},
		{"", &vstreamv1.Flags{Cells: []string{"zone1"}}, "this stream is of one server: leave them unset"},
	}
	for _, c := range refused {
		s := firstError(t, cc, context.Background(), start(c.keyspace, c.flags))
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%v: got %v %q, want InvalidArgument with %q", c.flags, s.Code(), s.Message(), c.msg)
		}
	}

	cases := []struct {
		name  string
		flags *vstreamv1.Flags
		// want is the row of the server streamed from.
		want string
		// beats: the merge's heartbeats are expected.
		beats bool
	}{
		{name: "defaults", flags: &vstreamv1.Flags{}, want: "primary"},
		{name: "replica", flags: &vstreamv1.Flags{TabletType: "replica"}, want: "zone1-replica"},
		{name: "replica in zone2 first", flags: &vstreamv1.Flags{TabletType: "REPLICA", Cells: []string{"zone2", "zone1"}}, want: "zone2-replica"},
		{name: "primary only in zone2", flags: &vstreamv1.Flags{Cells: []string{"zone2"}, CellPreference: "onlyspecified"}, want: "zone2-replica"},
		{name: "replica only in zone1", flags: &vstreamv1.Flags{TabletType: "replica", Cells: []string{"zone1"}, CellPreference: "OnlySpecified"}, want: "zone1-replica"},
		{name: "minimize_skew and heartbeats", flags: &vstreamv1.Flags{MinimizeSkew: true, HeartbeatInterval: durationpb.New(time.Second)},
			want: "primary", beats: true},
	}
	type result struct {
		mu     sync.Mutex
		events []*binlogdata.VEvent
		err    error
	}
	results := make([]*result, len(cases))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i, c := range cases {
		r := &result{}
		results[i] = r
		st := openStream(t, ctx, cc, start("cells", c.flags))
		go func() {
			for {
				resp, err := st.Recv()
				r.mu.Lock()
				if err != nil {
					r.err = err
					r.mu.Unlock()
					return
				}
				r.events = append(r.events, resp.GetEvents()...)
				r.mu.Unlock()
			}
		}()
	}
	snapshot := func(r *result) ([]*binlogdata.VEvent, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return append([]*binlogdata.VEvent(nil), r.events...), r.err
	}
	for i, r := range results {
		testkit.WaitFor(t, 20*time.Second, cases[i].name+": a position", func() bool {
			events, err := snapshot(r)
			if err != nil {
				t.Fatalf("%s: %v", cases[i].name, err)
			}
			for _, ev := range events {
				if ev.GetType() == binlogdata.VEventType_VGTID {
					return true
				}
			}
			return false
		})
	}
	for _, r := range replicas {
		if err := r.StopReplication(); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range []*testdb.Server{primary, replicas[0], replicas[1]} {
		name := []string{"primary", "zone1-replica", "zone2-replica"}[i]
		if err := s.Exec(fmt.Sprintf("INSERT INTO ce VALUES (%d, '%s')", i+1, name)); err != nil {
			t.Fatal(err)
		}
	}
	rowsOf := func(events []*binlogdata.VEvent) []string {
		var out []string
		for _, ev := range events {
			for _, rc := range ev.GetRowEvent().GetRowChanges() {
				out = append(out, rowCells(rc.GetAfter())[1])
			}
		}
		return out
	}
	for i, c := range cases {
		r := results[i]
		testkit.WaitFor(t, 20*time.Second, c.name+": its row", func() bool {
			events, err := snapshot(r)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			return len(rowsOf(events)) > 0 && (!c.beats || strings.Contains(fmt.Sprint(events), "type:HEARTBEAT"))
		})
	}
	time.Sleep(1500 * time.Millisecond)
	for i, c := range cases {
		events, _ := snapshot(results[i])
		if got := rowsOf(events); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: rows %v, want the %s's row alone", c.name, got, c.want)
		}
		beats := 0
		for _, ev := range events {
			if ev.GetType() == binlogdata.VEventType_HEARTBEAT {
				beats++
				if ev.GetKeyspace() != "" || ev.GetShard() != "" {
					t.Errorf("%s: heartbeat %v of a shard: the merge's have no keyspace or shard", c.name, ev)
				}
			}
		}
		if (beats > 0) != c.beats {
			t.Errorf("%s: %d heartbeats, want them: %v", c.name, beats, c.beats)
		}
	}
}
