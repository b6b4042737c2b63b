package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// recvAllOf reads a server stream to its end.
func recvAllOf[T proto.Message](recv func() (T, error)) ([]T, error) {
	var out []T
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, proto.CloneOf(m))
	}
}

func TestVStreamRowsService(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS vr1", "CREATE TABLE vr1 (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO vr1 VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	qc := queryservice.NewQueryClient(dial(t, serve(t, dbConfig(), Options{})))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{
		Target: &query.Target{Keyspace: "test", Shard: "0"},
		Query:  "select id, v from vr1",
		Lastpk: &query.QueryResult{Fields: []*query.Field{{Name: "id", Type: query.Type_INT32}}, Rows: []*query.Row{{Lengths: []int64{1}, Values: []byte("1")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := recvAllOf(st.Recv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d responses, want fields then rows: %v", len(got), got)
	}
	if got[0].Gtid == "" || len(got[0].Fields) != 2 || len(got[0].Pkfields) != 1 || got[0].Pkfields[0].Name != "id" {
		t.Errorf("first response %v: want gtid, fields id and v, pkfields id", got[0])
	}
	if len(got[1].Rows) != 2 || string(got[1].Rows[1].Values) != "3c" || string(got[1].Lastpk.GetValues()) != "3" {
		t.Errorf("rows response %v: want rows 2 and 3 and lastpk 3", got[1])
	}
}

func TestVStreamTablesService(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS vtables", "CREATE DATABASE vtables",
		"CREATE TABLE vtables.a (id INT PRIMARY KEY)", "INSERT INTO vtables.a VALUES (1)",
		"CREATE TABLE vtables.b (id INT PRIMARY KEY)", "INSERT INTO vtables.b VALUES (2)")
	cfg := dbConfig()
	cfg.Database = "vtables"
	qc := queryservice.NewQueryClient(dial(t, serve(t, cfg, Options{})))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := qc.VStreamTables(ctx, &binlogdata.VStreamTablesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := recvAllOf(st.Recv)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		if r.Gtid == "" || r.Gtid != got[0].Gtid {
			t.Errorf("response %v: want the snapshot's gtid %q on every response", r, got[0].Gtid)
		}
		names = append(names, r.TableName+":"+string(r.Lastpk.GetValues()))
	}
	if strings.Join(names, " ") != "a: a:1 b: b:2" {
		t.Errorf("got %v", names)
	}
}

func TestBinlogDumpGTIDService(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS vd1", "CREATE TABLE vd1 (id INT PRIMARY KEY)", "INSERT INTO vd1 VALUES (1)")
	qc := queryservice.NewQueryClient(dial(t, serve(t, dbConfig(), Options{})))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// From nothing held, to the end of the binlog (BINLOG_DUMP_NON_BLOCK).
	st, err := qc.BinlogDumpGTID(ctx, &binlogdata.BinlogDumpGTIDRequest{Flags: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := recvAllOf(st.Recv)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, r := range got {
		raw = append(raw, r.Raw...)
	}
	// Whole packets: the last is the server's EOF, and the table's insert is in between.
	var last []byte
	for off := 0; off < len(raw); {
		if off+4 > len(raw) {
			t.Fatalf("a partial packet header at %d of %d bytes", off, len(raw))
		}
		n := int(raw[off]) | int(raw[off+1])<<8 | int(raw[off+2])<<16
		if off+4+n > len(raw) {
			t.Fatalf("a partial packet at %d of %d bytes", off, len(raw))
		}
		last = raw[off+4 : off+4+n]
		off += 4 + n
	}
	if len(last) == 0 || last[0] != 0xfe {
		t.Errorf("the dump does not end with an EOF packet: %x", last)
	}
	if !strings.Contains(string(raw), "vd1") {
		t.Error("the dump does not hold the table's events")
	}
}

func TestVitessReadCodes(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS vr2", "CREATE TABLE vr2 (id INT PRIMARY KEY)")
	qc := queryservice.NewQueryClient(dial(t, serve(t, dbConfig(), Options{})))
	cases := []struct {
		name string
		call func(context.Context) error
		code codes.Code
		msg  string
	}{
		{"rows: not a select", func(ctx context.Context) error {
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Query: "delete from vr2"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "want select <columns> from <table>"},
		{"rows: no such table", func(ctx context.Context) error {
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Query: "select * from nosuch"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "is not present"},
		{"rows: other shard", func(ctx context.Context) error {
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Target: &query.Target{Keyspace: "test", Shard: "-80"}, Query: "select * from vr2"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "not served here"},
		{"results: not a select", func(ctx context.Context) error {
			st, err := qc.VStreamResults(ctx, &binlogdata.VStreamResultsRequest{Query: "drop table vr2"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "only one SELECT reading tables of test is allowed"},
		{"results: another database", func(ctx context.Context) error {
			st, err := qc.VStreamResults(ctx, &binlogdata.VStreamResultsRequest{Query: "select * from mysql.user"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "outside test"},
		{"dump: bad gtid set", func(ctx context.Context) error {
			st, err := qc.BinlogDumpGTID(ctx, &binlogdata.BinlogDumpGTIDRequest{GtidSet: "MariaDB/0-x"})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "0-x"},
		{"dump: other flavor", func(ctx context.Context) error {
			st, err := qc.BinlogDumpGTID(ctx, &binlogdata.BinlogDumpGTIDRequest{GtidSet: otherFlavorPosition()})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "the server is " + db.PositionFlavor()},
		{"rows: bad lastpk", func(ctx context.Context) error {
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Query: "select * from vr2",
				Lastpk: &query.QueryResult{Rows: []*query.Row{{Lengths: []int64{1, 1}, Values: []byte("12")}}}})
			if err == nil {
				_, err = recvAllOf(st.Recv)
			}
			return err
		}, codes.InvalidArgument, "2 values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := c.call(ctx)
			if s := status.Convert(err); s.Code() != c.code || !strings.Contains(s.Message(), c.msg) {
				t.Errorf("got %v, want %s saying %q", err, c.code, c.msg)
			}
		})
	}
}
