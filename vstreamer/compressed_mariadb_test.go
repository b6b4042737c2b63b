package vstreamer

import (
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestMariaDBCompressedBinlog: with log_bin_compress MariaDB logs rows and statements as
// compressed events (WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT_V1, QUERY_COMPRESSED_EVENT),
// which go-mysql decompresses; they stream exactly as uncompressed ones.
func TestMariaDBCompressedBinlog(t *testing.T) {
	skipOnMySQL(t, "log_bin_compress and its compressed events are MariaDB's (MySQL's compressed payloads: TestMySQLCompressedTransactions)")
	testkit.MustExec(t, db, "CREATE TABLE zrows (id INT PRIMARY KEY, body TEXT)", "SET GLOBAL log_bin_compress = ON", "SET GLOBAL log_bin_compress_min_len = 10")
	t.Cleanup(func() {
		testkit.MustExec(t, db, "SET GLOBAL log_bin_compress = OFF", "SET GLOBAL log_bin_compress_min_len = 256")
	})
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "zrows"})})
	ts.expect("GTID", "OTHER", "VGTID")
	long := strings.Repeat("compressible ", 100)
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"INSERT INTO zrows VALUES (1, '" + long + "')",
		"UPDATE zrows SET body = 'short' WHERE id = 1",
		"DELETE FROM zrows WHERE id = 1",
		"ALTER TABLE zrows ADD COLUMN note VARCHAR(10) /* a statement long enough to be compressed */",
	} {
		if _, err := conn.Execute(q); err != nil {
			t.Fatal(err)
		}
	}
	ts.expect(
		"BEGIN", "FIELD zrows id:INT32 body:TEXT", "ROW zrows +[1 "+`"`+long+`"`+"]", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW zrows [1 "+`"`+long+`"`+"]>[1 short]", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW zrows -[1 short]", "GTID", "COMMIT", "VGTID",
		"GTID", "DDL ALTER TABLE zrows ADD COLUMN note VARCHAR(10) /* a statement long enough to be compressed */", "VGTID",
	)
	// The server did log them compressed.
	st, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file := resultString(st, 0, 0)
	st.Close()
	r, err := conn.Execute("SHOW BINLOG EVENTS IN '" + file + "'")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	types := map[string]bool{}
	for i := range r.RowNumber() {
		types[resultStringByName(r, i, "Event_type")] = true
	}
	for _, want := range []string{"Write_rows_compressed_v1", "Update_rows_compressed_v1", "Delete_rows_compressed_v1", "Query_compressed"} {
		if !types[want] {
			t.Errorf("the binlog has no %s event; it has %v", want, types)
		}
	}
}
