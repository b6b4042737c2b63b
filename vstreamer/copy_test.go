package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/applier"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

type image = applier.Image

func newImage(keys map[string][]string) *image { return applier.New(keys) }

var copyKeys = applier.WorkloadKeys

func setupCopyTables(t testing.TB) { applier.SetupWorkload(t, db) }

func startWriter(t testing.TB, seed uint64, pause time.Duration) *applier.Writer {
	return applier.StartWriter(t, db, "test", seed, pause)
}

var copyFilter = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^cp_"}}}

// waitCaughtUp reads events into im until the image's position holds the server's.
func waitCaughtUp(t testing.TB, ts *testStream, im *image) {
	t.Helper()
	want := headPos(t)
	for {
		if im.Last != nil && im.Last.ShardGtids[0].Gtid == want && im.Pending() == 0 {
			return
		}
		im.Add(ts.next(false))
	}
}

func TestCopyThenCatchUpUnderWrites(t *testing.T) {
	setupCopyTables(t)
	w := startWriter(t, 1, time.Millisecond)
	e := newEngine(t)
	im := newImage(copyKeys)
	ts := startStream(t, e, Request{Position: "", Filter: copyFilter, CopyChunkRows: 17})
	for !im.Copied {
		im.Add(ts.next(false))
	}
	w.Finish(t)
	waitCaughtUp(t, ts, im)
	im.Check(t, db, "test")
	if len(im.Last.ShardGtids[0].TablePKs) != 0 {
		t.Errorf("a VGtid after the copy still carries table_p_ks: %v", im.Last)
	}
	// The stream goes on after the copy.
	testkit.MustExec(t, db, "INSERT INTO cp_a VALUES (999999, 'late', 1, NOW(), 0)")
	waitCaughtUp(t, ts, im)
	im.Check(t, db, "test")
}

// TestCopyResumeAnywhere breaks the stream at many points of a copy under writes (between
// chunks, mid-chunk, between tables, after the last table) and resumes from the last VGtid:
// the image still equals the source and no row arrives twice.
func TestCopyResumeAnywhere(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			setupCopyTables(t)
			w := startWriter(t, seed, 5*time.Millisecond)
			e := newEngine(t)
			im := newImage(copyKeys)
			rng := rand.New(rand.NewPCG(seed, 3))
			req := Request{Position: "", Filter: copyFilter, CopyChunkRows: 13}
			breaks := 0
			for !im.Copied {
				ts := startStream(t, e, req)
				// Each attempt gets one to three resume points, then breaks up to a few
				// events later: between chunks, mid-chunk, mid-transaction, between tables.
				// Counting only the resume points that close a copy chunk keeps the copy
				// moving while the writer adds transactions to catch up on.
				chunk := false
				for chunks, want := 0, 1+rng.IntN(3); chunks < want && !im.Copied; {
					ev := ts.next(false)
					chunk = chunk || ev.Type == binlogdata.VEventType_LASTPK
					if im.Add(ev) && chunk {
						chunks++
						chunk = false
					}
				}
				for n := rng.IntN(9); n > 0 && !im.Copied; n-- {
					im.Add(ts.next(false))
				}
				ts.stop()
				im.Abort()
				breaks++
				if im.Last != nil {
					sg := im.Last.ShardGtids[0]
					req = Request{Position: sg.Gtid, TableLastPKs: sg.TablePKs, Filter: copyFilter, CopyChunkRows: 13}
				}
			}
			w.Finish(t)
			ts := startStream(t, e, req)
			waitCaughtUp(t, ts, im)
			im.Check(t, db, "test")
			if breaks < 10 {
				t.Errorf("only %d breaks", breaks)
			}
		})
	}
}

