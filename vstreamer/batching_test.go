package vstreamer

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

func expectBatches(t *testing.T, next func() string, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := next(); got != w {
			t.Fatalf("batch %d\n got %s\nwant %s", i+1, got, w)
		}
	}
}

// TestEventTypesFlushAtTerminalEvents ports Vitess's
// TestVStreamFilteredTerminalEventsFlushBufferedState: with event types GTID and DDL, each
// transaction's GTID is sent at its COMMIT although the COMMIT itself is left out, and no
// HEARTBEAT is sent. VGTID, the position, is always there.
func TestEventTypesFlushAtTerminalEvents(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE et_flush (id INT PRIMARY KEY, val VARBINARY(128))")
	e := newEngine(t)
	next := batchStream(t, e, Request{
		Position:          "current",
		Filter:            rules(&binlogdata.Rule{Match: "et_flush", Filter: "select * from et_flush"}),
		EventTypes:        []binlogdata.VEventType{binlogdata.VEventType_GTID, binlogdata.VEventType_DDL},
		HeartbeatInterval: 50 * time.Millisecond,
	})
	expectBatches(t, next, "GTID | VGTID")
	testkit.MustExec(t, db, "INSERT INTO et_flush VALUES (1, 'aaa')")
	expectBatches(t, next, "GTID | VGTID")
	// Idle for many heartbeat intervals: a HEARTBEAT left out sends nothing.
	time.Sleep(300 * time.Millisecond)
	testkit.MustExec(t, db, "INSERT INTO et_flush VALUES (2, 'bbb')")
	expectBatches(t, next, "GTID | VGTID")
	testkit.MustExec(t, db, "ALTER TABLE et_flush ADD COLUMN c INT")
	expectBatches(t, next, "GTID | DDL ALTER TABLE et_flush ADD COLUMN c INT | VGTID")
}

// TestEventTypesRowsOnly: asking for ROW alone sends the rows without BEGIN, FIELD, GTID or
// COMMIT; a copy's events are all sent, as in Vitess.
func TestEventTypesRowsOnly(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE et_rows (id INT PRIMARY KEY, v INT)", "INSERT INTO et_rows VALUES (1, 10)")
	e := newEngine(t)
	next := batchStream(t, e, Request{
		Filter:     rules(&binlogdata.Rule{Match: "et_rows"}),
		EventTypes: []binlogdata.VEventType{binlogdata.VEventType_ROW},
	})
	expectBatches(t, next,
		"BEGIN | FIELD et_rows id:INT32 v:INT32 | ROW et_rows +[1 10] | LASTPK | COPY_COMPLETED | COPY_COMPLETED | COMMIT | VGTID")
	testkit.MustExec(t, db, "INSERT INTO et_rows VALUES (2, 20)", "UPDATE et_rows SET v = 21 WHERE id = 2")
	got := next()
	if got == "ROW et_rows +[2 20] | VGTID" {
		got += " | " + next()
	}
	if want := "ROW et_rows +[2 20] | VGTID | ROW et_rows [2 20]>[2 21] | VGTID"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// TestPacketSize ports Vitess's TestBuffering with vstream-packet-size 10: a ROW event that
// would take the batch's row values past 10 bytes starts the next batch, and one larger
// than that goes alone.
func TestPacketSize(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE packet_test (id INT PRIMARY KEY, val VARBINARY(128))")
	e := newEngine(t)
	next := batchStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "packet_test"}), PacketSize: 10})
	expectBatches(t, next, "GTID | OTHER | VGTID")
	cases := []struct {
		name string
		sql  []string
		want []string
	}{{
		name: "all rows in one packet",
		sql:  []string{"BEGIN", "INSERT INTO packet_test VALUES (1, '123')", "INSERT INTO packet_test VALUES (2, '456')", "COMMIT"},
		want: []string{"BEGIN | FIELD packet_test id:INT32 val:VARBINARY | ROW packet_test +[1 123] | ROW packet_test +[2 456] | GTID | COMMIT | VGTID"},
	}, {
		name: "a new row causes the packet size to be exceeded; deletes too",
		sql: []string{"BEGIN", "INSERT INTO packet_test VALUES (3, '123456')", "INSERT INTO packet_test VALUES (4, '789012')",
			"DELETE FROM packet_test WHERE id = 3", "DELETE FROM packet_test WHERE id = 4", "COMMIT"},
		want: []string{
			"BEGIN | ROW packet_test +[3 123456]",
			"ROW packet_test +[4 789012]",
			"ROW packet_test -[3 123456]",
			"ROW packet_test -[4 789012] | GTID | COMMIT | VGTID",
		},
	}, {
		name: "a single row is itself bigger than the packet size",
		sql: []string{"BEGIN", "INSERT INTO packet_test VALUES (5, '123456')", "INSERT INTO packet_test VALUES (6, '12345678901')",
			"INSERT INTO packet_test VALUES (7, '23456')", "COMMIT"},
		want: []string{
			"BEGIN | ROW packet_test +[5 123456]",
			"ROW packet_test +[6 12345678901]",
			"ROW packet_test +[7 23456] | GTID | COMMIT | VGTID",
		},
	}, {
		name: "an update is bigger: it has a before and an after image",
		sql:  []string{"BEGIN", "INSERT INTO packet_test VALUES (8, '123')", "UPDATE packet_test SET val = '456' WHERE id = 8", "COMMIT"},
		want: []string{
			"BEGIN | ROW packet_test +[8 123]",
			"ROW packet_test [8 123]>[8 456] | GTID | COMMIT | VGTID",
		},
	}, {
		name: "a DDL is in its own packet",
		sql:  []string{"ALTER TABLE packet_test CHANGE val val VARCHAR(128)"},
		want: []string{"GTID | DDL ALTER TABLE packet_test CHANGE val val VARCHAR(128) | VGTID"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustExec(t, db, c.sql...)
			expectBatches(t, next, c.want...)
		})
	}
}

