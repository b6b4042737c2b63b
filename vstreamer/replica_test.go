package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/position"
)

// The failover of a shard's stream rests on one fact these tests show on real servers: a
// replica's binlog holds the primary's transactions under the same GTIDs, so a position a
// stream from the primary sent is one the replica can stream from, with the same
// transactions after it; and a position holding a GTID the replica lacks is refused.

// replicaPair starts a primary of the test flavor and a replica of it. The package's server
// is not used: the failover kills the primary, and a replica of it would copy every other
// test's tables.
func replicaPair(t *testing.T) (primary, replica *testdb.Server) {
	t.Helper()
	primary, err := testdb.Start(testdb.Options{Database: "test", Flavor: db.Flavor()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Close)
	replica, err = primary.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Close)
	return primary, replica
}

// engineOn is bareEngine on another server than the package's.
func engineOn(t testing.TB, srv *testdb.Server) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Addr: srv.Addr(), User: srv.User(), Password: srv.Password(), Database: "test", Keyspace: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.conns.Close)
	return e
}

func execOn(t testing.TB, srv *testdb.Server, sqls ...string) {
	t.Helper()
	if err := srv.Exec(sqls...); err != nil {
		t.Fatal(err)
	}
}

// posLine is evtext.Short(ev) with the positions it carries: a GTID event's transaction GTID, a
// VGTID's position. Two streams that send the same lines sent the same transactions with
// the same row values at the same positions.
func posLine(ev *binlogdata.VEvent) string {
	switch ev.Type {
	case binlogdata.VEventType_GTID:
		return "GTID " + ev.EventGtid
	case binlogdata.VEventType_VGTID:
		return "VGTID " + ev.Vgtid.ShardGtids[0].Gtid
	}
	return evtext.Short(ev)
}

// readLines reads n events (heartbeats left out) as lines.
func (ts *testStream) readLines(n int) ([]string, []*binlogdata.VEvent) {
	ts.t.Helper()
	lines := make([]string, 0, n)
	evs := make([]*binlogdata.VEvent, 0, n)
	for range n {
		ev := ts.next(false)
		evs = append(evs, ev)
		lines = append(lines, posLine(ev))
	}
	return lines, evs
}

