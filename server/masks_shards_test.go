package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	"github.com/vstream-cdc/vstream/gen/topodata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/topology"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// serverMasks are testMasks as vstreamd --column-masks gives them (vstreamer.Config).
func serverMasks(t *testing.T) []filter.Mask {
	t.Helper()
	masks, err := filter.ParseMasks("mask.hash.SHA-256.with.salt.pepper=mk.email;truncate.to.3.chars=/^m.phone;" +
		"mask.with.6.chars=mk.note;mask.hash.MD5.with.salt.s=mk.bin")
	if err != nil {
		t.Fatal(err)
	}
	return masks
}

// maskCluster serves keyspace commerce of the topology in two shards, -80 on the package's
// database server and 80- on a second one, each with table mk and a copied row of its own;
// cfg configures every shard's engine (vstreamd's engine configuration is the cluster's). It
// returns the rows each shard's binlog is to get, after the copy.
func maskCluster(t *testing.T, cfg vstreamer.Config) (addr string, other *testdb.Server, copied, later [2]maskRow) {
	t.Helper()
	other, err := testdb.Start(testdb.Options{Database: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	copied[0], _, _ = maskTable(t)
	copied[1] = newMaskRow("11", "carol@secret.example", "+33-1-2345-6789", "latin note eleven", "binsecret11", "k11")
	later[0] = newMaskRow("3", "dave@secret.example", "+49-30-1234-5678", "latin note twelve", "binsecret12", "k12")
	later[1] = newMaskRow("13", "erin@secret.example", "+81-3-1234-5678", "latin note thirteen", "binsecret13", "k13")
	if err := other.Exec("DROP TABLE IF EXISTS mk",
		"CREATE TABLE mk (id INT PRIMARY KEY, email VARCHAR(64), phone VARCHAR(32) CHARACTER SET utf8mb4, "+
			"note TEXT CHARACTER SET latin1, bin VARBINARY(32), keep VARCHAR(10))", copied[1].insert()); err != nil {
		t.Fatal(err)
	}
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
	cluster, err := shards.NewCluster(top, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, dbConfig(), Options{Cluster: cluster}), other, copied, later
}

// noSecrets fails when any of the rows' clear values is in b (whole responses, marshalled),
// as text, base64 or hex (how the formats write binary columns).
func noSecrets(t *testing.T, b []byte, rows ...maskRow) {
	t.Helper()
	for _, r := range rows {
		for _, s := range r.secrets() {
			for _, f := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s))} {
				if bytes.Contains(b, []byte(f)) {
					t.Errorf("%q left the server in clear (as %q)", s, f)
				}
			}
		}
	}
}

// TestColumnMasksCluster: a stream of the topology's two shards (vstreamd --topology) masks
// the columns of Start.flags.column_masks on both shards, in the copy and the binlog, in
// VEvents and in an encoded format, and refuses a mask that cannot apply as a stream of one
// server does.
func TestColumnMasksCluster(t *testing.T) {
	for _, format := range []string{"", "debezium-json"} {
		t.Run(formatName(format), func(t *testing.T) {
			addr, other, copied, later := maskCluster(t, dbConfig())
			cc := dial(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: ""}}},
				Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
				Flags:  &vstreamv1.Flags{ColumnMasks: testMasks},
				Format: format,
			}}})
			// Every row's hashed email, in whatever the stream sends: VEvents' cells or the
			// records' JSON.
			all := [][]byte{}
			seen := func(s string) bool { return bytes.Contains(bytes.Join(all, nil), []byte(s)) }
			rows := []maskRow{copied[0], copied[1], later[0], later[1]}
			wrote := false
			for !seen(rows[0].wantEmail) || !seen(rows[1].wantEmail) || !seen(rows[2].wantEmail) || !seen(rows[3].wantEmail) {
				resp, err := st.Recv()
				if err != nil {
					t.Fatalf("after %d responses: %v", len(all), err)
				}
				b, err := resp.MarshalVT()
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, b)
				if !wrote && seen(copied[0].wantEmail) && seen(copied[1].wantEmail) {
					wrote = true
					testkit.MustExec(t, db, later[0].insert())
					if err := other.Exec(later[1].insert()); err != nil {
						t.Fatal(err)
					}
				}
			}
			noSecrets(t, bytes.Join(all, nil), rows...)
			for _, r := range rows {
				// debezium-json writes the binary column's hash in base64.
				for _, want := range []string{r.wantPhone, r.wantBin} {
					if !seen(want) && !seen(base64.StdEncoding.EncodeToString([]byte(want))) {
						t.Errorf("row %s: %q is not in the stream", r.id, want)
					}
				}
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		addr, _, _, _ := maskCluster(t, dbConfig())
		s := firstError(t, dial(t, addr), context.Background(), &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: ""}}},
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
			Flags:  &vstreamv1.Flags{ColumnMasks: []*vstreamv1.ColumnMask{{Table: "mk", Column: "id", Rule: "mask.with.3.chars"}}},
		}}})
		if s.Code() != codes.InvalidArgument || !bytes.Contains([]byte(s.Message()), []byte("mk.id: the column is part of the primary key")) {
			t.Errorf("got %v %q, want InvalidArgument naming mk.id", s.Code(), s.Message())
		}
	})
}

