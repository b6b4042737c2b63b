// Package formattest runs one source workload through a real MariaDB or MySQL and a running server in
// any output format, for the encoders' integration tests. A test decodes the messages with a
// decoder of its own (never the encoder's code), applies them to an image of the table and
// compares it with the source through Result.Check.
//
// The workload, on table alltypes (a column of every MySQL type, and on MariaDB of its own
// UUID, INET4 and INET6; primary key id):
//
//  1. Before the stream starts, rows 1-3 are inserted: row 1 holds extreme values, row 2 is
//     all NULL, row 3 ordinary values. The stream starts with no position, so these rows
//     arrive as the table's copy (snapshot reads).
//  2. After the copy: rows 4 and 5 in one multi-row INSERT; an UPDATE of row 1; an UPDATE
//     moving row 3 to id 30; a DELETE of row 2; one transaction with an INSERT (6), an
//     UPDATE (4) and a DELETE (5).
//  3. DDL: ALTER TABLE alltypes ADD COLUMN extra VARCHAR(10); then an INSERT (7) and an
//     UPDATE (1) that set extra.
//
// Values are compared in the server's text form (what SELECT returns over the text protocol, in a
// UTC session): a decoder turns its format's representation back into that text.
package formattest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/position"
)

// Table is the workload's table.
const Table = "alltypes"

var (
	db   *testdb.Server
	runs atomic.Int64
)

// Main is the body of a test package's TestMain: it starts the database server the runs use,
// of the flavor testdb.FlavorEnv names.
func Main(m *testing.M) int {
	return testdb.RunTests(m, testdb.Options{Database: "formattest"}, &db)
}

// Flavor is the flavor of the server the runs use, for decoders whose expectations differ
// by source (a connector's name, the form of a GTID).
func Flavor() testdb.Flavor { return db.Flavor() }

// Connector is the name of Debezium's connector for the server's flavor, which the
// Debezium-shaped formats carry in their source blocks and schema names.
func Connector() string {
	if db.Flavor() == testdb.MySQL {
		return "mysql"
	}
	return "mariadb"
}

// Column is one column of the table at the end of the workload.
type Column struct {
	Name string
	// DataType is information_schema's DATA_TYPE, e.g. "bigint"; ColumnType its COLUMN_TYPE,
	// e.g. "bigint(20) unsigned".
	DataType, ColumnType string
}

// Row is a row as column name → MariaDB text value; nil is NULL.
type Row map[string]*string

// Result is what one run produced.
type Result struct {
	// Database is the run's own database; Table holds the rows.
	Database string
	// Messages are the encoded messages in stream order.
	Messages []*vstreamv1.EncodedMessage
	// Responses are the stream's responses, for tests of positions.
	Responses []*vstreamv1.StreamResponse
	// Columns are the table's columns after the workload, in order.
	Columns []Column
	// Want is the table after the workload: id (decimal text) → row.
	Want map[string]Row
	// DDL are the DDL statements the workload ran while streaming.
	DDL []string
	// CopiedIDs are the ids of the rows that existed before the stream started.
	CopiedIDs []string

	format  string
	options map[string]string
	// end is the source's position after the workload.
	end position.Position
}

