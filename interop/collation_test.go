package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestVitessStreamRowsFilterVarChar ports rowstreamer_test.go's TestStreamRowsFilterVarChar:
// val = 'newton' on a utf8mb4_general_ci column passes Ñewton, nEwton and neẅton, as the
// server's collation matches them, in VStreamRows (where the WHERE is pushed down and the
// filter judges the rows again) and in the binlog stream (where only the filter judges).
func TestVitessStreamRowsFilterVarChar(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_fvarchar",
		"CREATE TABLE it_fvarchar (id1 INT, val VARCHAR(128), PRIMARY KEY (id1)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"INSERT INTO it_fvarchar VALUES (1, 'kepler'), (2, 'Ñewton'), (3, 'nEwton'), (4, 'kepler'), (5, 'neẅton'), (6, 'kepler')")
	const query = "select id1, val from it_fvarchar where (val = 'newton')"
	res := streamRows(t, tablet(t), &binlogdatapb.VStreamRowsRequest{Query: query})
	if len(res.fields) != 2 || res.fields[1].Type.String() != "VARCHAR" || res.fields[1].Charset != 45 {
		t.Errorf("fields %v", res.fields)
	}
	want := `(INT32(2),VARCHAR("Ñewton"))(INT32(3),VARCHAR("nEwton"))(INT32(5),VARCHAR("neẅton")) lastpk (INT32(5))`
	if strings.Join(res.batches, "\n") != want {
		t.Errorf("rows:\n got %q\nwant %q", res.batches, want)
	}

	// The same rule in the binlog: the rows the server's WHERE would pass, trailing spaces
	// ignored (PAD SPACE), and no other.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "current"}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_fvarchar", Filter: query}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	read(t, r, 1, nil) // the VGTID of the start
	testkit.MustExec(t, db, "INSERT INTO it_fvarchar VALUES (7, 'NEWTON'), (8, 'newtons'), (9, 'ñewton  '), (10, 'kepler'), (11, 'néwton'), (12, 'newt0n')")
	var rows []string
	for len(rows) == 0 {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type != binlogdatapb.VEventType_ROW {
				continue
			}
			for _, rc := range ev.RowEvent.RowChanges {
				rows = append(rows, strings.Join(rowValues(rc.After), ","))
			}
		}
	}
	if got, want := strings.Join(rows, " | "), "7,NEWTON | 9,ñewton   | 11,néwton"; got != want {
		t.Errorf("binlog rows %q, want %q", got, want)
	}
}

// TestFilterRefusedCollation: a condition on a column whose collation the filter cannot
// compare as the server does (a UCA collation here) is INVALID_ARGUMENT naming the column and
// the collation, never an approximate comparison.
func TestFilterRefusedCollation(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_fcoll",
		"CREATE TABLE it_fcoll (id INT PRIMARY KEY, val VARCHAR(20) COLLATE utf8mb4_unicode_ci)",
		"INSERT INTO it_fcoll VALUES (1, 'newton')")
	const msg = "column val cannot be compared in a filter: collation not compared as the server compares it: utf8mb4_unicode_ci"
	for _, gtid := range []string{"", "current"} { // a copy, a binlog stream
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
			&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: gtid}}},
			&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_fcoll", Filter: "select * from it_fcoll where val = 'newton'"}}}, &vtgatepb.VStreamFlags{})
		for err == nil {
			_, err = r.Recv()
		}
		cancel()
		if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), msg) {
			t.Errorf("gtid %q: err = %v, want INVALID_ARGUMENT with %q", gtid, err, msg)
		}
	}
}