func TestCopyKeys(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE ck_empty (id INT PRIMARY KEY)",
		"CREATE TABLE ck_uk (code VARCHAR(10) NOT NULL, n INT, UNIQUE KEY (code))",
		"INSERT INTO ck_uk VALUES ('b', 2), ('a', 1), ('c', 3)",
		"CREATE TABLE ck_nullable_uk (code VARCHAR(10) NULL, UNIQUE KEY (code))",
		"CREATE TABLE ck_none (v INT)",
		"INSERT INTO ck_none VALUES (3), (1), (2)",
	)
	e := newEngine(t)
	t.Run("empty table closes its FIELD group", func(t *testing.T) {
		ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "ck_empty"})})
		ts.expect("BEGIN", "FIELD ck_empty id:INT32", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	})
	t.Run("unique key when there is no primary key", func(t *testing.T) {
		ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "ck_uk"})})
		evs := ts.expect("BEGIN", "FIELD ck_uk code:VARCHAR n:INT32", "ROW ck_uk +[a 1] +[b 2] +[c 3]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
		lp := evs[3].LastPKEvent
		if !lp.Completed || string(lp.TableLastPK.Lastpk.Rows[0].Values) != "c" || lp.TableLastPK.Lastpk.Fields[0].Name != "code" {
			t.Errorf("LASTPK = %v", lp)
		}
	})
	for _, table := range []string{"ck_none", "ck_nullable_uk"} {
		t.Run("no usable key: "+table, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := e.Stream(ctx, Request{Filter: rules(&binlogdata.Rule{Match: table})}, func([]*binlogdata.VEvent) error { return nil })
			if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "test."+table) {
				t.Fatalf("err = %v, want ErrNoKey naming test.%s", err, table)
			}
		})
	}
	t.Run("text key in another character set, one row a chunk", func(t *testing.T) {
		// Each chunk starts after the last key read, written in the key's own bytes.
		testkit.MustExec(t, db, "CREATE TABLE ck_gbk (code VARCHAR(10) CHARACTER SET gbk PRIMARY KEY, n INT)",
			"INSERT INTO ck_gbk VALUES ('中', 1), ('文', 2), ('a', 3), ('é', 4), ('z', 5)")
		ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "ck_gbk"}), CopyChunkRows: 1})
		var got []string
		for {
			ev := ts.next(false)
			if ev.Type == binlogdata.VEventType_ROW {
				for _, rc := range ev.RowEvent.RowChanges {
					got = append(got, string(evtext.Cells(rc.After)[1]))
				}
			}
			if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.LastPKEvent.GetTableLastPK().GetTableName() == "" {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"1", "2", "3", "4", "5"}) {
			t.Errorf("rows copied: %v, want each of 1-5 once", got)
		}
	})
	t.Run("without a key, in one consistent read when asked", func(t *testing.T) {
		ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "ck_none"}), CopyTablesWithoutKey: true})
		ts.expect("BEGIN", "FIELD ck_none v:INT32", "ROW", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	})
}

func TestCopyTablesToCopyAndAddingATable(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE tc_one (id INT PRIMARY KEY)", "INSERT INTO tc_one VALUES (1), (2)",
		"CREATE TABLE tc_two (id INT PRIMARY KEY)", "INSERT INTO tc_two VALUES (5)",
	)
	e := newEngine(t)
	flt := rules(&binlogdata.Rule{Match: "/^tc_"})
	ts := startStream(t, e, Request{Filter: flt, TablesToCopy: []string{"tc_two"}})
	evs := ts.expect("BEGIN", "FIELD tc_two id:INT32", "ROW tc_two +[5]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	pos := evs[7].Vgtid.ShardGtids[0].Gtid
	// Tables left out of the copy stream from the copy's start.
	testkit.MustExec(t, db, "INSERT INTO tc_one VALUES (3)")
	ts.expect("BEGIN", "FIELD tc_one id:INT32", "ROW tc_one +[3]", "GTID", "COMMIT", "VGTID")

	// Adding tc_one to a stream at pos: it is copied while tc_two streams on.
	testkit.MustExec(t, db, "INSERT INTO tc_two VALUES (6)")
	add := startStream(t, e, Request{Position: pos, Filter: flt,
		TableLastPKs: []*binlogdata.TableLastPK{{TableName: "tc_one"}}, TablesToCopy: []string{"tc_one"}})
	im := newImage(map[string][]string{"tc_one": {"id"}, "tc_two": {"id"}})
	im.Rows["tc_two"] = map[string]string{"5": "5"}
	im.SetFields("tc_two", evs[1].FieldEvent.Fields)
	for !im.Copied {
		im.Add(add.next(false))
	}
	waitCaughtUp(t, add, im)
	im.Check(t, db, "test")
}

