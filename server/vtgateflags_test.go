package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/topodata"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

func shardsRequest(flags *vtgate.VStreamFlags) *vtgate.VStreamRequest {
	return &vtgate.VStreamRequest{TabletType: topodata.TabletType_PRIMARY,
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "sh"}}}, Flags: flags}
}

// VStreamFlags on a stream of two shards: values vtgate refuses are refused with what to
// fix; exclude_keyspace_from_table_name names tables without their keyspace on both shards
// (Vitess's TestVStreamEventsExcludeKeyspaceFromTableName); a transaction bigger than
// transaction_chunk_size reaches the client in several responses with no other shard's
// events inside it, as it does without the flag (TestVStreamChunks); heartbeat_interval
// gives the merge's heartbeats, without keyspace or shard.
func TestClusterVtgateFlags(t *testing.T) {
	addr, other := clusterServer(t)
	cc := dial(t, addr)
	// Rows of 2 KB: a big transaction spans several of the engine's batches.
	testkit.MustExec(t, db, "ALTER TABLE sh MODIFY v TEXT")
	if err := other.Exec("ALTER TABLE sh MODIFY v TEXT"); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		flags *vtgate.VStreamFlags
		msg   string
	}{
		{&vtgate.VStreamFlags{CellPreference: "nearest"}, `cell_preference "nearest": want preferlocalwithalias (the default) or onlyspecified`},
		{&vtgate.VStreamFlags{TabletOrder: "random"}, `tablet_order "random": want any (the default) or inorder`},
		{&vtgate.VStreamFlags{CellPreference: "onlyspecified"}, "cell_preference onlyspecified needs the cells"},
		{&vtgate.VStreamFlags{CellPreference: "OnlySpecified", Cells: "zone9"}, "shard commerce/-80 has no server in cells zone9"},
	}
	for _, c := range refused {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, shardsRequest(c.flags))
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		if s := status.Convert(err); s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%v: got %v %q, want InvalidArgument with %q", c.flags, s.Code(), s.Message(), c.msg)
		}
	}

	cases := []struct {
		name      string
		flags     *vtgate.VStreamFlags
		table     string
		heartbeat bool
	}{
		{name: "defaults", flags: &vtgate.VStreamFlags{}, table: "commerce.sh"},
		{name: "exclude keyspace", flags: &vtgate.VStreamFlags{ExcludeKeyspaceFromTableName: true}, table: "sh"},
		{name: "chunked, heartbeats, in order", flags: &vtgate.VStreamFlags{TransactionChunkSize: 1024, HeartbeatInterval: 1,
			TabletOrder: "inorder", CellPreference: "preferlocalwithalias"}, table: "commerce.sh", heartbeat: true},
	}
	id := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, shardsRequest(c.flags))
			if err != nil {
				t.Fatal(err)
			}
			var events []*binlogdata.VEvent
			// responses of each shard's big transaction
			spans := map[string]int{}
			recv := func() {
				resp, err := st.Recv()
				if err != nil {
					t.Fatal(err)
				}
				inBig := map[string]bool{}
				for _, ev := range resp.GetEvents() {
					if rcs := ev.GetRowEvent().GetRowChanges(); len(rcs) > 0 && len(rcs[0].GetAfter().GetLengths()) == 2 && rcs[0].GetAfter().GetLengths()[1] == 2000 {
						inBig[ev.GetShard()] = true
					}
				}
				for sh := range inBig {
					spans[sh]++
				}
				events = append(events, resp.GetEvents()...)
			}
			for vgtids := 0; vgtids < 2; {
				recv()
				vgtids = 0
				for _, ev := range events {
					if ev.GetType() == binlogdata.VEventType_VGTID {
						vgtids++
					}
				}
			}
			// A big transaction (ten statements of 50 rows, 1 MB) on both shards at once, each
			// with keys of its own, from first on.
			big := func(first int, exec func(...string) error) error {
				stmts := []string{"BEGIN"}
				for i := range 10 {
					var vals []string
					for j := range 50 {
						vals = append(vals, fmt.Sprintf("(%d, '%s')", first+i*50+j, strings.Repeat("x", 2000)))
					}
					stmts = append(stmts, "INSERT INTO sh VALUES "+strings.Join(vals, ","))
				}
				return exec(append(stmts, "COMMIT")...)
			}
			first, second := id+1, id+501
			id += 1000
			errc := make(chan error, 1)
			go func() { errc <- big(second, other.Exec) }()
			if err := big(first, func(s ...string) error { testkit.MustExec(t, db, s...); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			for rows := 0; rows < 1000; {
				recv()
				rows = 0
				for _, ev := range events {
					rows += len(ev.GetRowEvent().GetRowChanges())
				}
			}
			beats := 0
			if c.heartbeat {
				for beats == 0 {
					recv()
					beats = strings.Count(fmt.Sprint(events), "type:HEARTBEAT")
				}
			}
			open := ""
			for i, ev := range events {
				switch ev.GetType() {
				case binlogdata.VEventType_BEGIN:
					open = ev.GetShard()
				case binlogdata.VEventType_COMMIT:
					open = ""
				case binlogdata.VEventType_HEARTBEAT:
					if ev.GetKeyspace() != "" || ev.GetShard() != "" {
						t.Fatalf("heartbeat %v of a shard: vtgate sends its own, with no keyspace or shard", ev)
					}
					continue
				case binlogdata.VEventType_FIELD:
					if got := ev.GetFieldEvent().GetTableName(); got != c.table {
						t.Fatalf("FIELD of table %q, want %q", got, c.table)
					}
				case binlogdata.VEventType_ROW:
					if got := ev.GetRowEvent().GetTableName(); got != c.table {
						t.Fatalf("ROW of table %q, want %q", got, c.table)
					}
				default:
				}
				if open != "" && ev.GetShard() != open {
					t.Fatalf("event %d (%s of shard %s) inside a transaction of shard %s", i, ev.GetType(), ev.GetShard(), open)
				}
			}
			if spans["-80"] < 2 || spans["80-"] < 2 {
				t.Fatalf("big transactions in %v responses per shard, want several each", spans)
			}
			if !c.heartbeat && strings.Contains(fmt.Sprint(events), "type:HEARTBEAT") {
				t.Fatal("a heartbeat without heartbeat_interval")
			}
		})
	}
}