// expectLines reads len(want) events and compares them with want line by line, then checks
// nothing but heartbeats follows.
func (ts *testStream) expectLines(want []string) {
	ts.t.Helper()
	got, _ := ts.readLines(len(want))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		ts.t.Fatalf("events differ\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	ts.expectQuiet()
}

// expectQuiet checks nothing but heartbeats comes for a moment: no event sent twice.
func (ts *testStream) expectQuiet() {
	ts.t.Helper()
	quiet := time.After(500 * time.Millisecond)
	for {
		select {
		case ev := <-ts.events:
			if ev.Type != binlogdata.VEventType_HEARTBEAT {
				ts.t.Fatalf("after the expected events, another: %s", posLine(ev))
			}
		case <-quiet:
			return
		}
	}
}

// matchLines checks got against want, where a want of "ROW ..." or "FIELD ..." must be
// equal and a bare event type ("GTID", "VGTID") matches any event of that type.
func matchLines(t *testing.T, got, want []string) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(want); i++ {
		typ, _, _ := strings.Cut(got[i], " ")
		same = got[i] == want[i] || typ == want[i]
	}
	if !same {
		t.Fatalf("events differ\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// restAfter is what a stream started at the VGTID rec[i] sends: rec's lines after it, with
// the FIELD event rec sent earlier before the first row of its table.
func restAfter(rec []*binlogdata.VEvent, i int) []string {
	var rest []string
	for _, ev := range rec[i+1:] {
		rest = append(rest, posLine(ev))
	}
	return withFieldBeforeFirstRow(rest, rec[:i+1])
}

// vgtidOf is the position a VGTID event carries.
func vgtidOf(t *testing.T, ev *binlogdata.VEvent) string {
	t.Helper()
	if ev.Type != binlogdata.VEventType_VGTID {
		t.Fatalf("want a VGTID event, got %s", posLine(ev))
	}
	return ev.Vgtid.ShardGtids[0].Gtid
}

// TestReplicaStreamsFromPrimaryPositions: from every position a stream on the primary sent,
// a stream on the caught-up replica sends exactly what the primary's stream sent after it;
// a position holding a GTID the replica has not applied is refused, naming that GTID, until
// the replica has it; and after a kill -9 of the primary and the replica's promotion, a
// stream on the replica goes on from a primary's position into the promoted writes.
func TestReplicaStreamsFromPrimaryPositions(t *testing.T) {
	primary, replica := replicaPair(t)
	execOn(t, primary, "CREATE TABLE rp (id INT PRIMARY KEY, v VARCHAR(10))")
	flt := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "rp"}}}
	pe, re := engineOn(t, primary), engineOn(t, replica)

	ps := startStream(t, pe, Request{Position: CurrentPosition, Filter: flt})
	_, head := ps.readLines(3)
	matchLines(t, []string{evtext.Short(head[0]), evtext.Short(head[1]), evtext.Short(head[2])}, []string{"GTID", "OTHER", "VGTID"})

	// SQL in on the primary -> events out of its stream.
	txns := []struct {
		sql  []string
		want []string
	}{
		{[]string{"INSERT INTO rp VALUES (1, 'a')"},
			[]string{"BEGIN", "FIELD rp id:INT32 v:VARCHAR", "ROW rp +[1 a]", "GTID", "COMMIT", "VGTID"}},
		{[]string{"BEGIN", "INSERT INTO rp VALUES (2, 'b')", "UPDATE rp SET v = 'c' WHERE id = 1", "COMMIT"},
			[]string{"BEGIN", "ROW rp +[2 b]", "ROW rp [1 a]>[1 c]", "GTID", "COMMIT", "VGTID"}},
		{[]string{"ALTER TABLE rp ADD COLUMN w INT"},
			[]string{"GTID", "DDL ALTER TABLE rp ADD COLUMN w INT", "VGTID"}},
		{[]string{"DELETE FROM rp WHERE id = 2"},
			[]string{"BEGIN", "FIELD rp id:INT32 v:VARCHAR w:INT32", "ROW rp -[2 b NULL]", "GTID", "COMMIT", "VGTID"}},
		{[]string{"INSERT INTO rp VALUES (3, 'd', 4)", "INSERT INTO rp VALUES (4, 'e', 5)"},
			[]string{"BEGIN", "ROW rp +[3 d 4]", "GTID", "COMMIT", "VGTID", "BEGIN", "ROW rp +[4 e 5]", "GTID", "COMMIT", "VGTID"}},
	}
	rec := []*binlogdata.VEvent{head[2]}
	for _, tx := range txns {
		execOn(t, primary, tx.sql...)
		got, evs := ps.readLines(len(tx.want))
		matchLines(t, got, tx.want)
		rec = append(rec, evs...)
	}
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}

	t.Run("same events from every primary position", func(t *testing.T) {
		for i, ev := range rec {
			if ev.Type != binlogdata.VEventType_VGTID || i == len(rec)-1 {
				continue
			}
			p := vgtidOf(t, ev)
			t.Run(p, func(t *testing.T) {
				rs := startStream(t, re, Request{Position: p, Filter: flt})
				rs.expectLines(restAfter(rec, i))
			})
		}
	})

	// A transaction the replica has not applied: the primary's stream sends a position that
	// holds it, which the replica refuses as ahead of it, naming the GTID it lacks.
	if err := replica.StopReplication(); err != nil {
		t.Fatal(err)
	}
	execOn(t, primary, "UPDATE rp SET w = 6 WHERE id = 4")
	missedLines, missed := ps.readLines(5)
	matchLines(t, missedLines, []string{"BEGIN", "ROW rp [4 e 5]>[4 e 6]", "GTID", "COMMIT", "VGTID"})
	rec = append(rec, missed...)
	p := vgtidOf(t, missed[4])
	gtid := missed[2].EventGtid
	lacks := "uuid " + gtid
	if !onMySQL() {
		// MariaDB compares a domain's sequence numbers: 0-1-9 against the replica's 0-1-8.
		var domain, server, seq uint64
		if _, err := fmt.Sscanf(gtid, "%d-%d-%d", &domain, &server, &seq); err != nil {
			t.Fatalf("GTID %q: %v", gtid, err)
		}
		lacks = fmt.Sprintf("domain %d at sequence %d, server at %d", domain, seq, seq-1)
	}
	t.Run("position ahead of the replica", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := re.Stream(ctx, Request{Position: p, Filter: flt}, func([]*binlogdata.VEvent) error { return nil })
		if !errors.Is(err, ErrAhead) || !strings.Contains(err.Error(), lacks) {
			t.Fatalf("stream on the replica from %s: %v\nwant ErrAhead naming %q", p, err, lacks)
		}
	})

	// Caught up again, the replica streams from there, and a stream started before the
	// failover goes on across it.
	if err := replica.StartReplication(); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	before := startStream(t, re, Request{Position: p, Filter: flt})
	execOn(t, primary, "BEGIN", "INSERT INTO rp VALUES (5, 'f', 7)", "DELETE FROM rp WHERE id = 1", "COMMIT")
	lastLines, last := ps.readLines(6)
	matchLines(t, lastLines, []string{"BEGIN", "ROW rp +[5 f 7]", "ROW rp -[1 c NULL]", "GTID", "COMMIT", "VGTID"})
	rec = append(rec, last...)
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	fromP := restAfter(rec, len(rec)-len(last)-1)
	before.expectLines(fromP)

	// kill -9 of the primary; the replica, promoted, takes the writes.
	ps.stop()
	primary.Kill()
	if err := replica.Promote(); err != nil {
		t.Fatal(err)
	}
	execOn(t, replica, "INSERT INTO rp VALUES (6, 'g', 8)")
	execOn(t, replica, "UPDATE rp SET v = 'h' WHERE id = 3")
	promotedLines, promoted := before.readLines(10)
	matchLines(t, promotedLines, []string{
		"BEGIN", "ROW rp +[6 g 8]", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW rp [3 d 4]>[3 h 4]", "GTID", "COMMIT", "VGTID",
	})
	// The promoted replica's transactions carry its own GTIDs, after the primary's: the
	// positions hold every transaction the primary's stream sent, and the new ones.
	own := fmt.Sprintf("-%d-", replica.ServerID())
	if onMySQL() {
		u, err := replica.Conn("")
		if err != nil {
			t.Fatal(err)
		}
		uuid, err := queryString(u, "SELECT @@server_uuid")
		_ = u.Close()
		if err != nil {
			t.Fatal(err)
		}
		own = uuid + ":"
	}
	primaryLast, err := position.Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*binlogdata.VEvent{promoted[2], promoted[7]} {
		if !strings.Contains(ev.EventGtid, own) {
			t.Errorf("promoted replica's transaction %s: want a GTID of its own (%s...)", ev.EventGtid, own)
		}
	}
	for _, ev := range []*binlogdata.VEvent{promoted[4], promoted[9]} {
		pos, err := position.Parse(vgtidOf(t, ev))
		if err != nil {
			t.Fatal(err)
		}
		if !pos.Contains(primaryLast) {
			t.Errorf("position %s after the failover lacks the primary's %s", pos, primaryLast)
		}
	}

	// A stream resumed from the primary's position on the promoted replica sends the same:
	// the primary's last transaction, then the promoted writes, each once.
	t.Run("resume after failover", func(t *testing.T) {
		rs := startStream(t, re, Request{Position: p, Filter: flt})
		rs.expectLines(append(fromP, promotedLines...))
	})
}

