package encodertest_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// TestRowsQueryEncodesNothing: a MySQL transaction logged with binlog_rows_query_log_events=ON
// carries a ROWS_QUERY event before its rows. No format has a message of its own for it (the
// statement reaches Debezium's source.query through the rows' EventSource), and it changes
// none of the messages of the rows around it: every format encodes the transaction as it does
// without it.
func TestRowsQueryEncodesNothing(t *testing.T) {
	const sql = "insert into rq_test values (1, 'aaa')"
	src := func() *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "binlog.000001", StartPos: 400, EndPos: 500, Database: "db",
			GtidSet: "MySQL56/5ccc1033-44a8-11ea-bd59-0242ac190003:1-119", Query: sql, ServerId: 1}
	}
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG | query.MySqlFlag_NOT_NULL_FLAG)},
		{Name: "val", Type: query.Type_VARBINARY, ColumnType: "varbinary(600)", Charset: 63},
	}
	txn := func(withRowsQuery bool) []*binlogdata.VEvent {
		evs := []*binlogdata.VEvent{{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, Source: src(),
			EventGtid: "5ccc1033-44a8-11ea-bd59-0242ac190003:119"}}
		if withRowsQuery {
			evs = append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_ROWS_QUERY, Timestamp: 1700000000, Statement: sql})
		}
		return append(evs,
			&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, Source: src(),
				FieldEvent: &binlogdata.FieldEvent{TableName: "rq_test", Fields: fields}},
			&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: src(),
				EventGtid: "5ccc1033-44a8-11ea-bd59-0242ac190003:119",
				RowEvent:  &binlogdata.RowEvent{TableName: "rq_test", RowChanges: []*binlogdata.RowChange{{After: encodertest.Row("1", "aaa")}}}},
			&binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Gtid: "MySQL56/5ccc1033-44a8-11ea-bd59-0242ac190003:1-119"},
			&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000000, Source: src(),
				EventGtid: "5ccc1033-44a8-11ea-bd59-0242ac190003:119"})
	}
	for _, format := range server.Formats[1:] {
		t.Run(format, func(t *testing.T) {
			encode := func(evs []*binlogdata.VEvent) []*vstreamv1.EncodedMessage {
				t.Helper()
				enc, err := server.NewEncoder(format, map[string]string{}, encoder.Params{Clock: encodertest.Clock(1700000000000),
					Database: "db", Flavor: "mysql", Keyspace: "ks"})
				if err != nil {
					t.Fatal(err)
				}
				var out []*vstreamv1.EncodedMessage
				for _, ev := range evs {
					n := len(out)
					if out, err = enc.Encode(out, ev); err != nil {
						t.Fatalf("%s: %v", ev.Type, err)
					}
					if ev.Type == binlogdata.VEventType_ROWS_QUERY && len(out) != n {
						t.Errorf("ROWS_QUERY became %d messages", len(out)-n)
					}
				}
				// Messages may point into an encoder's buffers: keep copies.
				for i := range out {
					out[i] = proto.CloneOf(out[i])
				}
				return out
			}
			plain, with := encode(txn(false)), encode(txn(true))
			if len(plain) == 0 {
				t.Fatal("the transaction encodes to no message: the test shows nothing")
			}
			if len(with) != len(plain) {
				t.Fatalf("%d messages with ROWS_QUERY, %d without", len(with), len(plain))
			}
			for i := range plain {
				if !proto.Equal(with[i], plain[i]) {
					t.Errorf("message %d differs\nwith ROWS_QUERY: %v\nwithout:        %v", i, with[i], plain[i])
				}
			}
		})
	}
}
