package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/position"
)

// TestResumeFromEveryVGTID records a stream, then restarts it from each VGTID it carried and
// checks the restarted stream is exactly the rest of the recording.
func TestResumeFromEveryVGTID(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE rs (id INT PRIMARY KEY, v VARCHAR(10))")
	e := newEngine(t)
	filterRS := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "rs"}}}
	ts := startStream(t, e, Request{Position: "current", Filter: filterRS})
	first := ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db,
		"INSERT INTO rs VALUES (1, 'a')",
		"BEGIN", "INSERT INTO rs VALUES (2, 'b')", "UPDATE rs SET v = 'c' WHERE id = 1", "COMMIT",
		"ALTER TABLE rs ADD COLUMN w INT",
		"DELETE FROM rs WHERE id = 2",
		"INSERT INTO rs VALUES (3, 'd', 4)",
	)
	rec := ts.expect(
		"BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW", "ROW", "GTID", "COMMIT", "VGTID",
		"GTID", "DDL", "VGTID",
		"BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW", "GTID", "COMMIT", "VGTID",
	)
	rec = append([]*binlogdata.VEvent{first[2]}, rec...)
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
			rs := startStream(t, e, Request{Position: pos, Filter: filterRS})
			rs.expect(rest...)
		})
	}
}

// resumedEvents is what a stream resumed from the VGTID rec[i] sends: the events after it, with
// FIELD before the first row of a table whose FIELD came earlier in the recording.
func resumedEvents(rec []*binlogdata.VEvent, i int) []string {
	var rest []string
	for _, r := range rec[i+1:] {
		rest = append(rest, evtext.Short(r))
	}
	return withFieldBeforeFirstRow(rest, rec[:i+1])
}

// withFieldBeforeFirstRow adds, for a stream resumed mid-recording, the FIELD event the
// recording sent earlier for a table whose rows follow.
func withFieldBeforeFirstRow(rest []string, before []*binlogdata.VEvent) []string {
	var lastField string
	for _, ev := range before {
		if ev.Type == binlogdata.VEventType_FIELD {
			lastField = evtext.Short(ev)
		}
		if ev.Type == binlogdata.VEventType_DDL {
			lastField = ""
		}
	}
	if lastField == "" {
		return rest
	}
	for i, r := range rest {
		if strings.HasPrefix(r, "FIELD ") {
			return rest
		}
		if strings.HasPrefix(r, "ROW ") {
			out := append([]string{}, rest[:i]...)
			out = append(out, lastField)
			return append(out, rest[i:]...)
		}
	}
	return rest
}

func TestBadRequests(t *testing.T) {
	e := newEngine(t)
	ahead := serverPos(t)
	uuid := serverUUID(t)
	if err := ahead.Update(byFlavor("0-1-999999", uuid+":999999")); err != nil {
		t.Fatal(err)
	}
	// A GTID of a domain (MariaDB) or a server uuid (MySQL) the server has never seen.
	unknown := byFlavor("MariaDB/7-1-3", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3")
	unknownMessage := byFlavor("domain 7", "uuid 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3")
	cases := []struct {
		name    string
		req     Request
		want    error
		message string
	}{
		{"no flavor", Request{Position: "0-1-5"}, position.ErrBadPosition, "flavor"},
		{"garbage", Request{Position: string(serverFlavor()) + "/x-y"}, position.ErrBadPosition, "x-y"},
		{"wrong flavor", Request{Position: byFlavor("MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "MariaDB/0-1-5")}, ErrFlavor, "server is " + string(serverFlavor())},
		{"ahead", Request{Position: ahead.String()}, ErrAhead, "999999"},
		{"unknown domain", Request{Position: unknown}, ErrAhead, unknownMessage},
		{"copy of nothing", Request{Position: "", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^no_such_prefix_"}}}}, filter.ErrInvalid, "nothing to copy"},
		{"bad regex", Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/a(("}}}}, filter.ErrInvalid, "rule 1"},
		{"copy of a missing table", Request{Position: "", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "nosuchtable"}}}}, filter.ErrInvalid, "table nosuchtable is not present in the database"},
	}
	for _, c := range cases {
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
}

// purgeBinlogs purges every binlog file but the current one. A dump thread that is still
// closing holds its file open, so it purges until the old files are gone.
func purgeBinlogs(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		testkit.MustExec(t, db, "PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY")
		conn, err := db.Conn("test")
		if err != nil {
			t.Fatal(err)
		}
		r, err := conn.Execute("SHOW BINARY LOGS")
		_ = conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.RowNumber() == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("binlogs not purged: %d files remain", r.RowNumber())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPurgedPosition(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE pg (id INT PRIMARY KEY)", "INSERT INTO pg VALUES (1)")
	old := headPos(t)
	testkit.MustExec(t, db, "INSERT INTO pg VALUES (2)")
	// The one transaction the old position lacks and the purge takes: MariaDB names its
	// domain, MySQL the GTIDs.
	missing := "domain 0"
	if onMySQL() {
		missing = lastGTID(t) + " "
	}
	testkit.MustExec(t, db, "FLUSH BINARY LOGS", "INSERT INTO pg VALUES (3)")
	cur := headPos(t)
	purgeBinlogs(t)
	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Stream(ctx, Request{Position: old}, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, ErrPurged) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v, want ErrPurged naming %q", err, missing)
	}
	// The current position is still served.
	ts := startStream(t, e, Request{Position: cur, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pg"}}}})
	testkit.MustExec(t, db, "INSERT INTO pg VALUES (4)")
	ts.expect("BEGIN", "FIELD", "ROW pg +[4]", "GTID", "COMMIT", "VGTID")
}

// serverUUID is the test server's @@server_uuid (MySQL), which names its GTIDs.
func serverUUID(t testing.TB) string {
	t.Helper()
	if !onMySQL() {
		return ""
	}
	u, err := queryStringOn(t, "SELECT @@GLOBAL.server_uuid")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func queryStringOn(t testing.TB, q string) (string, error) {
	conn, err := db.Conn("test")
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return queryString(conn, q)
}
