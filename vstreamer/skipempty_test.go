package vstreamer

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/position"
)

var filterSKA = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "ska"}}}

// TestSkipEmptyTransactions: with SkipEmptyTransactions, transactions on a table the filter
// leaves out send nothing; the next transaction that is sent carries their position in its
// VGTID, and a stream that sees nothing else gets a lone VGTID with its next heartbeat, or
// after a second without one. Without the option they are sent as Vitess sends them.
func TestSkipEmptyTransactions(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ska", "DROP TABLE IF EXISTS skb",
		"CREATE TABLE ska (id INT PRIMARY KEY)", "CREATE TABLE skb (id INT PRIMARY KEY)")
	e := newEngine(t)

	t.Run("next transaction carries the position", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true})
		ts.expect("GTID", "OTHER", "VGTID")
		// One connection, back to back: well within the second a pending position waits.
		testkit.MustExec(t, db, "INSERT INTO skb VALUES (1)", "BEGIN", "INSERT INTO skb VALUES (2)", "UPDATE skb SET id = 3 WHERE id = 2", "COMMIT",
			"INSERT INTO ska VALUES (1)")
		head := headPos(t)
		evs := ts.expect("BEGIN", "FIELD", "ROW ska +[1]", "GTID", "COMMIT", "VGTID")
		if got := evs[5].Vgtid.ShardGtids[0].Gtid; got != head {
			t.Errorf("VGTID after the row is %s, want %s (with skb's transactions)", got, head)
		}

		// Nothing else to send: a lone VGTID after about a second carries skb's transaction.
		testkit.MustExec(t, db, "INSERT INTO skb VALUES (4)")
		head = headPos(t)
		start := time.Now()
		ev := ts.next(true)
		if ev.Type != binlogdata.VEventType_VGTID || ev.Vgtid.ShardGtids[0].Gtid != head {
			t.Fatalf("got %s, want a lone VGTID %s", line(ev), head)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the lone VGTID came after %v", d)
		}

		// It is a resume point: a stream from it gets exactly the next rows.
		rs := startStream(t, e, Request{Position: head, Filter: filterSKA, SkipEmptyTransactions: true})
		testkit.MustExec(t, db, "INSERT INTO skb VALUES (5)", "INSERT INTO ska VALUES (2)")
		want := []string{"BEGIN", "FIELD", "ROW ska +[2]", "GTID", "COMMIT", "VGTID"}
		rs.expect(want...)
		ts.expect(append([]string{want[0]}, want[2:]...)...)
	})

	t.Run("heartbeat carries the position", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true,
			HeartbeatInterval: 200 * time.Millisecond})
		ts.expect("GTID", "OTHER", "VGTID")
		testkit.MustExec(t, db, "INSERT INTO skb VALUES (6)")
		head := headPos(t)
		var seen []string
		for {
			ev := ts.next(true)
			seen = append(seen, evtext.Short(ev))
			if ev.Type == binlogdata.VEventType_VGTID {
				if got := ev.Vgtid.ShardGtids[0].Gtid; got != head {
					t.Fatalf("lone VGTID %s, want %s", got, head)
				}
				break
			}
			if ev.Type != binlogdata.VEventType_HEARTBEAT {
				t.Fatalf("got %v, want heartbeats and a lone VGTID", seen)
			}
		}
		if len(seen) < 2 || seen[len(seen)-2] != "HEARTBEAT" {
			t.Errorf("got %v: the VGTID did not come with a heartbeat", seen)
		}
	})

	t.Run("a long run of skipped transactions", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true})
		ts.expect("GTID", "OTHER", "VGTID")
		// Writes every few milliseconds for 2.5 s: the position goes out about once a second.
		start := time.Now()
		for i := range 250 {
			testkit.MustExec(t, db, "INSERT INTO skb VALUES (100 + "+strconv.Itoa(i)+")")
			time.Sleep(10 * time.Millisecond)
		}
		most := int(time.Since(start)/pendingPositionDelay) + 1
		var got []string
		for len(ts.events) > 0 {
			got = append(got, evtext.Short(ts.next(true)))
		}
		if n := len(got); n < 1 || n > most || slices.ContainsFunc(got, func(l string) bool { return l != "VGTID" }) {
			t.Errorf("during a run of skipped transactions: %v, want 1 to %d lone VGTIDs", got, most)
		}
	})

	t.Run("without the option", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA})
		ts.expect("GTID", "OTHER", "VGTID")
		testkit.MustExec(t, db, "INSERT INTO skb VALUES (7)")
		ts.expect("BEGIN", "GTID", "COMMIT", "VGTID")
	})
}

