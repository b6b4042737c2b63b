package vstreamer

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// kshort is evtext.Short(ev) after the keyspace the event carries.
func kshort(ev *binlogdata.VEvent) string {
	return ev.Keyspace + ": " + evtext.Short(ev)
}

func kshorts(evs []*binlogdata.VEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = kshort(ev)
	}
	return out
}

// checkVGTIDs fails unless every VGTID names the keyspaces in order, all at one position.
func checkVGTIDs(t *testing.T, evs []*binlogdata.VEvent, keyspaces ...string) {
	t.Helper()
	for _, ev := range evs {
		if ev.Type != binlogdata.VEventType_VGTID {
			continue
		}
		sg := ev.Vgtid.GetShardGtids()
		if len(sg) != len(keyspaces) {
			t.Fatalf("VGTID %v: want keyspaces %v", sg, keyspaces)
		}
		for i, k := range keyspaces {
			if sg[i].Keyspace != k || sg[i].Shard != "0" || sg[i].Gtid != sg[0].Gtid {
				t.Fatalf("VGTID %v: want keyspaces %v, shard 0, at one position", sg, keyspaces)
			}
		}
	}
}

// keyspacesAt is a request of keyspaces all at pos.
func keyspacesAt(pos string, keyspaces ...string) []KeyspaceStart {
	out := make([]KeyspaceStart, len(keyspaces))
	for i, k := range keyspaces {
		out[i] = KeyspaceStart{Keyspace: k, Position: pos}
	}
	return out
}

// resumeFrom is what a stream of several keyspaces resumed from the VGTID rec[i] sends: the
// rest of the recording, with, for each keyspace, the FIELD it was sent last before the
// VGTID ahead of that keyspace's first row (unless a FIELD of its own comes first). A DDL of
// a keyspace makes it send FIELD again anyway.
func resumeFrom(rec []*binlogdata.VEvent, i int) []string {
	last := map[string]string{}
	for _, ev := range rec[:i+1] {
		switch ev.Type {
		case binlogdata.VEventType_FIELD:
			last[ev.Keyspace] = kshort(ev)
		case binlogdata.VEventType_DDL:
			delete(last, ev.Keyspace)
		}
	}
	var out []string
	for _, ev := range rec[i+1:] {
		switch ev.Type {
		case binlogdata.VEventType_FIELD, binlogdata.VEventType_DDL:
			delete(last, ev.Keyspace)
		case binlogdata.VEventType_ROW:
			if f, ok := last[ev.Keyspace]; ok {
				out = append(out, f)
				delete(last, ev.Keyspace)
			}
		}
		out = append(out, kshort(ev))
	}
	return out
}

