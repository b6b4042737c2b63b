package interop

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/grpcclient"
	"vitess.io/vitess/go/vt/vterrors"
	"vitess.io/vitess/go/vt/vttablet/grpctabletconn"
	"vitess.io/vitess/go/vt/vttablet/queryservice"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// tablet dials vstreamd with Vitess's own tablet client, as vreplication and vdiff do.
func tablet(t *testing.T) queryservice.QueryService {
	t.Helper()
	return tabletAt(t, addr)
}

// tabletAt dials the vstreamd listening at listen as tablet does.
func tabletAt(t *testing.T, listen string) queryservice.QueryService {
	t.Helper()
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	qs, err := grpctabletconn.DialTablet(context.Background(), &topodatapb.Tablet{
		Hostname: host, PortMap: map[string]int32{"grpc": int32(p)}, Keyspace: "ks", Shard: "0",
	}, grpcclient.FailFast(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qs.Close(context.Background()) })
	return qs
}

var target = &querypb.Target{Keyspace: "ks", Shard: "0", TabletType: topodatapb.TabletType_PRIMARY}

// rowsResult is what a VStreamRows call returned: its first response and its row responses
// as Vitess's sqltypes decodes them.
type rowsResult struct {
	fields, pkfields []*querypb.Field
	gtid             string
	// batches holds each row response's rows and lastpk, rendered.
	batches []string
}

func streamRows(t *testing.T, qs queryservice.QueryService, req *binlogdatapb.VStreamRowsRequest) rowsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res rowsResult
	req.Target = target
	err := qs.VStreamRows(ctx, req, func(r *binlogdatapb.VStreamRowsResponse) error {
		// The client reuses r after the callback: keep copies.
		r = r.CloneVT()
		if r.Heartbeat {
			return nil
		}
		if len(r.Fields) > 0 {
			res.fields, res.pkfields, res.gtid = r.Fields, r.Pkfields, r.Gtid
			return nil
		}
		rows := sqltypes.Proto3ToResult(&querypb.QueryResult{Fields: res.fields, Rows: r.Rows})
		lastpk := sqltypes.Proto3ToResult(&querypb.QueryResult{Fields: res.pkfields, Rows: []*querypb.Row{r.Lastpk}})
		res.batches = append(res.batches, valuesString(rows.Rows)+" lastpk "+valuesString(lastpk.Rows))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func valuesString(rows [][]sqltypes.Value) string {
	var out []string
	for _, r := range rows {
		var vals []string
		for _, v := range r {
			vals = append(vals, v.String())
		}
		out = append(out, "("+strings.Join(vals, ",")+")")
	}
	return strings.Join(out, "")
}

// TestVStreamRows reads a table the way vreplication's copy does with Vitess's tablet client:
// fields, pkfields and the snapshot's GTID first, rows with the last key, a resume from that
// key, responses bounded by vstream-packet-size, and a binlog stream from the GTID that holds
// exactly the changes after the snapshot.
func TestVStreamRows(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_rows",
		"CREATE TABLE it_rows (id1 INT, id2 INT, name VARBINARY(20), amount DECIMAL(8,2), PRIMARY KEY (id1, id2))",
		"INSERT INTO it_rows VALUES (1, 1, 'a', 1.50), (1, 2, 'b', NULL), (2, 1, 'c', 3.00)")
	qs := tablet(t)

	all := streamRows(t, qs, &binlogdatapb.VStreamRowsRequest{Query: "select * from it_rows"})
	if _, err := replication.DecodePosition(all.gtid); err != nil {
		t.Fatalf("gtid %q does not decode as a Vitess position: %v", all.gtid, err)
	}
	var names []string
	for _, f := range all.fields {
		names = append(names, f.Name+":"+f.Type.String())
	}
	if got, want := strings.Join(names, " "), "id1:INT32 id2:INT32 name:VARBINARY amount:DECIMAL"; got != want {
		t.Errorf("fields %s, want %s", got, want)
	}
	if len(all.pkfields) != 2 || all.pkfields[0].Name != "id1" || all.pkfields[1].Name != "id2" {
		t.Errorf("pkfields %v, want id1, id2", all.pkfields)
	}
	want := `(INT32(1),INT32(1),VARBINARY("a"),DECIMAL(1.50))(INT32(1),INT32(2),VARBINARY("b"),NULL)(INT32(2),INT32(1),VARBINARY("c"),DECIMAL(3.00)) lastpk (INT32(2),INT32(1))`
	if len(all.batches) != 1 || all.batches[0] != want {
		t.Errorf("rows:\n got %q\nwant %q", all.batches, want)
	}

	// Resume after (1, 1), the key of the first row, with the pkfields as vreplication sends
	// them; one row per response.
	resumed := streamRows(t, qs, &binlogdatapb.VStreamRowsRequest{
		Query:   "select id1, id2, name from it_rows",
		Lastpk:  &querypb.QueryResult{Fields: all.pkfields, Rows: []*querypb.Row{sqltypes.RowToProto3([]sqltypes.Value{sqltypes.NewInt32(1), sqltypes.NewInt32(1)})}},
		Options: &binlogdatapb.VStreamOptions{ConfigOverrides: map[string]string{"vstream-packet-size": "1"}},
	})
	wantResumed := []string{
		`(INT32(1),INT32(2),VARBINARY("b")) lastpk (INT32(1),INT32(2))`,
		`(INT32(2),INT32(1),VARBINARY("c")) lastpk (INT32(2),INT32(1))`,
	}
	if strings.Join(resumed.batches, "\n") != strings.Join(wantResumed, "\n") {
		t.Errorf("resumed:\n got %q\nwant %q", resumed.batches, wantResumed)
	}

	// A change after the snapshot is in the binlog after the GTID, and nothing before it is.
	testkit.MustExec(t, db, "INSERT INTO it_rows VALUES (3, 1, 'd', 4.00)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := vtgate(t).VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: all.gtid}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_rows"}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, r, 5, nil); strings.Join(got, " ") != "BEGIN FIELD ks.it_rows ROW ks.it_rows 1 VGTID COMMIT" {
		t.Fatalf("binlog from the snapshot's gtid: %v", got)
	}
}

