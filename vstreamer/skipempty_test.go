package vstreamer

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

var filterSKA = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "ska"}}}

// TestSkipEmptyTransactions: with SkipEmptyTransactions, transactions on a table the filter
// leaves out send nothing; the next transaction that is sent carries their position in its
// VGTID, and a stream that sees nothing else gets a lone VGTID with its next heartbeat, or
// after a second without one. Without the option they are sent as Vitess sends them.
func TestSkipEmptyTransactions(t *testing.T) {
	execSQL(t, "DROP TABLE IF EXISTS ska", "DROP TABLE IF EXISTS skb",
		"CREATE TABLE ska (id INT PRIMARY KEY)", "CREATE TABLE skb (id INT PRIMARY KEY)")
	e := newEngine(t)

	t.Run("next transaction carries the position", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true})
		ts.expect("GTID", "OTHER", "VGTID")
		// One connection, back to back: well within the second a pending position waits.
		execSQL(t, "INSERT INTO skb VALUES (1)", "BEGIN", "INSERT INTO skb VALUES (2)", "UPDATE skb SET id = 3 WHERE id = 2", "COMMIT",
			"INSERT INTO ska VALUES (1)")
		head := headPos(t)
		evs := ts.expect("BEGIN", "FIELD", "ROW ska +[1]", "GTID", "COMMIT", "VGTID")
		if got := evs[5].Vgtid.ShardGtids[0].Gtid; got != head {
			t.Errorf("VGTID after the row is %s, want %s (with skb's transactions)", got, head)
		}

		// Nothing else to send: a lone VGTID after about a second carries skb's transaction.
		execSQL(t, "INSERT INTO skb VALUES (4)")
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
		execSQL(t, "INSERT INTO skb VALUES (5)", "INSERT INTO ska VALUES (2)")
		want := []string{"BEGIN", "FIELD", "ROW ska +[2]", "GTID", "COMMIT", "VGTID"}
		rs.expect(want...)
		ts.expect(append([]string{want[0]}, want[2:]...)...)
	})

	t.Run("heartbeat carries the position", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true,
			HeartbeatInterval: 200 * time.Millisecond})
		ts.expect("GTID", "OTHER", "VGTID")
		execSQL(t, "INSERT INTO skb VALUES (6)")
		head := headPos(t)
		var seen []string
		for {
			ev := ts.next(true)
			seen = append(seen, short(ev))
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
			execSQL(t, "INSERT INTO skb VALUES (100 + "+strconv.Itoa(i)+")")
			time.Sleep(10 * time.Millisecond)
		}
		most := int(time.Since(start)/pendingPositionDelay) + 1
		var got []string
		for len(ts.events) > 0 {
			got = append(got, short(ts.next(true)))
		}
		if n := len(got); n < 1 || n > most || slices.ContainsFunc(got, func(l string) bool { return l != "VGTID" }) {
			t.Errorf("during a run of skipped transactions: %v, want 1 to %d lone VGTIDs", got, most)
		}
	})

	t.Run("without the option", func(t *testing.T) {
		ts := startStream(t, e, Request{Position: "current", Filter: filterSKA})
		ts.expect("GTID", "OTHER", "VGTID")
		execSQL(t, "INSERT INTO skb VALUES (7)")
		ts.expect("BEGIN", "GTID", "COMMIT", "VGTID")
	})
}

// TestSkipEmptyResumeFromEveryVGTID records a stream that skips empty transactions, then
// restarts it from each VGTID it carried: each restarted stream is exactly the rest of the
// recording (lone VGTIDs aside, which come with time).
func TestSkipEmptyResumeFromEveryVGTID(t *testing.T) {
	execSQL(t, "DROP TABLE IF EXISTS ska", "DROP TABLE IF EXISTS skb",
		"CREATE TABLE ska (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE skb (id INT PRIMARY KEY)")
	e := newEngine(t)
	req := Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: true}
	ts := startStream(t, e, req)
	first := ts.expect("GTID", "OTHER", "VGTID")
	execSQL(t,
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