// One stream of two keyspaces of the server reads one binlog: each change comes in binlog
// order labelled with the keyspace of its table's database, a transaction with that of its
// first change, every VGTID names both keyspaces at the one position, and a stream resumed
// from any VGTID sends exactly the rest.
func TestStreamSeveralKeyspaces(t *testing.T) {
	setupTwoDatabases(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS test.ksdb_other", "CREATE TABLE test.ksdb_other (id INT PRIMARY KEY)")
	t.Cleanup(func() { _ = db.Exec("DROP TABLE IF EXISTS test.ksdb_other") })
	e := newEngineDatabases(t, "ks_two")
	ts := startStream(t, e, Request{Keyspaces: keyspacesAt(CurrentPosition, "ks", "ks_two"), Filter: ksdbFilter})
	first := ts.expect("GTID", "OTHER", "VGTID")
	if got := kshort(first[2]); got != "ks: VGTID" {
		t.Errorf("the start of the stream is labelled %s, want the first keyspace", got)
	}
	testkit.MustExec(t, db,
		"INSERT INTO ks_two.ksdb_t VALUES (20, 'two-t')",
		"INSERT INTO test.ksdb_t VALUES (10, 'one-j')",
		"BEGIN", "INSERT INTO ks_two.ksdb_t VALUES (21, 'two-u')", "UPDATE test.ksdb_t SET v = 'one-k' WHERE id = 10", "COMMIT",
		"INSERT INTO test.ksdb_other VALUES (1)",
		"ALTER TABLE ks_two.ksdb_t ADD COLUMN w INT",
		"INSERT INTO ks_two.ksdb_t VALUES (22, 'two-v', 7)",
		"DELETE FROM test.ksdb_t WHERE id = 10",
	)
	want := []string{
		"ks_two: BEGIN", "ks_two: FIELD ksdb_t id:INT32 v:VARCHAR", "ks_two: ROW ksdb_t +[20 two-t]", "ks_two: GTID", "ks_two: COMMIT", "ks_two: VGTID",
		"ks: BEGIN", "ks: FIELD ksdb_t id:INT32 v:VARCHAR", "ks: ROW ksdb_t +[10 one-j]", "ks: GTID", "ks: COMMIT", "ks: VGTID",
		"ks_two: BEGIN", "ks_two: ROW ksdb_t +[21 two-u]", "ks: ROW ksdb_t [10 one-j]>[10 one-k]", "ks_two: GTID", "ks_two: COMMIT", "ks_two: VGTID",
		"ks: BEGIN", "ks: GTID", "ks: COMMIT", "ks: VGTID",
		"ks_two: GTID", "ks_two: DDL ALTER TABLE ks_two.ksdb_t ADD COLUMN w INT", "ks_two: VGTID",
		"ks_two: BEGIN", "ks_two: FIELD ksdb_t id:INT32 v:VARCHAR w:INT32", "ks_two: ROW ksdb_t +[22 two-v 7]", "ks_two: GTID", "ks_two: COMMIT", "ks_two: VGTID",
		"ks: BEGIN", "ks: ROW ksdb_t -[10 one-k]", "ks: GTID", "ks: COMMIT", "ks: VGTID",
	}
	var rec []*binlogdata.VEvent
	for len(rec) < len(want) {
		rec = append(rec, ts.next(false))
	}
	if got := strings.Join(kshorts(rec), "\n  "); got != strings.Join(want, "\n  ") {
		t.Fatalf("events differ\n got:\n  %s\nwant:\n  %s", got, strings.Join(want, "\n  "))
	}
	for _, ev := range rec {
		checkFieldRowKeyspace(t, ev, map[string]string{"ks": "test", "ks_two": "ks_two"})
	}
	rec = append(first[2:], rec...)
	checkVGTIDs(t, rec, "ks", "ks_two")
	for i, ev := range rec {
		if ev.Type != binlogdata.VEventType_VGTID || i == len(rec)-1 {
			continue
		}
		rest := resumeFrom(rec, i)
		var starts []KeyspaceStart
		for _, sg := range ev.Vgtid.ShardGtids {
			starts = append(starts, KeyspaceStart{Keyspace: sg.Keyspace, Position: sg.Gtid})
		}
		t.Run(ev.Vgtid.ShardGtids[0].Gtid, func(t *testing.T) {
			rs := startStream(t, e, Request{Keyspaces: starts, Filter: ksdbFilter})
			var got []*binlogdata.VEvent
			for len(got) < len(rest) {
				got = append(got, rs.next(false))
			}
			if g := strings.Join(kshorts(got), "\n  "); g != strings.Join(rest, "\n  ") {
				t.Fatalf("resumed events differ\n got:\n  %s\nwant:\n  %s", g, strings.Join(rest, "\n  "))
			}
			select {
			case ev := <-rs.events:
				t.Fatalf("an event past the recording: %s", kshort(ev))
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}

// checkFieldRowKeyspace checks that a FIELD's or ROW's own keyspace is its event's, and that
// a FIELD's columns name the keyspace's database.
func checkFieldRowKeyspace(t *testing.T, ev *binlogdata.VEvent, dbOf map[string]string) {
	t.Helper()
	switch ev.Type {
	case binlogdata.VEventType_FIELD:
		if ev.FieldEvent.Keyspace != ev.Keyspace || ev.FieldEvent.Fields[0].Database != dbOf[ev.Keyspace] {
			t.Errorf("FIELD of keyspace %q database %q in an event of keyspace %q", ev.FieldEvent.Keyspace, ev.FieldEvent.Fields[0].Database, ev.Keyspace)
		}
	case binlogdata.VEventType_ROW:
		if ev.RowEvent.Keyspace != ev.Keyspace {
			t.Errorf("ROW of keyspace %q in an event of keyspace %q", ev.RowEvent.Keyspace, ev.Keyspace)
		}
	}
}

// A copy of two keyspaces copies each keyspace's table in turn, its state in each keyspace's
// entry of the VGTIDs, then streams both; a stream resumed from any VGTID of the copy sends
// exactly the rest of it.
func TestCopySeveralKeyspaces(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, AllDatabases)
	req := Request{Keyspaces: keyspacesAt("", "ks_two", "ks"), Filter: ksdbFilter, CopyChunkRows: 1}
	ts := startStream(t, e, req)
	var rec []*binlogdata.VEvent
	for {
		ev := ts.next(false)
		rec = append(rec, ev)
		if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
			break
		}
	}
	for rec[len(rec)-1].Type != binlogdata.VEventType_VGTID {
		rec = append(rec, ts.next(false))
	}
	checkVGTIDs(t, rec, "ks_two", "ks")
	// Mid-copy, the keyspace not yet copied lists its table with no key yet.
	sawPending := false
	for _, ev := range rec {
		if ev.Type == binlogdata.VEventType_VGTID {
			sg := ev.Vgtid.ShardGtids
			if len(sg[0].TablePKs) > 0 && len(sg[1].TablePKs) == 1 && sg[1].TablePKs[0].Lastpk == nil {
				sawPending = true
			}
		}
	}
	if !sawPending {
		t.Error("no VGTID carried the copy state of the keyspace copied second")
	}
	// Resumed with no change since, a copy sends the rest of what it sent.
	for i, ev := range rec {
		if ev.Type != binlogdata.VEventType_VGTID || i == len(rec)-1 {
			continue
		}
		rest := withoutFields(resumeFrom(rec, i))
		var starts []KeyspaceStart
		for _, sg := range ev.Vgtid.ShardGtids {
			starts = append(starts, KeyspaceStart{Keyspace: sg.Keyspace, Position: sg.Gtid, TableLastPKs: sg.TablePKs})
		}
		t.Run(strings.Join(rest[:min(3, len(rest))], ","), func(t *testing.T) {
			rs := startStream(t, e, Request{Keyspaces: starts, Filter: ksdbFilter, CopyChunkRows: 1})
			var got []string
			for len(got) < len(rest) {
				if ev := rs.next(false); ev.Type != binlogdata.VEventType_FIELD {
					got = append(got, kshort(ev))
				}
			}
			if g := strings.Join(got, "\n  "); g != strings.Join(rest, "\n  ") {
				t.Fatalf("resumed events differ\n got:\n  %s\nwant:\n  %s", g, strings.Join(rest, "\n  "))
			}
		})
	}
	testkit.MustExec(t, db, "INSERT INTO test.ksdb_t VALUES (3, 'one-c')", "INSERT INTO ks_two.ksdb_t VALUES (3, 'two-c')")
	for rows := 0; rows < 2; {
		ev := ts.next(false)
		rec = append(rec, ev)
		if ev.Type == binlogdata.VEventType_ROW {
			rows++
		}
	}
	var rows []string
	for _, ev := range rec {
		checkFieldRowKeyspace(t, ev, map[string]string{"ks": "test", "ks_two": "ks_two"})
		if ev.Type == binlogdata.VEventType_ROW || ev.Type == binlogdata.VEventType_COPY_COMPLETED {
			rows = append(rows, kshort(ev))
		}
	}
	want := []string{
		"ks_two: ROW ksdb_t +[1 two-a]", "ks_two: ROW ksdb_t +[2 two-b]", "ks_two: COPY_COMPLETED",
		"ks: ROW ksdb_t +[1 one-a]", "ks: COPY_COMPLETED", ": COPY_COMPLETED",
		"ks: ROW ksdb_t +[3 one-c]", "ks_two: ROW ksdb_t +[3 two-c]",
	}
	if got := strings.Join(rows, "\n  "); got != strings.Join(want, "\n  ") {
		t.Fatalf("rows differ\n got:\n  %s\nwant:\n  %s", got, strings.Join(want, "\n  "))
	}
}

func withoutFields(evs []string) []string {
	var out []string
	for _, e := range evs {
		if !strings.Contains(e, " FIELD ") {
			out = append(out, e)
		}
	}
	return out
}

// Two keyspaces of one stream cost one binlog dump connection.
func TestSeveralKeyspacesOneDump(t *testing.T) {
	setupTwoDatabases(t)
	base := settleDumps(t)
	e := newEngineDatabases(t, "ks_two")
	ts := startStream(t, e, Request{Keyspaces: keyspacesAt(CurrentPosition, "ks", "ks_two"), Filter: ksdbFilter})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO test.ksdb_t VALUES (5, 'one-e')", "INSERT INTO ks_two.ksdb_t VALUES (5, 'two-e')")
	var rows []string
	for len(rows) < 2 {
		if ev := ts.next(false); ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, kshort(ev))
		}
	}
	if got, want := strings.Join(rows, "; "), "ks: ROW ksdb_t +[5 one-e]; ks_two: ROW ksdb_t +[5 two-e]"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	if got := awaitDumps(t, base+1) - base; got != 1 {
		t.Errorf("%d binlog dump connections for a stream of two keyspaces, want 1", got)
	}
}

// A VGtid of several keyspaces is refused before anything is streamed when a keyspace is
// not served, named twice, or at another position than the first.
func TestSeveralKeyspacesRefused(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, "ks_two")
	pos := serverPos(t).String()
	older := pos
	testkit.MustExec(t, db, "INSERT INTO test.ksdb_t VALUES (6, 'one-f')")
	pos = serverPos(t).String()
	for _, tc := range []struct {
		name      string
		keyspaces []KeyspaceStart
		want      error
		message   string
		filter    *binlogdata.Filter
	}{
		{"not served", keyspacesAt(pos, "ks", "ks_three"), ErrKeyspace, `keyspace "ks_three" is not served here`, nil},
		{"named twice", keyspacesAt(pos, "ks_two", "ks_two"), ErrBadRequest, `names keyspace "ks_two" twice`, nil},
		{"one database twice", keyspacesAt(pos, "ks", ""), ErrBadRequest, "both database test", nil},
		{"different positions", []KeyspaceStart{{Keyspace: "ks", Position: pos}, {Keyspace: "ks_two", Position: older}}, ErrBadRequest,
			"at different positions", nil},
		{"current and a position", []KeyspaceStart{{Keyspace: "ks", Position: CurrentPosition}, {Keyspace: "ks_two", Position: pos}}, ErrBadRequest,
			"give every keyspace the earliest position", nil},
		{"copy of a table of neither", keyspacesAt("", "ks", "ks_two"), filter.ErrInvalid,
			"table ksdb_none is not present in the databases test, ks_two", rules(&binlogdata.Rule{Match: "ksdb_t"}, &binlogdata.Rule{Match: "ksdb_none"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f := ksdbFilter
			if tc.filter != nil {
				f = tc.filter
			}
			err := e.Stream(ctx, Request{Keyspaces: tc.keyspaces, Filter: f}, func([]*binlogdata.VEvent) error {
				return errors.New("no event expected")
			})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.message)
			}
		})
	}
}