// Column returns a column by name.
func (r *Result) Column(name string) (Column, bool) {
	for _, c := range r.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// The workload runs on both flavors. MariaDB's own types (UUID, INET4, INET6) are written in
// MariaDB's executable comments, /*M! ... */: MariaDB runs what they hold, MySQL reads them as
// comments, so the same statements cover those types on MariaDB and leave them out on MySQL.
const createTable = `CREATE TABLE alltypes (
	id INT NOT NULL PRIMARY KEY,
	ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED,
	mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,
	f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(30,10),
	dt DATE, dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, tm TIME, tm3 TIME(3), y YEAR,
	c CHAR(5), vc VARCHAR(64), tx TEXT, bn BINARY(4), vb VARBINARY(10), bl BLOB,
	bt BIT(10), b1 BIT(1), e ENUM('a','b','c'), st SET('x','y','z'), j JSON, g GEOMETRY,
	l1 VARCHAR(20) CHARACTER SET latin1, gk VARCHAR(20) CHARACTER SET gbk, b5 CHAR(10) CHARACTER SET big5,
	sj TEXT CHARACTER SET sjis, kr VARCHAR(20) CHARACTER SET euckr, k8 VARCHAR(20) CHARACTER SET koi8r,
	u2 VARCHAR(20) CHARACTER SET ucs2, u16 VARCHAR(20) CHARACTER SET utf16, u32 TEXT CHARACTER SET utf32,
	cb CHAR(8) COLLATE utf8mb4_bin, vcb VARCHAR(20) COLLATE utf8mb4_bin, txb TEXT COLLATE utf8mb4_bin,
	eb ENUM('p','q') COLLATE utf8mb4_bin, sb SET('p','q') COLLATE utf8mb4_bin /*M!, uu UUID, i4 INET4, i6 INET6*/
) DEFAULT CHARSET=utf8mb4`

const allColumns = "id, ti, tu, si, su, mi, mu, i, iu, bi, bu, f, d, dec1, dec2, dt, dtm, dtm6, ts, tm, tm3, y, c, vc, tx, bn, vb, bl, bt, b1, e, st, j, g, l1, gk, b5, sj, kr, k8, u2, u16, u32, cb, vcb, txb, eb, sb /*M!, uu, i4, i6*/"

var copiedRows = []string{
	`(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
	  12510357, -3.141592653589793, -12345678.90, 12345678901234567890.1234567890,
	  '1000-01-01', '9999-12-31 23:59:59', '2020-02-29 12:34:56.789012', '2038-01-19 03:14:07.499', '-838:59:59', '12:34:56.789', 2155,
	  'ab', 'héllo 😀 汉字 <&>=''"\\ \n\t ', 'long text', X'00FF10', X'000102FF', X'DEADBEEF',
	  b'1010101010', b'1', 'b', 'x,z', '{"a": [1, 2.5, "x"], "b": null}', ST_GeomFromText('POINT(1 2)'),
	  'café € ÿ', '中文 汉字', '中文 ', '日本語テキスト', '한국어', 'Привет', 'ÿ Ā ucs2', 'é 😀 utf16', '😀 utf32',
	  'Bin ü', 'VarBin 😀', 'text bin', 'q', 'p,q' /*M!, '123e4567-e89b-12d3-a456-426614174000', '192.168.0.1', '2001:db8::ff00:42:8329'*/)`,
	`(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL /*M!, NULL, NULL, NULL*/)`,
	`(3, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0.001, 1e-5, 0.50, -0.0000000001,
	  '1970-01-01', '1970-01-01 00:00:00', '2000-01-01 00:00:00.000001', '1970-01-01 00:00:01.000', '00:00:00', '-00:00:01.500', 1901,
	  '', '', '', X'', X'', X'', b'0', b'0', 'a', '', '[]', ST_GeomFromText('LINESTRING(0 0, 1 1, 2 5)'),
	  '', '', '', '', '', '', '', '', '', '', '', '', 'p', '' /*M!, 'ffffffff-ffff-1fff-8fff-ffffffffffff', '0.0.0.0', '::'*/)`,
}

// workload is what runs after the copy, one inner slice per transaction (or DDL).
var workload = [][]string{
	{`INSERT INTO alltypes (` + allColumns + `) VALUES
	  (4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9223372036854775808, 86, 95.5, 1.50, 1, '2024-06-30', '2024-06-30 23:59:59', '2024-06-30 23:59:59.999999',
	   '2024-06-30 21:00:00.001', '23:59:59', '838:59:59.000', 2024, 'abcde', 'café', 'x', X'01020304', X'FF', X'00', b'1111111111', b'1', 'c', 'x,y,z',
	   '{"k": "v"}', ST_GeomFromText('POINT(-1.5 2.25)'), 'naïve', '汉', '繁體', 'ｶﾀｶﾅ', '서울', 'мир', 'ä', '𝄞', 'ñ',
	   'b4', 'vb4', 'tb4', 'p', 'q' /*M!, '01234567-89ab-4def-8123-456789abcdef', '10.0.0.1', '::ffff:1.2.3.4'*/),
	  (5, NULL, 1, NULL, 1, NULL, 1, NULL, 1, NULL, 1, NULL, NULL, NULL, NULL, '2001-02-03', NULL, NULL, NULL, NULL, NULL, NULL, 'z', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'a', 'y', NULL, NULL,
	   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL /*M!, NULL, NULL, NULL*/)`},
	{`UPDATE alltypes SET vc = 'changed', gk = '更新', l1 = 'Ünïcödé', u16 = '更新 😀', dec1 = 99999999.99, ts = '2001-09-09 01:46:40.123', bt = b'0000000001', st = 'y', j = '{"a": 2}',
	  vcb = 'Changed', eb = 'p' /*M!, uu = '00000000-0000-0000-0000-000000000001', i6 = '::1'*/ WHERE id = 1`},
	{`UPDATE alltypes SET id = 30 WHERE id = 3`},
	{`DELETE FROM alltypes WHERE id = 2`},
	{"BEGIN",
		`INSERT INTO alltypes (id, vc, f, d, tm) VALUES (6, 'six', -0.25, 1e300, '-01:02:03')`,
		`UPDATE alltypes SET vc = 'four', bu = 0, b1 = b'0' WHERE id = 4`,
		`DELETE FROM alltypes WHERE id = 5`,
		"COMMIT"},
	{`ALTER TABLE alltypes ADD COLUMN extra VARCHAR(10)`},
	{`INSERT INTO alltypes (id, vc, extra) VALUES (7, 'seven', 'e7')`},
	{`UPDATE alltypes SET extra = 'u1' WHERE id = 1`},
}

// Run runs the workload through a server streaming in format with options, and returns
// what the stream sent and what the source holds afterwards.
func Run(t *testing.T, format string, options map[string]string) *Result {
	t.Helper()
	if db == nil {
		t.Fatal("formattest: call formattest.Main from TestMain")
	}
	r := &Result{Database: fmt.Sprintf("ft%d_%d", os.Getpid()%10000, runs.Add(1))}
	for _, w := range workload {
		if strings.HasPrefix(w[0], "ALTER") {
			r.DDL = append(r.DDL, w[0])
		}
	}
	conn, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // setup only; the data is committed by then
	exec := func(sqls ...string) {
		t.Helper()
		for _, q := range sqls {
			if _, err := conn.Execute(q); err != nil {
				t.Fatalf("formattest: %s: %v", q, err)
			}
		}
	}
	exec("SET time_zone = '+00:00'", "CREATE DATABASE "+r.Database, "USE "+r.Database, createTable)
	for i, row := range copiedRows {
		exec("INSERT INTO alltypes (" + allColumns + ") VALUES " + row)
		r.CopiedIDs = append(r.CopiedIDs, strconv.Itoa(i+1))
	}

	r.format, r.options = format, options
	rec, stop := r.open(t, &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: r.Database, Shard: "0"}}})
	defer stop()
	// The copy is over at the first position without copy state.
	rec.waitFor(t, "the copy to finish", func(resp *vstreamv1.StreamResponse) bool {
		sg := resp.GetPosition().GetShardGtids()
		return len(sg) == 1 && len(sg[0].GetTablePKs()) == 0
	})
	for _, w := range workload {
		exec(w...)
	}
	r.end = readPosition(t)
	r.Responses = rec.untilEnd(t, r.end)
	for _, resp := range r.Responses {
		r.Messages = append(r.Messages, resp.GetMessages()...)
	}
	r.Columns = readColumns(t, conn, r.Database)
	r.Want = readRows(t, conn, r.Columns)
	return r
}