// TestCopyRowsMatchBinlogRows copies a table of every column type and compares each copied
// row with the row the binlog carried when it was written. Text in other character sets
// comes in its own bytes in both, as the binlog has it.
func TestCopyRowsMatchBinlogRows(t *testing.T) {
	testkit.MustExec(t, db, `CREATE TABLE cm_all (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, bu BIGINT UNSIGNED, mi MEDIUMINT,
		de DECIMAL(65,30), f FLOAT, d DOUBLE, dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), y YEAR,
		c CHAR(5), vc VARCHAR(50), tx TEXT, bn BINARY(4), vb VARBINARY(8), bl BLOB, bt BIT(10),
		en ENUM('x','y','z'), st SET('a','b','c'), js JSON, g POINT NULL,
		l1 VARCHAR(10) CHARACTER SET latin1, gk CHAR(4) CHARACTER SET gbk, u16 VARCHAR(10) CHARACTER SET utf16)`)
	e := newEngine(t)
	bin := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "cm_all"})})
	bin.expect("GTID", "OTHER", "VGTID")
	// The TIME range ends at -838:59:59.999999 on MariaDB, at -838:59:59 on MySQL.
	minTime := byFlavor("-838:59:59.99", "-838:59:59.00")
	// Zero dates are refused by MySQL's default sql_mode (NO_ZERO_DATE), not by MariaDB's.
	testkit.MustExec(t, db, "SET time_zone = '+05:00'", "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'",
		`INSERT INTO cm_all VALUES
		(1, -128, 255, 18446744073709551615, -8388608, -0.000000000000000000000000000001, 1.2345678, 0.1, '2024-02-29', '2024-01-02 03:04:05.123456',
		 '2024-06-01 12:00:00.5', '`+minTime+`', 1999, 'ab', '汉字😀', 'long\ntext', x'01', x'00ff', x'deadbeef', b'1010101010',
		 'y', 'a,c', '{"k": [1, 2.5]}', ST_GeomFromText('POINT(1 2)'), 'café', '中文', 'é'),
		(2, NULL, NULL, NULL, NULL, 12345678901234567890123456789012345.5, -3.4e38, -1.7976931348623157e308, '0000-00-00', '0000-00-00 00:00:00',
		 NULL, '00:00:00', 0, '', '', '', x'', x'', x'', b'0', NULL, '', NULL, NULL, '', '', '')`,
		"SET time_zone = SYSTEM", "SET SESSION sql_mode = DEFAULT")
	evs := bin.expect("BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID")
	if c := evtext.Cells(evs[2].RowEvent.RowChanges[0].After); string(c[24]) != "caf\xe9" || string(c[25]) != "\xd6\xd0\xce\xc4" || string(c[26]) != "\x00\xe9" {
		t.Errorf("binlog text cells %q, want each in its column's bytes", c[24:])
	}
	var want []string
	for _, rc := range evs[2].RowEvent.RowChanges {
		want = append(want, fmt.Sprintf("%q", evtext.Cells(rc.After)))
	}
	cp := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "cm_all"})})
	cevs := cp.expect("BEGIN", "FIELD", "ROW", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	var got []string
	for _, rc := range cevs[2].RowEvent.RowChanges {
		got = append(got, fmt.Sprintf("%q", evtext.Cells(rc.After)))
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("row %d:\n copy   %s\n binlog %s", i+1, got[min(i, len(got)-1)], want[i])
		}
	}
	// The same FIELD in both phases, so a consumer sees one table shape.
	for i, f := range evs[1].FieldEvent.Fields {
		if cf := cevs[1].FieldEvent.Fields[i]; !proto.Equal(f, cf) {
			t.Errorf("field %d:\n copy   %v\n binlog %v", i, cf, f)
		}
	}
}