// A statement-based change is sent with the keyspace of the tables it writes; one writing
// tables of two keyspaces of the stream ends it with an error naming the statement.
func TestSeveralKeyspacesStatement(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, "ks_two")
	ts := startStream(t, e, Request{Keyspaces: keyspacesAt(CurrentPosition, "ks", "ks_two"), Filter: ksdbFilter})
	ts.expect("GTID", "OTHER", "VGTID")
	statementMode(t, "STATEMENT", "INSERT INTO ks_two.ksdb_t VALUES (30, 'two-x')")
	got := kshorts(ts.expect("BEGIN", "INSERT", "GTID", "COMMIT", "VGTID"))
	if got[0] != "ks_two: BEGIN" || got[1] != "ks_two: INSERT INSERT INTO ks_two.ksdb_t VALUES (30, 'two-x')" {
		t.Errorf("statement of one keyspace: %v", got)
	}
	statementMode(t, "STATEMENT",
		"UPDATE test.ksdb_t, ks_two.ksdb_t SET test.ksdb_t.v = 'both', ks_two.ksdb_t.v = 'both' WHERE test.ksdb_t.id = 1 AND ks_two.ksdb_t.id = 1")
	select {
	case err := <-ts.errc:
		ts.errc <- nil
		if !errors.Is(err, ErrStatementChange) || !strings.Contains(err.Error(), `keyspaces "ks" and "ks_two" by one statement`) {
			t.Fatalf("got %v, want ErrStatementChange naming both keyspaces", err)
		}
	case ev := <-ts.events:
		t.Fatalf("got %s, want the stream to end", kshort(ev))
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// While one keyspace is copied, a change to a table of a keyspace whose copy has not started
// reaches the client only through that copy.
func TestCopySeveralKeyspacesChangeBeforeCopy(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, "ks_two")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	written := false
	err := e.Stream(ctx, Request{Keyspaces: keyspacesAt("", "ks_two", "ks"), Filter: ksdbFilter, CopyChunkRows: 1}, func(evs []*binlogdata.VEvent) error {
		for _, ev := range evs {
			if ev.Type == binlogdata.VEventType_ROW {
				got = append(got, kshort(ev))
				if !written {
					// ks_two is being copied; ks's copy has not started.
					written = true
					if err := db.Exec("INSERT INTO test.ksdb_t VALUES (7, 'one-g')", "UPDATE test.ksdb_t SET v = 'one-z' WHERE id = 1"); err != nil {
						return err
					}
				}
			}
			if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
				return io.EOF
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "ks_two: ROW ksdb_t +[1 two-a]|ks_two: ROW ksdb_t +[2 two-b]|ks: ROW ksdb_t +[1 one-z]|ks: ROW ksdb_t +[7 one-g]"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("rows:\n got %s\nwant %s", g, want)
	}
}

// The schema history tracker reads through the shared reader: a stream of two keyspaces and
// the tracker cost one binlog dump connection together, and the tracker still records DDLs.
func TestSchemaHistorySharesDump(t *testing.T) {
	setupTwoDatabases(t)
	base := settleDumps(t)
	hist := historyEngine(t, t.TempDir())
	hist.cfg.Databases = []string{"ks_two"}
	// The tracker's dump opens as it starts reading, after it recorded the tables.
	if got := awaitDumps(t, base+1) - base; got != 1 {
		t.Errorf("%d binlog dump connections for the tracker, want 1", got)
	}
	ts := startStream(t, hist, Request{Keyspaces: keyspacesAt(CurrentPosition, "ks", "ks_two"), Filter: ksdbFilter})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "ALTER TABLE test.ksdb_t ADD COLUMN w INT", "INSERT INTO test.ksdb_t VALUES (8, 'one-h', 1)",
		"INSERT INTO ks_two.ksdb_t VALUES (8, 'two-h')")
	var rows []string
	for len(rows) < 2 {
		if ev := ts.next(false); ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, kshort(ev))
		}
	}
	if got, want := strings.Join(rows, "; "), "ks: ROW ksdb_t +[8 one-h 1]; ks_two: ROW ksdb_t +[8 two-h]"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	waitTracker(t, hist, serverPos(t))
	if got := dumpThreads(t) - base; got != 1 {
		t.Errorf("%d binlog dump connections for a stream and the schema history tracker, want 1", got)
	}
	info, ok, err := hist.hist.Lookup(context.Background(), "test", "ksdb_t", serverPos(t))
	if err != nil || !ok || len(info) != 3 {
		t.Errorf("history of ksdb_t after the ALTER: %v %v %v, want 3 columns", info, ok, err)
	}
}

