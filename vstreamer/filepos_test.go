package vstreamer

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

func newFilePosEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "ks",
		Positions: PositionsFilePos})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// serverFilePos is the server's current binlog file and offset.
func serverFilePos(t testing.TB) (string, uint64) {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	file, pos, err := masterStatus(conn)
	if err != nil {
		t.Fatal(err)
	}
	return file, pos
}

// flushBinaryLogs rotates the binlog and waits for MariaDB's background thread to write the
// new file's own binlog checkpoint event, which it may do a second later: until then the
// server's file position can still move with no transaction committed. MySQL writes the new
// file's header events (its previous GTIDs) as it rotates, and no checkpoint.
func flushBinaryLogs(t testing.TB) {
	t.Helper()
	testkit.MustExec(t, db, "FLUSH BINARY LOGS")
	if onMySQL() {
		return
	}
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		file, _, err := masterStatus(conn)
		if err != nil {
			t.Fatal(err)
		}
		r, err := conn.Execute("SHOW BINLOG EVENTS IN '" + file + "'")
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Values {
			typ, _ := r.GetString(i, 2)
			info, _ := r.GetString(i, 5)
			if typ == "Binlog_checkpoint" && info == file {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no binlog checkpoint of %s after 30 s", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFilePosResumeFromEveryVGTID streams by file position across a binlog rotation, checks
// each position is the end of its transaction's commit (the next transaction's place, and
// the server's after the last), and that a stream restarted from each VGTID is exactly the
// rest of the recording.
func TestFilePosResumeFromEveryVGTID(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fpos_rs (id INT PRIMARY KEY, v VARCHAR(10))")
	e := newFilePosEngine(t)
	filterFPos := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "fpos_rs"}}}
	file, off := serverFilePos(t)
	ts := startStream(t, e, Request{Position: "current", Filter: filterFPos})
	first := ts.expect("GTID", "OTHER", "VGTID")
	want := position.NewFilePos(file, off).String()
	if first[0].Gtid != want || first[2].Vgtid.ShardGtids[0].Gtid != want {
		t.Fatalf("current start at %q / %q, want the server's %q", first[0].Gtid, first[2].Vgtid.ShardGtids[0].Gtid, want)
	}
	testkit.MustExec(t, db,
		"INSERT INTO fpos_rs VALUES (1, 'a')",
		"BEGIN", "INSERT INTO fpos_rs VALUES (2, 'b')", "UPDATE fpos_rs SET v = 'c' WHERE id = 1", "COMMIT",
	)
	flushBinaryLogs(t)
	testkit.MustExec(t, db,
		"ALTER TABLE fpos_rs ADD COLUMN w INT",
		"DELETE FROM fpos_rs WHERE id = 2",
		"INSERT INTO fpos_rs VALUES (3, 'd', 4)",
	)
	rec := ts.expect(
		"BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW", "ROW", "GTID", "COMMIT", "VGTID",
		"GTID", "DDL", "VGTID",
		"BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW", "GTID", "COMMIT", "VGTID",
	)
	endFile, endOff := serverFilePos(t)
	if endFile == file {
		t.Fatalf("FLUSH BINARY LOGS did not rotate %s", file)
	}
	rec = append([]*binlogdata.VEvent{first[2]}, rec...)
	prev := position.NewFilePos(file, off)
	var last position.Position
	for i, ev := range rec {
		if ev.Type == binlogdata.VEventType_GTID {
			p, err := position.Parse(ev.Gtid)
			if err != nil || p.Flavor != position.FilePos {
				t.Fatalf("GTID event position %q: %v, want a FilePos position", ev.Gtid, err)
			}
			if !p.Contains(prev) || p.Equal(prev) {
				t.Errorf("position %s does not move past %s", p, prev)
			}
			prev = p
			if next := rec[i+2]; next.Vgtid.ShardGtids[0].Gtid != ev.Gtid {
				t.Errorf("VGTID %q after GTID %q", next.Vgtid.ShardGtids[0].Gtid, ev.Gtid)
			}
			last = p
		}
	}
	if w := position.NewFilePos(endFile, endOff); !last.Equal(w) {
		t.Errorf("last position %s, want the server's %s after it", last, w)
	}
	for i, ev := range rec {
		if ev.Type != binlogdata.VEventType_VGTID {
			continue
		}
		rest := resumedEvents(rec, i)
		if len(rest) == 0 {
			continue
		}
		pos := ev.Vgtid.ShardGtids[0].Gtid
		t.Run(pos, func(t *testing.T) {
			rs := startStream(t, e, Request{Position: pos, Filter: filterFPos})
			// The resumed stream sends the same positions.
			if got, want := gtids(rs.expect(rest...)), gtids(rec[i+1:]); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("resumed positions %q, recorded %q", got, want)
			}
		})
	}
}

func gtids(evs []*binlogdata.VEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type == binlogdata.VEventType_GTID {
			out = append(out, ev.Gtid)
		}
	}
	return out
}