// Resume streams the run's format again from a position a message or response carried,
// to where the run ended, and returns the messages.
func (r *Result) Resume(t *testing.T, from *binlogdata.VGtid) []*vstreamv1.EncodedMessage {
	t.Helper()
	rec, stop := r.open(t, from)
	defer stop()
	var msgs []*vstreamv1.EncodedMessage
	for _, resp := range rec.untilEnd(t, r.end) {
		msgs = append(msgs, resp.GetMessages()...)
	}
	return msgs
}

// open starts a stream of the run's format from a position through a new server.
func (r *Result) open(t *testing.T, from *binlogdata.VGtid) (*receiver, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	addr := testserver.Serve(t, db, r.Database)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop := func() {
		cancel()
		_ = cc.Close() // the test is done with the connection; its stream is already cancelled
	}
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	if err := st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid: from, Format: r.format, FormatOptions: r.options,
	}}}); err != nil {
		stop()
		t.Fatal(err)
	}
	rec := &receiver{}
	go rec.run(st)
	return rec, stop
}

// untilEnd waits for the response whose position contains end and returns the responses up
// to it.
func (r *receiver) untilEnd(t *testing.T, end position.Position) []*vstreamv1.StreamResponse {
	t.Helper()
	r.waitFor(t, "the stream to reach "+end.String(), func(resp *vstreamv1.StreamResponse) bool {
		sg := resp.GetPosition().GetShardGtids()
		if len(sg) != 1 {
			return false
		}
		p, err := position.Parse(sg[0].GetGtid())
		return err == nil && p.Contains(end)
	})
	return r.take()
}

type receiver struct {
	mu    sync.Mutex
	resps []*vstreamv1.StreamResponse
	err   error
	seen  int
}

func (r *receiver) run(st vstreamv1.VStreamService_StreamClient) {
	for {
		resp, err := st.Recv()
		r.mu.Lock()
		if err != nil {
			r.err = err
			r.mu.Unlock()
			return
		}
		r.resps = append(r.resps, resp)
		r.mu.Unlock()
	}
}