func TestCopyWithFilter(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cf (id INT PRIMARY KEY, name VARCHAR(10), qty INT)",
		"INSERT INTO cf VALUES (1, 'a', 10), (2, 'b', 1), (3, 'c', 20), (4, NULL, 30)")
	e := newEngine(t)
	ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "cf", Filter: "select qty, id from cf where qty >= 10 and name is not null"})})
	ts.expect("BEGIN", "FIELD cf qty:INT32 id:INT32", "ROW cf +[10 1] +[20 3]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	testkit.MustExec(t, db, "UPDATE cf SET qty = 40 WHERE id = 3")
	// The copy's FIELD still describes the rows: no second one.
	ts.expect("BEGIN", "ROW cf [20 3]>[40 3]", "GTID", "COMMIT", "VGTID")
}

// TestCopyHeartbeats: a copy whose rows are all filtered out sends nothing for a long time,
// but heartbeats still arrive while it reads.
func TestCopyHeartbeats(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE chb (id INT PRIMARY KEY, v INT)", "INSERT INTO chb SELECT seq, 0 FROM "+db.Seq(300000))
	e := newEngine(t)
	ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "chb", Filter: "select id from chb where v = 1"}),
		HeartbeatInterval: time.Millisecond, CopyChunkRows: 1000000})
	beats := 0
	for {
		ev := ts.next(true)
		if ev.Type == binlogdata.VEventType_HEARTBEAT {
			beats++
		}
		if ev.Type == binlogdata.VEventType_LASTPK {
			break
		}
	}
	if beats == 0 {
		t.Error("no heartbeat while the copy read 300000 filtered-out rows")
	}
}

// TestCopyPushdown checks the copy's SELECT reads only the columns the rule needs (and the
// key), applies the rule's WHERE and continues after the last key.
func TestCopyPushdown(t *testing.T) {
	// x's collation is one the filter compares (MySQL's default, utf8mb4_0900_ai_ci, is refused).
	testkit.MustExec(t, db, "CREATE TABLE cpd (a INT NOT NULL, b INT NOT NULL, x VARCHAR(10) COLLATE utf8mb4_general_ci, y FLOAT, z TEXT, PRIMARY KEY (a, b))")
	flt, err := filter.New(rules(&binlogdata.Rule{Match: "cpd", Filter: "select y from cpd where x = 'k' and y > 1"}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := &stream{sql: onConn(conn), keyspaceStream: keyspaceStream{cfg: &Config{Database: "test"}, filter: flt}}
	ct := &copyTable{name: "cpd"}
	if err := s.describeCopy(ct, false, false); err != nil {
		t.Fatal(err)
	}
	ct.lastpk = [][]byte{[]byte("3"), []byte("4")}
	sql, cols := s.chunkSQL(ct, 100)
	want := "SELECT `a`, `b`, `x`, CAST(`y` AS DOUBLE) FROM `test`.`cpd` FORCE INDEX (`PRIMARY`) " +
		"WHERE (`x` = 'k') AND (`y` > 1) AND ((`a` > 3) OR (`a` = 3 AND `b` > 4)) ORDER BY `a`, `b` LIMIT 100"
	if sql != want {
		t.Errorf("chunk SQL:\n %s\nwant\n %s", sql, want)
	}
	if fmt.Sprint(cols) != "[0 1 2 3]" {
		t.Errorf("columns read %v", cols)
	}
}
