package vstreamer

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// fixtureEvents splits a file of captured events, logged one after the other, by the sizes
// their headers give.
func fixtureEvents(t testing.TB, name string) [][]byte {
	t.Helper()
	b := fixture(t, name)
	var out [][]byte
	for len(b) > 0 {
		if len(b) < replication.EventHeaderSize {
			t.Fatalf("%s: %d bytes left, less than a header", name, len(b))
		}
		size := int(binary.LittleEndian.Uint32(b[9:]))
		if size < replication.EventHeaderSize || size > len(b) {
			t.Fatalf("%s: event of %d bytes in %d", name, size, len(b))
		}
		out = append(out, b[:size])
		b = b[size:]
	}
	return out
}

// placed moves an event that has its checksum to end at logPos, with the checksum of its
// new bytes.
func placed(ev []byte, logPos uint32) []byte {
	out := append([]byte(nil), ev[:len(ev)-4]...)
	binary.LittleEndian.PutUint32(out[13:], logPos)
	return binary.LittleEndian.AppendUint32(out, crc32IEEE(out))
}

// rowsQueryTxn is a transaction with the captured ROWS_QUERY_LOG_EVENT, TABLE_MAP_EVENT and
// WRITE_ROWS_EVENT of fixture name (testdata/mysql8/README.md), in the GTID, BEGIN and XID
// of the captured compressed transaction, moved around them.
func rowsQueryTxn(t testing.TB, name string) []*replication.BinlogEvent {
	t.Helper()
	captured := fixtureEvents(t, name)
	if len(captured) != 3 {
		t.Fatalf("%s holds %d events, want ROWS_QUERY, TABLE_MAP and WRITE_ROWS", name, len(captured))
	}
	rowsQuery, rows := captured[0], captured[2]
	start := binary.LittleEndian.Uint32(rowsQuery[13:]) - binary.LittleEndian.Uint32(rowsQuery[9:])
	end := binary.LittleEndian.Uint32(rows[13:])
	inner := unpacked(t, withChecksum(t, fixture(t, "payload_insert.hex")), 0)
	begin, xid := inner[0], inner[3]
	gtidEnd := start - uint32(len(begin))
	return parseBinlog(t,
		formatEvent(),
		gtidEvent(t, gtidEnd),
		placed(begin, start),
		captured[0], captured[1], captured[2],
		placed(xid, end+uint32(len(xid))),
	)
}

// TestRowsQueryEvent ports Vitess's TestRowsQueryEvent to captured MySQL events: with
// binlog_rows_query_log_events=ON, MySQL logs the statement before its rows, and the stream
// sends it as ROWS_QUERY where it was logged, after BEGIN and before the FIELD and ROW it
// describes. It is sent whatever tables the filter selects, and only when event_types lets
// it through.
func TestRowsQueryEvent(t *testing.T) {
	testkit.MustExec(t, db, "CREATE DATABASE IF NOT EXISTS fianna",
		"CREATE TABLE IF NOT EXISTS fianna.t (id INT NOT NULL DEFAULT '0')")
	const start = "MySQL56/" + payloadUUID + ":1-118"
	cases := []struct {
		name    string
		fixture string
		req     Request
		want    []string
	}{{
		name:    "source",
		fixture: "rows_query_source.hex",
		want: []string{"BEGIN", "ROWS_QUERY insert into t values(6)", "FIELD t id:INT32", "ROW t +[6]",
			"GTID", "COMMIT", "VGTID"},
	}, {
		name:    "replica",
		fixture: "rows_query_replica.hex",
		want: []string{"BEGIN", "ROWS_QUERY insert into t values(11)", "FIELD t id:INT32", "ROW t +[11]",
			"GTID", "COMMIT", "VGTID"},
	}, {
		name:    "table filtered out",
		fixture: "rows_query_source.hex",
		req: Request{Filter: rules(&binlogdata.Rule{Match: "t", Filter: "exclude"},
			&binlogdata.Rule{Match: "/.*"})},
		want: []string{"BEGIN", "ROWS_QUERY insert into t values(6)", "GTID", "COMMIT", "VGTID"},
	}, {
		name:    "event types without ROWS_QUERY",
		fixture: "rows_query_source.hex",
		req:     Request{EventTypes: []binlogdata.VEventType{binlogdata.VEventType_ROW, binlogdata.VEventType_COMMIT}},
		want:    []string{"ROW t +[6]", "COMMIT", "VGTID"},
	}, {
		name:    "event types ROWS_QUERY alone",
		fixture: "rows_query_source.hex",
		req:     Request{EventTypes: []binlogdata.VEventType{binlogdata.VEventType_ROWS_QUERY}},
		want:    []string{"ROWS_QUERY insert into t values(6)", "VGTID"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: rowsQueryTxn(t, c.fixture)}
			req := c.req
			req.Position = start
			evs, err := collect(t, replayEngine(t, "fianna", src), req, len(c.want))
			if err != nil {
				t.Fatal(err)
			}
			if got := evtext.Shorts(evs); !slices.Equal(got, c.want) {
				t.Fatalf("events\n got %q\nwant %q", got, c.want)
			}
			for _, ev := range evs {
				if ev.Type == binlogdata.VEventType_ROWS_QUERY && (ev.Timestamp != 1481028180 && ev.Timestamp != 1481028631 ||
					ev.Keyspace != "ks" || ev.EventGtid != payloadUUID+":119") {
					t.Errorf("ROWS_QUERY = %v, want the captured event's timestamp, the keyspace and event_gtid %s:119", ev, payloadUUID)
				}
			}
		})
	}

	// With sources, the statement is also the source's query of the rows it logged.
	src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: rowsQueryTxn(t, "rows_query_source.hex")}
	evs, err := collect(t, replayEngine(t, "fianna", src), Request{Position: start, WithSource: true}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if row := evs[3]; row.Type != binlogdata.VEventType_ROW || row.Source.GetQuery() != "insert into t values(6)" ||
		row.Source.GetStartPos() != 740 || row.Source.GetEndPos() != 780 || row.Source.GetServerId() != 2263333 {
		t.Errorf("ROW = %v, want the captured WRITE_ROWS at 740-780 of server 2263333 with query %q", row, "insert into t values(6)")
	}
}

// TestRowsQueryCountsTowardBatch: a ROWS_QUERY's statement counts toward max_batch_bytes, as
// a statement-based change's does: here it alone takes the batch over its size (BEGIN and
// ROWS_QUERY count 32 bytes each, the 23-byte statement takes them over 70), and the batch goes
// out after it; without the statement it would go out after the FIELD.
func TestRowsQueryCountsTowardBatch(t *testing.T) {
	testkit.MustExec(t, db, "CREATE DATABASE IF NOT EXISTS fianna",
		"CREATE TABLE IF NOT EXISTS fianna.t (id INT NOT NULL DEFAULT '0')")
	src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: rowsQueryTxn(t, "rows_query_source.hex")}
	next := batchStream(t, replayEngine(t, "fianna", src), Request{Position: "MySQL56/" + payloadUUID + ":1-118", MaxBatchBytes: 70})
	expectBatches(t, next,
		"BEGIN | ROWS_QUERY insert into t values(6)",
		"FIELD t id:INT32 | ROW t +[6] | GTID | COMMIT | VGTID")
}