// TestSkipEmptyResumeFromEveryVGTID records a stream that skips empty transactions, then
// restarts it from each VGTID it carried: each restarted stream is exactly the rest of the
// recording (lone VGTIDs aside, which come with time).
func TestSkipEmptyResumeFromEveryVGTID(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ska", "DROP TABLE IF EXISTS skb",
		"CREATE TABLE ska (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE skb (id INT PRIMARY KEY)")
	e := newEngine(t)
	req := Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true}
	ts := startStream(t, e, req)
	first := ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db,
		"INSERT INTO skb VALUES (1)",
		"INSERT INTO ska VALUES (1, 'a')",
		"INSERT INTO skb VALUES (2)", "INSERT INTO skb VALUES (3)",
		"BEGIN", "INSERT INTO ska VALUES (2, 'b')", "INSERT INTO skb VALUES (4)", "UPDATE ska SET v = 'c' WHERE id = 1", "COMMIT",
		"ALTER TABLE skb ADD COLUMN w INT",
		"INSERT INTO skb VALUES (5, 5)",
		"DELETE FROM ska WHERE id = 2",
		"INSERT INTO skb VALUES (6, 6)",
	)
	final := headPos(t)
	rec := append([]string{line(first[2])}, ts.until(final)...)
	for i, l := range rec {
		if !strings.HasPrefix(l, "VGTID ") || i == len(rec)-1 {
			continue
		}
		pos := strings.TrimPrefix(l, "VGTID ")
		want := withoutLoneVGTIDs(rec[i+1:])
		t.Run(pos, func(t *testing.T) {
			r := req
			r.Position = pos
			got := withoutLoneVGTIDs(startStream(t, e, r).until(final))
			if !slices.Equal(resumable(got), resumable(want)) {
				t.Errorf("resumed from %s:\n got:\n  %s\nwant:\n  %s", pos, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// withoutLoneVGTIDs drops the VGTIDs that end no transaction, keeping the last line.
func withoutLoneVGTIDs(lines []string) []string {
	var out []string
	for i, l := range lines {
		if strings.HasPrefix(l, "VGTID ") && i != len(lines)-1 && (i == 0 || !endsTxn(lines[i-1])) {
			continue
		}
		out = append(out, l)
	}
	return out
}

func endsTxn(l string) bool {
	return strings.HasPrefix(l, "COMMIT") || strings.HasPrefix(l, "DDL") || strings.HasPrefix(l, "OTHER")
}

// resumable leaves out FIELD events, which a resumed stream sends before its first row of a
// table whatever the recording sent.
func resumable(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "FIELD ") })
}

// skippedTxn is a transaction of one row on test.other, as a MariaDB (or a MySQL) binlog
// gives it.
func skippedTxn(mysqlFlavor bool, seq uint64, logPos uint32) []*replication.BinlogEvent {
	hdr := func(typ replication.EventType) *replication.EventHeader {
		logPos += 100
		return &replication.EventHeader{EventType: typ, Timestamp: 1700000000, ServerID: 1, LogPos: logPos, EventSize: 100}
	}
	start := []*replication.BinlogEvent{
		{Header: hdr(replication.MARIADB_GTID_EVENT), Event: &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}}},
		{Header: hdr(replication.MARIADB_ANNOTATE_ROWS_EVENT), Event: &replication.MariadbAnnotateRowsEvent{Query: []byte("INSERT INTO other VALUES (1)")}},
	}
	if mysqlFlavor {
		sid := uuid.MustParse(skipUUID)
		start = []*replication.BinlogEvent{
			{Header: hdr(replication.GTID_EVENT), Event: &replication.GTIDEvent{SID: sid[:], GNO: int64(seq)}},
			{Header: hdr(replication.QUERY_EVENT), Event: &replication.QueryEvent{Query: []byte("BEGIN")}},
		}
	}
	return append(start,
		&replication.BinlogEvent{Header: hdr(replication.TABLE_MAP_EVENT), Event: &replication.TableMapEvent{TableID: 7, Schema: []byte("test"), Table: []byte("other"),
			ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_LONG}, ColumnMeta: []uint16{0}, ColumnName: [][]byte{[]byte("id")}}},
		&replication.BinlogEvent{Header: hdr(replication.WRITE_ROWS_EVENTv2), Event: &replication.RowsEvent{TableID: 7, ColumnCount: 1, Rows: [][]any{{int32(1)}}}},
		&replication.BinlogEvent{Header: hdr(replication.XID_EVENT), Event: &replication.XIDEvent{XID: seq}},
	)
}

const skipUUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

type positions struct{ n int }

func (p *positions) Position(string, time.Time)        { p.n++ }
func (p *positions) CopyProgress(string, int64, int64) {}

// TestSkippedTransactionAllocs: a transaction the filter leaves out costs a stream that skips
// empty transactions no allocation: no BEGIN is built, the position moves by the GTID event's
// binary GTID, and the observer hears the position at most every observeEvery. Streams on a
// shared reader each handle every transaction of the binlog, so this is what a filtered
// stream costs per transaction it does not send.
func TestSkippedTransactionAllocs(t *testing.T) {
	t.Run("MariaDB", func(t *testing.T) { testSkippedTransactionAllocs(t, false, "MariaDB/0-1-1", "MariaDB/0-1-") })
	t.Run("MySQL", func(t *testing.T) {
		testSkippedTransactionAllocs(t, true, "MySQL56/"+skipUUID+":1", "MySQL56/"+skipUUID+":1-")
	})
}

