package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer/sqlguard"
)

// TestStreamResults follows Vitess's TestStreamResults: fields and the snapshot's GTID first,
// then the rows, one per response with a packet size of 1.
func TestStreamResults(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists sr1",
		"create table sr1(id int, val varbinary(128), f float, e enum('x','y'), t varchar(8) character set latin1, primary key(id))",
		"insert into sr1 values (1, 'aaa', 1.5, 'x', 'é'), (2, 'bbb', null, 'y', null)",
	)
	cur := headPos(t)
	var got []string
	err := newEngine(t).StreamResults(context.Background(), ResultsRequest{Query: "select id, val, f, e, t, id * 2 as twice from sr1 order by id", MaxBatchBytes: 1},
		func(b *RowsBatch) error {
			if len(b.Fields) > 0 {
				if b.GTID != cur {
					t.Errorf("gtid %q, want %q", b.GTID, cur)
				}
				// The snapshot is open: these writes are not in the result.
				testkit.MustExec(t, db, "insert into sr1 values (3, 'ccc', 0, 'x', 'c')", "update sr1 set val = 'zzz' where id = 1")
				got = append(got, "fields:"+fieldsString(b.Fields))
				return nil
			}
			got = append(got, batchString(b))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fields:[id:INT32 val:VARBINARY f:FLOAT32 e:ENUM t:VARCHAR twice:INT64]",
		"rows:[1 aaa 1.5 x é 2]",
		"rows:[2 bbb NULL y NULL 4]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestStreamResultsRefused(t *testing.T) {
	testkit.MustExec(t, db, "drop table if exists sr2", "create table sr2(id int primary key)", "insert into sr2 values (1)")
	e := newEngine(t)
	for _, c := range []struct{ query, want string }{
		{"delete from sr2", "not a SELECT"},
		{"select * from sr2; drop table sr2", "2 statements"},
		{"select * from mysql.user", "outside test"},
		{"select * from sr2 for update", "locking read"},
		{"select sleep(100)", "function sleep"},
		// The server's own refusal of a SELECT is the client's to fix as well.
		{"select nosuch from sr2", "Unknown column"},
	} {
		t.Run(c.query, func(t *testing.T) {
			sent := 0
			err := e.StreamResults(context.Background(), ResultsRequest{Query: c.query}, func(*RowsBatch) error { sent++; return nil })
			if !errors.Is(err, sqlguard.ErrNotAllowed) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a refusal saying %q", err, c.want)
			}
			if sent != 0 {
				t.Errorf("%d batches sent before the refusal", sent)
			}
		})
	}
	if err := db.Exec("select * from sr2"); err != nil {
		t.Errorf("sr2 is gone: %v", err)
	}
}

// TestStreamResultsReadOnly: a SELECT that would write through a stored function fails: the
// query runs in a read-only transaction.
func TestStreamResultsReadOnly(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists sr3", "drop function if exists sr3_write",
		"create table sr3(id int primary key)",
		"create function sr3_write() returns int deterministic modifies sql data begin insert into sr3 values (1); return 1; end",
	)
	err := newEngine(t).StreamResults(context.Background(), ResultsRequest{Query: "select sr3_write()"}, func(*RowsBatch) error { return nil })
	if !errors.Is(err, sqlguard.ErrNotAllowed) || !strings.Contains(err.Error(), "READ ONLY") {
		t.Errorf("got %v, want the server's refusal to write in a read-only transaction", err)
	}
	n, err := queryStringOn(t, "select count(*) from sr3")
	if err != nil || n != "0" {
		t.Errorf("sr3 has %s rows (%v), want none", n, err)
	}
}