// awaitDumps waits up to a few seconds for the server to count want binlog dump connections,
// and returns how many it counts.
func awaitDumps(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := dumpThreads(t)
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rule naming a table of one keyspace only copies and streams it there: the filter applies
// to each keyspace's tables, and a keyspace without the table has nothing of it.
func TestCopySeveralKeyspacesTableOfOne(t *testing.T) {
	setupTwoDatabases(t)
	testkit.MustExec(t, db, "CREATE TABLE ks_two.ksdb_only (id INT PRIMARY KEY)", "INSERT INTO ks_two.ksdb_only VALUES (1)")
	e := newEngineDatabases(t, "ks_two")
	ts := startStream(t, e, Request{Keyspaces: keyspacesAt("", "ks", "ks_two"),
		Filter: rules(&binlogdata.Rule{Match: "ksdb_only"}, &binlogdata.Rule{Match: "ksdb_t"}), TablesToCopy: []string{"ksdb_only"}})
	var rows []string
	for {
		ev := ts.next(false)
		if ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, kshort(ev))
		}
		if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
			break
		}
	}
	testkit.MustExec(t, db, "INSERT INTO ks_two.ksdb_only VALUES (2)", "INSERT INTO test.ksdb_t VALUES (9, 'one-i')")
	for len(rows) < 3 {
		if ev := ts.next(false); ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, kshort(ev))
		}
	}
	if got, want := strings.Join(rows, "; "), "ks_two: ROW ksdb_only +[1]; ks_two: ROW ksdb_only +[2]; ks: ROW ksdb_t +[9 one-i]"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
}