// TestVStreamTables reads every table of the keyspace with Vitess's tablet client, as its
// table streamer serves them: the table's name and the snapshot's gtid on every response.
func TestVStreamTables(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_tab_a, it_tab_b",
		"CREATE TABLE it_tab_a (id INT PRIMARY KEY, v VARCHAR(5))", "INSERT INTO it_tab_a VALUES (1, 'x'), (2, 'y')",
		"CREATE TABLE it_tab_b (k VARCHAR(5) NOT NULL, UNIQUE KEY (k))", "INSERT INTO it_tab_b VALUES ('q')")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string][]string{}
	gtids := map[string]bool{}
	fields := map[string][]*querypb.Field{}
	err := tablet(t).VStreamTables(ctx, &binlogdatapb.VStreamTablesRequest{Target: target}, func(r *binlogdatapb.VStreamTablesResponse) error {
		r = r.CloneVT()
		gtids[r.Gtid] = true
		if len(r.Fields) > 0 {
			fields[r.TableName] = r.Fields
			var names []string
			for _, f := range r.Fields {
				names = append(names, f.Name)
			}
			got[r.TableName] = append(got[r.TableName], "fields "+strings.Join(names, ","))
			return nil
		}
		rows := sqltypes.Proto3ToResult(&querypb.QueryResult{Fields: fields[r.TableName], Rows: r.Rows})
		got[r.TableName] = append(got[r.TableName], strings.Join(rowsText(rows.Rows), ""))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gtids) != 1 || gtids[""] {
		t.Errorf("gtids %v: want one snapshot gtid on every response", gtids)
	}
	if a := strings.Join(got["it_tab_a"], " "); a != "fields id,v (1,x)(2,y)" {
		t.Errorf("it_tab_a: %s", a)
	}
	if b := strings.Join(got["it_tab_b"], " "); b != "fields k (q)" {
		t.Errorf("it_tab_b: %s", b)
	}
}

func rowsText(rows [][]sqltypes.Value) []string {
	var out []string
	for _, r := range rows {
		var vals []string
		for _, v := range r {
			vals = append(vals, v.ToString())
		}
		out = append(out, "("+strings.Join(vals, ",")+")")
	}
	return out
}

// TestVStreamResults runs a query the way vdiff does with Vitess's tablet client: fields and
// the snapshot's gtid first, then the rows; anything but one SELECT on the keyspace is
// refused with INVALID_ARGUMENT saying what is allowed.
func TestVStreamResults(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_results",
		"CREATE TABLE it_results (id INT PRIMARY KEY, name VARCHAR(10))",
		"INSERT INTO it_results VALUES (1, 'a'), (2, 'b')")
	qs := tablet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fields []*querypb.Field
	var gtid string
	var rows [][]sqltypes.Value
	err := qs.VStreamResults(ctx, target, "select id, name, id + 1 from it_results order by id", func(r *binlogdatapb.VStreamResultsResponse) error {
		if len(r.Fields) > 0 {
			fields, gtid = r.Fields, r.Gtid
			return nil
		}
		rows = append(rows, sqltypes.Proto3ToResult(&querypb.QueryResult{Fields: fields, Rows: r.Rows}).Rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replication.DecodePosition(gtid); err != nil {
		t.Errorf("gtid %q does not decode as a Vitess position: %v", gtid, err)
	}
	if got, want := valuesString(rows), `(INT32(1),VARCHAR("a"),INT64(2))(INT32(2),VARCHAR("b"),INT64(3))`; got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}

	for _, q := range []string{"delete from it_results", "select * from mysql.user", "select * from it_results for update"} {
		err := qs.VStreamResults(ctx, target, q, func(*binlogdatapb.VStreamResultsResponse) error { return nil })
		if vterrors.Code(err) != vtrpcpb.Code_INVALID_ARGUMENT || !strings.Contains(err.Error(), "only one SELECT reading tables of ks is allowed") {
			t.Errorf("%s: got %v, want INVALID_ARGUMENT saying what is allowed", q, err)
		}
	}
	testkit.MustExec(t, db, "SELECT * FROM it_results")
}