// skippingStream is a stream of table ska from position from that skips empty transactions,
// with the count of its sends and its observer.
func skippingStream(t testing.TB, from string) (*stream, *int, *positions) {
	t.Helper()
	flt, err := filter.New(filterSKA)
	if err != nil {
		t.Fatal(err)
	}
	start, err := position.Parse(from)
	if err != nil {
		t.Fatal(err)
	}
	sent := new(int)
	obs := &positions{}
	ks := &keyspaceStream{cfg: &Config{Database: "test", Keyspace: "test", Shard: "0"}, filter: flt,
		fieldsFor: map[string]*tablePlan{}, copyPlans: map[string]*tablePlan{}}
	s := &stream{
		keyspaces: []*keyspaceStream{ks}, cursor: cursor{pos: start}, plans: map[uint64]*tablePlan{}, observer: obs,
		skip: skips{enabled: true, lastVGTID: nowNanos()},
		out:  outbox{maxBatch: 1 << 20, send: func([]*binlogdata.VEvent) error { *sent++; return nil }},
	}
	s.use(ks)
	t.Cleanup(func() {
		s.skip.stop()
	})
	return s, sent, obs
}

func testSkippedTransactionAllocs(t *testing.T, mysqlFlavor bool, from, want string) {
	s, sent, obs := skippingStream(t, from)
	const txns = 1000
	var evs [][]*replication.BinlogEvent
	for i := range txns + 1 {
		evs = append(evs, skippedTxn(mysqlFlavor, uint64(2+i), uint32(1000*i)))
	}
	handle := func(txn []*replication.BinlogEvent) {
		for _, ev := range txn {
			if err := s.handle(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first one builds the table's plan and the pending position's timer.
	handle(evs[0])
	i := 1
	allocs := testing.AllocsPerRun(txns-1, func() {
		handle(evs[i])
		i++
	})
	if allocs != 0 {
		t.Errorf("a skipped transaction costs %v allocations", allocs)
	}
	if got, want := s.cursor.pos.String(), want+strconv.Itoa(1+i); got != want {
		t.Errorf("position after %d skipped transactions: %s, want %s", i, got, want)
	}
	if len(s.out.batch) != 0 || *sent != 0 || !s.skip.pending || s.cursor.inTxn {
		t.Errorf("after skipped transactions: batch %d, sent %d, pending %v, in transaction %v", len(s.out.batch), *sent, s.skip.pending, s.cursor.inTxn)
	}
	if obs.n < 1 || obs.n > 2+int(time.Since(time.Unix(0, s.skip.lastVGTID))/observeEvery) {
		t.Errorf("the observer heard %d positions", obs.n)
	}
	// The VGTID that carries the position tells the observer the last one.
	reported, was := obs.n, s.skip.unobserved
	s.add(s.vgtidEvent())
	if s.skip.unobserved || was && obs.n != reported+1 {
		t.Errorf("the VGTID did not tell the observer the position (%d, then %d reports)", reported, obs.n)
	}
	if got := s.out.batch[0].Vgtid.ShardGtids[0].Gtid; got != s.cursor.pos.String() {
		t.Errorf("VGTID %s, want %s", got, s.cursor.pos)
	}
}

// heard records the positions an observer hears.
type heard struct{ pos []string }

func (h *heard) Position(pos string, _ time.Time)  { h.pos = append(h.pos, pos) }
func (h *heard) CopyProgress(string, int64, int64) {}

// TestObserverHearsSentPositions: after each transaction sent, the observer hears the
// position its VGTID carries (a commit hands the observer the text it formatted for them).
func TestObserverHearsSentPositions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mysql bool
		from  string
	}{
		{"MariaDB", false, "MariaDB/0-1-1"},
		{"MySQL", true, "MySQL56/" + skipUUID + ":1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := skippingStream(t, tc.from)
			// Without skipping, a transaction the filter leaves out is sent as BEGIN, COMMIT
			// and its VGTID.
			s.skip.enabled = false
			obs := &heard{}
			s.observer = obs
			var vgtids []string
			s.out.send = func(evs []*binlogdata.VEvent) error {
				for _, ev := range evs {
					if ev.Type == binlogdata.VEventType_VGTID {
						vgtids = append(vgtids, ev.Vgtid.ShardGtids[0].Gtid)
					}
				}
				return nil
			}
			for i := range 3 {
				for _, ev := range skippedTxn(tc.mysql, uint64(2+i), uint32(1000*i)) {
					if err := s.handle(ev); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.out.flush(); err != nil {
					t.Fatal(err)
				}
			}
			if len(vgtids) != 3 || !slices.Equal(obs.pos, vgtids) {
				t.Errorf("the observer heard %q, the VGTIDs sent carry %q", obs.pos, vgtids)
			}
			if want := s.cursor.pos.String(); len(obs.pos) == 0 || obs.pos[len(obs.pos)-1] != want {
				t.Errorf("the observer last heard %q, the position is %s", obs.pos, want)
			}
		})
	}
}