// TestColumnMasksClusterVtgate: vstreamd's own masks (--column-masks, in the configuration
// of every engine of the topology) apply to the vtgate API's stream of both shards, whose
// requests cannot carry masks.
func TestColumnMasksClusterVtgate(t *testing.T) {
	cfg := dbConfig()
	cfg.ColumnMasks = serverMasks(t)
	addr, other, copied, later := maskCluster(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := vtgateservice.NewVitessClient(dial(t, addr)).VStream(ctx, &vtgate.VStreamRequest{TabletType: topodata.TabletType_PRIMARY,
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Gtid: ""}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*query.Row{}
	var fields [][]*query.Field
	var all [][]byte
	wrote := false
	for len(byID) < 4 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("after %d rows: %v", len(byID), err)
		}
		b, err := resp.MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
		for _, ev := range resp.GetEvents() {
			switch ev.GetType() {
			case binlogdata.VEventType_FIELD:
				fields = append(fields, ev.GetFieldEvent().GetFields())
			case binlogdata.VEventType_ROW:
				for _, rc := range ev.GetRowEvent().GetRowChanges() {
					byID[rowCells(rc.GetAfter())[0]] = rc.GetAfter()
				}
			default:
			}
		}
		if !wrote && len(byID) == 2 {
			wrote = true
			testkit.MustExec(t, db, later[0].insert())
			if err := other.Exec(later[1].insert()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(fields) < 2 {
		t.Fatalf("%d FIELD events, want one per shard at least", len(fields))
	}
	for _, f := range fields {
		checkMaskedFields(t, f)
	}
	for _, r := range []maskRow{copied[0], copied[1], later[0], later[1]} {
		checkMaskedRow(t, "row "+r.id, byID[r.id], r)
	}
	noSecrets(t, bytes.Join(all, nil), copied[0], copied[1], later[0], later[1])
}

// TestColumnMasksVStreamRows: the rows VStreamRows reads (queryservice, what a Vitess copy
// phase asks a tablet for) carry vstreamd's masks, whether the query names the columns or
// takes them all, and its fields describe the masked values.
func TestColumnMasksVStreamRows(t *testing.T) {
	copied, inserted, _ := maskTable(t)
	testkit.MustExec(t, db, inserted.insert())
	cfg := dbConfig()
	cfg.ColumnMasks = serverMasks(t)
	qc := queryservice.NewQueryClient(dial(t, serve(t, cfg, Options{})))
	for _, q := range []string{"select * from mk", "select id, email, phone, note, bin, keep from mk"} {
		t.Run(q, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Target: &query.Target{Keyspace: "test", Shard: "0"}, Query: q})
			if err != nil {
				t.Fatal(err)
			}
			got, err := recvAllOf(st.Recv)
			if err != nil {
				t.Fatal(err)
			}
			var rows []*query.Row
			var raw [][]byte
			for _, r := range got {
				if len(r.Fields) > 0 {
					checkMaskedFields(t, r.Fields)
				}
				rows = append(rows, r.Rows...)
				b, err := r.MarshalVT()
				if err != nil {
					t.Fatal(err)
				}
				raw = append(raw, b)
			}
			if len(rows) != 2 {
				t.Fatalf("%d rows, want 2", len(rows))
			}
			checkMaskedRow(t, "first", rows[0], copied)
			checkMaskedRow(t, "second", rows[1], inserted)
			noSecrets(t, bytes.Join(raw, nil), copied, inserted)
		})
	}
	// A mask the table cannot take ends the read with InvalidArgument naming it.
	cfg.ColumnMasks = []filter.Mask{{Table: "mk", Column: "id", Rule: "mask.with.3.chars"}}
	qc = queryservice.NewQueryClient(dial(t, serve(t, cfg, Options{})))
	st, err := qc.VStreamRows(context.Background(), &binlogdata.VStreamRowsRequest{Query: "select * from mk"})
	if err == nil {
		_, err = recvAllOf(st.Recv)
	}
	if status.Code(err) != codes.InvalidArgument || !bytes.Contains([]byte(err.Error()), []byte("mk.id")) {
		t.Errorf("a mask on the primary key: %v, want InvalidArgument naming mk.id", err)
	}
}