// TestReplicaDivergedAfterFailover: the replica had not applied the primary's last
// transaction when the primary died, and took a write of its own after its promotion. The
// primary's last position names a transaction the promoted replica will never have, and a
// stream from it is refused as ErrAhead naming that transaction: on MySQL the position's set
// holds a GTID the replica's lacks; on MariaDB the replica has the position's sequence number
// in the domain, from another server id, and the server refuses the GTID when the stream
// asks for it. A failover takes this as "the position is not on this server", never as a
// purge to skip past.
func TestReplicaDivergedAfterFailover(t *testing.T) {
	primary, replica := replicaPair(t)
	execOn(t, primary, "CREATE TABLE rd (id INT PRIMARY KEY)", "INSERT INTO rd VALUES (1)")
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	if err := replica.StopReplication(); err != nil {
		t.Fatal(err)
	}
	execOn(t, primary, "INSERT INTO rd VALUES (2)")
	lost, err := primary.Position()
	if err != nil {
		t.Fatal(err)
	}
	primary.Kill()
	if err := replica.Promote(); err != nil {
		t.Fatal(err)
	}
	execOn(t, replica, "INSERT INTO rd VALUES (3)")
	replicaPos, err := replica.Position()
	if err != nil {
		t.Fatal(err)
	}
	// The lost transaction is the primary's third (CREATE, two INSERTs).
	set := strings.TrimPrefix(lost, string(serverFlavor())+"/")
	lacks := "GTID " + set
	if onMySQL() {
		lacks = "uuid " + strings.Replace(set, ":1-3", ":3", 1)
	} else if own := fmt.Sprintf("MariaDB/0-%d-3", replica.ServerID()); set != "0-1-3" || replicaPos != own {
		t.Fatalf("primary at %s, promoted replica at %s: want MariaDB/0-1-3 and %s", lost, replicaPos, own)
	}

	re := engineOn(t, replica)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sent []string
	err = re.Stream(ctx, Request{Position: lost, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "rd"}}}}, func(evs []*binlogdata.VEvent) error {
		for _, ev := range evs {
			sent = append(sent, posLine(ev))
		}
		return nil
	})
	if !errors.Is(err, ErrAhead) || errors.Is(err, ErrPurged) || !strings.Contains(err.Error(), lacks) {
		t.Fatalf("stream on the promoted replica (at %s) from the primary's %s: %v\nwant ErrAhead naming %s", replicaPos, lost, err, lacks)
	}
	if len(sent) != 0 {
		t.Fatalf("the refused stream sent %v", sent)
	}
	t.Logf("refused: %v", err)
}