// TestPacketSizeCopy ports Vitess's TestStreamRowsMultiPacket: with a packet size of 10 the
// copy sends its rows once their values reach 10 bytes.
func TestPacketSizeCopy(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE packet_copy (id INT PRIMARY KEY, val VARBINARY(128))",
		"INSERT INTO packet_copy VALUES (1, '234'), (2, '6789'), (3, '1'), (4, '2345678901'), (5, '2')")
	e := newEngine(t)
	next := batchStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "packet_copy"}), PacketSize: 10})
	expectBatches(t, next,
		"BEGIN | FIELD packet_copy id:INT32 val:VARBINARY | ROW packet_copy +[1 234] +[2 6789] +[3 1]",
		"ROW packet_copy +[4 2345678901]",
		"ROW packet_copy +[5 2] | LASTPK | COPY_COMPLETED | COPY_COMPLETED | COMMIT | VGTID",
	)
}

// TestPacketSizeKeepsBatchBound: with a packet size the row values bound a batch, and the
// server's batch size still bounds the rest: many small transactions read back to back do
// not pile up in one batch.
func TestPacketSizeKeepsBatchBound(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE pb_seen (id INT PRIMARY KEY)", "CREATE TABLE pb_other (id INT PRIMARY KEY)")
	start := headPos(t)
	for i := 0; i < 50; i++ {
		testkit.MustExec(t, db, "INSERT INTO pb_other VALUES ("+strconv.Itoa(i)+")")
	}
	e := newEngine(t)
	next := batchStream(t, e, Request{Position: start, Filter: rules(&binlogdata.Rule{Match: "pb_seen"}),
		PacketSize: 1 << 20, MaxBatchBytes: 1000})
	events := 0
	for events < 200 {
		b := strings.Split(next(), " | ")
		// 1000 bytes hold about 31 events of 32 bytes; a transaction's last events may follow.
		if len(b) > 36 {
			t.Fatalf("a batch of %d events", len(b))
		}
		events += len(b)
	}
	if events != 200 {
		t.Errorf("%d events, want 200 (50 transactions of BEGIN, GTID, COMMIT, VGTID)", events)
	}
}

// TestBigTransactionInBatches: a transaction larger than the batch bound goes out in batches
// as it is read, never held whole: BEGIN in the first, COMMIT in the last, every row once
// and in order, and no batch's row values far above the bound.
func TestBigTransactionInBatches(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE bt_big (id INT PRIMARY KEY, note TEXT)")
	start := headPos(t)
	// 2,000 rows of 1 KiB: about 2 MiB in one transaction.
	testkit.MustExec(t, db, "INSERT INTO bt_big SELECT seq, REPEAT('x', 1024) FROM "+db.Seq(2000))
	const bound = 64 << 10
	bs := startBatches(t, newEngine(t), Request{Position: start, Filter: rules(&binlogdata.Rule{Match: "bt_big"}),
		MaxBatchBytes: bound})
	next, batches, began := 1, 0, false
	for committed := false; !committed; {
		b := bs.nextBatch(nil)
		batches++
		values := 0
		for _, ev := range b {
			switch ev.Type {
			case binlogdata.VEventType_BEGIN:
				if began {
					t.Fatalf("a second BEGIN in batch %d", batches)
				}
				began = true
			case binlogdata.VEventType_ROW:
				for _, rc := range ev.RowEvent.RowChanges {
					values += len(rc.After.Values)
					id, err := strconv.Atoi(string(rc.After.Values[:rc.After.Lengths[0]]))
					if err != nil || id != next {
						t.Fatalf("batch %d: row %q, want id %d", batches, rc.After.Values[:rc.After.Lengths[0]], next)
					}
					next++
				}
			case binlogdata.VEventType_COMMIT:
				committed = true
			default:
			}
		}
		if !began {
			t.Fatalf("batch %d before the BEGIN", batches)
		}
		if values > 2*bound {
			t.Fatalf("batch %d holds %d bytes of row values; the bound is %d", batches, values, bound)
		}
	}
	if next != 2001 {
		t.Errorf("the COMMIT came after %d rows, want 2000", next-1)
	}
	if batches < 16 {
		t.Errorf("the transaction went out in %d batches; about 2 MiB in batches of 64 KiB are 32", batches)
	}
}
