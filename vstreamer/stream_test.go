package vstreamer

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

func TestStreamEvents(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE ev1 (id INT PRIMARY KEY, name VARCHAR(20))",
		"CREATE TABLE ev2 (id INT PRIMARY KEY, val BIGINT)",
		"CREATE TABLE evskip (id INT PRIMARY KEY)",
	)
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^ev[0-9]"}}}})
	ts.expect("GTID", "OTHER", "VGTID")

	cases := []struct {
		name string
		sql  []string
		want []string
	}{{
		name: "insert",
		sql:  []string{"INSERT INTO ev1 VALUES (1, 'a'), (2, NULL)"},
		want: []string{"BEGIN", "FIELD ev1 id:INT32 name:VARCHAR", "ROW ev1 +[1 a] +[2 NULL]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "update and delete, no second FIELD",
		sql:  []string{"UPDATE ev1 SET name = 'b' WHERE id = 1", "DELETE FROM ev1 WHERE id = 2"},
		want: []string{
			"BEGIN", "ROW ev1 [1 a]>[1 b]", "GTID", "COMMIT", "VGTID",
			"BEGIN", "ROW ev1 -[2 NULL]", "GTID", "COMMIT", "VGTID",
		},
	}, {
		name: "multi-statement transaction over two tables",
		sql:  []string{"BEGIN", "INSERT INTO ev2 VALUES (1, -5)", "INSERT INTO evskip VALUES (1)", "UPDATE ev1 SET name = 'c'", "COMMIT"},
		want: []string{"BEGIN", "FIELD ev2 id:INT32 val:INT64", "ROW ev2 +[1 -5]", "ROW ev1 [1 b]>[1 c]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "transaction touching only a filtered-out table",
		sql:  []string{"INSERT INTO evskip VALUES (2)"},
		want: []string{"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "DDL on a streamed table, then FIELD again",
		sql:  []string{"ALTER TABLE ev1 ADD COLUMN extra INT", "INSERT INTO ev1 VALUES (3, 'd', 7)"},
		want: []string{
			"GTID", "DDL ALTER TABLE ev1 ADD COLUMN extra INT", "VGTID",
			"BEGIN", "FIELD ev1 id:INT32 name:VARCHAR extra:INT32", "ROW ev1 +[3 d 7]", "GTID", "COMMIT", "VGTID",
		},
	}, {
		name: "DDL on a filtered-out table is OTHER",
		sql:  []string{"ALTER TABLE evskip ADD COLUMN x INT"},
		want: []string{"GTID", "OTHER", "VGTID"},
	}, {
		name: "non-DDL statement is OTHER",
		sql:  []string{"CREATE DATABASE IF NOT EXISTS otherdb"},
		want: []string{"GTID", "OTHER", "VGTID"},
	}, {
		name: "column reorder and rename never decode with wrong names",
		sql: []string{
			"ALTER TABLE ev2 MODIFY COLUMN val BIGINT FIRST",
			"INSERT INTO ev2 VALUES (9, 2)",
			"ALTER TABLE ev2 RENAME COLUMN val TO amount",
			"RENAME TABLE ev2 TO ev3",
			"INSERT INTO ev3 VALUES (10, 3)",
		},
		want: []string{
			"GTID", "DDL ALTER TABLE ev2 MODIFY COLUMN val BIGINT FIRST", "VGTID",
			"BEGIN", "FIELD ev2 val:INT64 id:INT32", "ROW ev2 +[9 2]", "GTID", "COMMIT", "VGTID",
			"GTID", "DDL ALTER TABLE ev2 RENAME COLUMN val TO amount", "VGTID",
			"GTID", "DDL RENAME TABLE ev2 TO ev3", "VGTID",
			"BEGIN", "FIELD ev3 amount:INT64 id:INT32", "ROW ev3 +[10 3]", "GTID", "COMMIT", "VGTID",
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustExec(t, db, c.sql...)
			ts.t = t
			for _, ev := range ts.expect(c.want...) {
				checkStamps(t, ev)
			}
		})
	}
	ts.t = t
}

// checkStamps checks the fields every event carries: keyspace, shard, current_time, and for
// events read from the binlog its time and the transaction's GTID.
func checkStamps(t *testing.T, ev *binlogdata.VEvent) {
	t.Helper()
	if ev.Keyspace != "ks" || ev.Shard != "0" || ev.CurrentTime == 0 {
		t.Errorf("%v lacks keyspace, shard or current_time: %v", ev.Type, ev)
	}
	if ev.Type == binlogdata.VEventType_VGTID {
		if g := ev.Vgtid.GetShardGtids(); len(g) != 1 || g[0].Keyspace != "ks" || g[0].Shard != "0" || g[0].Gtid == "" {
			t.Errorf("VGTID is not a one-shard position: %v", ev.Vgtid)
		}
		return
	}
	if ev.Timestamp == 0 || ev.EventGtid == "" {
		t.Errorf("%v lacks the binlog timestamp or event_gtid: %v", ev.Type, ev)
	}
	if ev.Type == binlogdata.VEventType_ROW && (ev.RowEvent.Keyspace != "ks" || ev.RowEvent.Shard != "0") {
		t.Errorf("ROW lacks keyspace or shard: %v", ev.RowEvent)
	}
}