// TestReplicaFailoverUnderWriter: a writer commits two-row transactions to the primary,
// which is killed (-9) between or inside them; the replica is promoted and the writer goes
// on against it. A stream on the replica running through the failover, and one resumed after
// it from where the first started, send every row the replica ends up with, once, each
// transaction whole: a transaction the replica had only partly received when its primary
// died is never streamed (the replica never applied it), and nothing it applied is missing.
func TestReplicaFailoverUnderWriter(t *testing.T) {
	primary, replica := replicaPair(t)
	execOn(t, primary, "CREATE TABLE rw (id INT PRIMARY KEY, txn INT)")
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	from, err := replica.Position()
	if err != nil {
		t.Fatal(err)
	}
	flt := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "rw"}}}
	re := engineOn(t, replica)
	across := startStream(t, re, Request{Position: from, Filter: flt})

	// The writer moves to the replica once it is promoted; its transactions meanwhile fail
	// (the primary is gone, or went in mid-commit) and are not retried: the replica's table
	// says which ones took.
	const total, killAfter = 120, 40
	var target atomic.Pointer[testdb.Server]
	target.Store(primary)
	var written atomic.Int64
	promoted := make(chan struct{})
	done := make(chan int)
	go func() {
		failed := 0
		for n := 1; n <= total; n++ {
			if n == total/2 {
				<-promoted
			}
			err := target.Load().Exec("BEGIN",
				fmt.Sprintf("INSERT INTO rw VALUES (%d, %d)", 2*n, n),
				fmt.Sprintf("INSERT INTO rw VALUES (%d, %d)", 2*n+1, n),
				"COMMIT")
			if err != nil {
				failed++
			}
			written.Store(int64(n))
		}
		done <- failed
	}()
	for written.Load() < killAfter {
		time.Sleep(time.Millisecond)
	}
	primary.Kill()
	if err := replica.Promote(); err != nil {
		t.Fatal(err)
	}
	target.Store(replica)
	close(promoted)
	failed := <-done
	t.Logf("%d of %d transactions failed around the failover", failed, total)

	// What the replica has: each transaction's two rows, or neither.
	conn, err := replica.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.Execute("SELECT id, txn FROM rw ORDER BY id")
	_ = conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range r.RowNumber() {
		id, _ := r.GetInt(i, 0)
		txn, _ := r.GetInt(i, 1)
		want = append(want, fmt.Sprintf("%d/%d", id, txn))
	}
	r.Close()
	if len(want) < 2*(total/2) {
		t.Fatalf("the promoted replica has %d rows, want at least the %d written to it", len(want), 2*(total/2))
	}

	// The stream's transactions, until it has sent as many rows as the replica has.
	var got, lines, txn []string
	for len(got) < len(want) || !strings.HasPrefix(lines[len(lines)-1], "VGTID ") {
		ev := across.next(false)
		lines = append(lines, posLine(ev))
		switch ev.Type {
		case binlogdata.VEventType_BEGIN:
			txn = nil
		case binlogdata.VEventType_ROW:
			for _, rc := range ev.RowEvent.RowChanges {
				c := evtext.Cells(rc.After)
				txn = append(txn, string(c[0])+"/"+string(c[1]))
			}
		case binlogdata.VEventType_COMMIT:
			if len(txn) != 2 || strings.Split(txn[0], "/")[1] != strings.Split(txn[1], "/")[1] {
				t.Fatalf("a transaction streamed as %v: want the two rows of one writer transaction", txn)
			}
			got = append(got, txn...)
		}
	}
	across.expectQuiet()
	// The writer's transactions are sequential: the stream sends them in id order.
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the stream across the failover sent rows\n  %v\nthe replica has\n  %v", got, want)
	}
	resumed := startStream(t, re, Request{Position: from, Filter: flt})
	resumed.expectLines(lines)
}