// TestFilePosBadRequests: under file positions what needs a GTID is refused with
// ErrBadRequest saying what to use, and bad positions with the error of their cause.
func TestFilePosBadRequests(t *testing.T) {
	// Two binlog files at least, so that a name between them is no file's.
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS fpb (id INT PRIMARY KEY)")
	flushBinaryLogs(t)
	e := newFilePosEngine(t)
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	info := &serverInfo{}
	err = inspectFilePos(conn, info)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	oldest := info.files[0].name
	file, off := serverFilePos(t)
	cur := position.NewFilePos(file, off).String()
	ahead := position.NewFilePos(file, off+1000).String()
	dot := strings.LastIndexByte(file, '.')
	before := file[:dot+1] + "000000"
	rules := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "fpb"}}}
	for _, c := range []struct {
		name    string
		req     Request
		want    error
		message string
	}{
		{"copy", Request{Filter: rules}, ErrBadRequest, `needs GTID positions`},
		{"copy says what to use", Request{Filter: rules}, ErrBadRequest, `start from "current" or a FilePos/<file>:<offset> position, or run vstreamd with --positions gtid`},
		{"resume copy", Request{Position: cur, Filter: rules, TableLastPKs: []*binlogdata.TableLastPK{{TableName: "fpb"}}}, ErrBadRequest, "table copy"},
		{"tables to copy", Request{Position: cur, Filter: rules, TablesToCopy: []string{"fpb"}}, ErrBadRequest, "table copy"},
		{"gtid position", Request{Position: "MariaDB/0-1-1", Filter: rules}, ErrFlavor, "give FilePos/<file>:<offset>"},
		{"ahead", Request{Position: ahead, Filter: rules}, ErrAhead, "GTIDSet Mismatch: requested source position: " + ahead + ", current target vrep position: " + cur},
		{"next file", Request{Position: "FilePos/" + file[:dot+1] + "999999:4", Filter: rules}, ErrAhead, "is past the server's"},
		{"purged file", Request{Position: "FilePos/" + before + ":4", Filter: rules}, ErrPurged, "binlog " + before + " is purged"},
		{"unknown file", Request{Position: "other-bin.000001:4", Filter: rules}, position.ErrBadPosition, "missing flavor prefix"},
		{"no such file", Request{Position: "FilePos/zzz-bin.000001:4", Filter: rules}, ErrAhead, "is past the server's"},
		{"no such file before", Request{Position: "FilePos/" + oldest + "x:4", Filter: rules}, position.ErrBadPosition, "the server has no binlog file " + oldest + "x"},
		{"past a file's end", Request{Position: "FilePos/" + oldest + ":99999999", Filter: rules}, position.ErrBadPosition, "is past the end of " + oldest},
		{"offset in magic", Request{Position: "FilePos/" + file + ":2", Filter: rules}, position.ErrBadPosition, "offsets run from 4"},
		{"offset inside an event", Request{Position: "FilePos/" + file + ":" + strconv.FormatUint(off-10, 10), Filter: rules}, position.ErrBadPosition, "is not where a binlog event starts"},
		{"hex offset", Request{Position: "FilePos/" + file + ":0x10", Filter: rules}, position.ErrBadPosition, "not a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := e.Stream(ctx, c.req, func([]*binlogdata.VEvent) error { return nil })
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.message) {
				t.Errorf("message %q does not mention %q", err, c.message)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	noRows := func(*RowsBatch) error { return nil }
	for name, err := range map[string]error{
		"VStreamRows":    e.StreamRows(ctx, RowsRequest{Query: "select * from fpb"}, noRows),
		"VStreamTables":  e.StreamTables(ctx, TablesRequest{}, noRows),
		"VStreamResults": e.StreamResults(ctx, ResultsRequest{Query: "select * from fpb"}, noRows),
		"BinlogDumpGTID": e.StreamDump(ctx, DumpRequest{}, func([]byte) error { return nil }),
	} {
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "--positions gtid") {
			t.Errorf("%s: err = %v, want ErrBadRequest naming it and --positions gtid", name, err)
		}
	}

	// A GTID engine refuses a file position, saying how to stream by file position.
	err = newEngine(t).Stream(ctx, Request{Position: cur, Filter: rules}, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, ErrFlavor) || !strings.Contains(err.Error(), "--positions filepos") {
		t.Errorf("GTID engine, file position: err = %v, want ErrFlavor naming --positions filepos", err)
	}
	var ferr error
	if _, ferr = NewEngine(Config{Addr: db.Addr(), User: "u", Database: "test", Positions: "binlog"}); ferr == nil || !strings.Contains(ferr.Error(), "want gtid or filepos") {
		t.Errorf("Positions binlog: err = %v", ferr)
	}
	if _, ferr = NewEngine(Config{Addr: db.Addr(), User: "u", Database: "test", Positions: PositionsFilePos, SchemaHistoryDir: t.TempDir()}); ferr == nil || !strings.Contains(ferr.Error(), "cannot serve positions filepos") {
		t.Errorf("Positions filepos with a schema history: err = %v", ferr)
	}
}

// TestBadOffsetFromReaderPlace: whether the server failed at the requested offset is judged by
// where the reader was when it failed, even when the stream goroutine has not yet taken the
// rotate event queued before the failure.
func TestBadOffsetFromReaderPlace(t *testing.T) {
	start := position.NewFilePos("binlog.000002", 500)
	refused := &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "bogus data in log event"}
	for _, c := range []struct {
		name  string
		place readPlace
		want  bool
	}{
		{"failed at the start", readPlace{file: "binlog.000002", pos: 500}, true},
		{"failed after the format event", readPlace{file: "binlog.000002", pos: 256}, true},
		{"failed past the start", readPlace{file: "binlog.000002", pos: 620}, false},
		{"failed in a later file", readPlace{file: "binlog.000003", pos: 4}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &stream{cursor: cursor{pos: start, start: start}} // the stream goroutine has seen no event
			if got := s.cursor.atBadOffset(c.place.failed(refused)); got != c.want {
				t.Errorf("atBadOffset = %v, want %v", got, c.want)
			}
		})
	}
}