// waitFor waits until a response not yet looked at satisfies cond.
func (r *receiver) waitFor(t *testing.T, what string, cond func(*vstreamv1.StreamResponse) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.mu.Lock()
		for ; r.seen < len(r.resps); r.seen++ {
			if cond(r.resps[r.seen]) {
				r.seen++
				r.mu.Unlock()
				return
			}
		}
		err := r.err
		r.mu.Unlock()
		if err != nil {
			t.Fatalf("formattest: the stream ended while waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("formattest: timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *receiver) take() []*vstreamv1.StreamResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resps[:r.seen:r.seen]
}

type sqlConn = *client.Conn

func readPosition(t *testing.T) position.Position {
	t.Helper()
	s, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	p, err := position.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readColumns(t *testing.T, conn sqlConn, database string) []Column {
	t.Helper()
	res, err := conn.Execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", database, Table)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var cols []Column
	for i := 0; i < res.RowNumber(); i++ {
		var c Column
		for j, dst := range []*string{&c.Name, &c.DataType, &c.ColumnType} {
			s, _ := res.GetString(i, j)
			*dst = strings.Clone(s)
		}
		cols = append(cols, c)
	}
	return cols
}

func readRows(t *testing.T, conn sqlConn, cols []Column) map[string]Row {
	t.Helper()
	res, err := conn.Execute("SELECT * FROM " + Table)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	rows := map[string]Row{}
	for i := 0; i < res.RowNumber(); i++ {
		row := Row{}
		for j, c := range cols {
			v, _ := res.GetValue(i, j)
			if v == nil {
				row[c.Name] = nil
				continue
			}
			s, _ := res.GetString(i, j)
			s = strings.Clone(s)
			row[c.Name] = &s
		}
		rows[*row["id"]] = row
	}
	return rows
}

// Check compares rows decoded from a format (id → column → MariaDB text, nil for NULL) with
// the source, reporting every difference. A column the decoded row lacks counts as NULL only
// for extra, which the DDL added after the rows' last change. Comparison is exact except:
// FLOAT and DOUBLE compare as numbers (MariaDB prints FLOAT with 6 digits), JSON compares
// parsed, and BINARY ignores trailing zero bytes (canal prints BINARY(n) unpadded).
func (r *Result) Check(t *testing.T, got map[string]Row) {
	t.Helper()
	var ids []string
	for id := range r.Want {
		ids = append(ids, id)
	}
	for id := range got {
		if _, ok := r.Want[id]; !ok {
			t.Errorf("decoded row id=%s does not exist in the source", id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		g, ok := got[id]
		if !ok {
			t.Errorf("source row id=%s is missing from the decoded image", id)
			continue
		}
		for name := range g {
			if _, ok := r.Column(name); !ok {
				t.Errorf("row id=%s: decoded column %s does not exist in the source", id, name)
			}
		}
		for _, c := range r.Columns {
			want := r.Want[id][c.Name]
			v, present := g[c.Name]
			if !present && c.Name != "extra" {
				t.Errorf("row id=%s: column %s is missing", id, c.Name)
				continue
			}
			if !Same(c, want, v) {
				t.Errorf("row id=%s column %s (%s): got %s, want %s", id, c.Name, c.ColumnType, show(v), show(want))
			}
		}
	}
}

// Same reports whether a decoded value equals the source value of a column (see Check).
func Same(c Column, want, got *string) bool {
	if want == nil || got == nil {
		return want == got
	}
	w, g := *want, *got
	switch c.DataType {
	case "float", "double":
		wf, err1 := strconv.ParseFloat(w, 64)
		gf, err2 := strconv.ParseFloat(g, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		tol := 1e-12
		if c.DataType == "float" {
			tol = 1e-5
		}
		return wf == gf || math.Abs(wf-gf) <= tol*math.Max(math.Abs(wf), math.Abs(gf))
	case "json", "longtext":
		if c.DataType == "longtext" && !json.Valid([]byte(w)) {
			return w == g
		}
		var wv, gv any
		if json.Unmarshal([]byte(w), &wv) != nil || json.Unmarshal([]byte(g), &gv) != nil {
			return false
		}
		wj, _ := json.Marshal(wv)
		gj, _ := json.Marshal(gv)
		return string(wj) == string(gj)
	case "binary":
		return strings.TrimRight(w, "\x00") == strings.TrimRight(g, "\x00")
	}
	return w == g
}

func show(v *string) string {
	if v == nil {
		return "NULL"
	}
	return strconv.Quote(*v)
}

// Members reads the labels of a column type such as "enum('a','b')" (the workload's labels
// hold no quotes or commas).
func Members(columnType string) []string {
	inner := columnType[strings.IndexByte(columnType, '(')+1 : strings.LastIndexByte(columnType, ')')]
	var out []string
	for _, p := range strings.Split(inner, ",") {
		out = append(out, strings.Trim(p, "'"))
	}
	return out
}
