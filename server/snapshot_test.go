package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// replica applies a stream's events to a table's rows, as a consumer keeping a copy of the
// table does: ROW events by their images, snapshot rows as the row's state.
type replica struct {
	mu     sync.Mutex
	events []*binlogdata.VEvent
	// copied counts snapshot rows; resync the VGTIDs whose copy state marks the table
	// resync; completed the COPY_COMPLETED events.
	copied, resync, completed int
}

func (r *replica) handle(_ context.Context, events []*binlogdata.VEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
	return nil
}

// rollback drops the events after the last VGTID: a stream resumed from that VGTID sends
// them again.
func (r *replica) rollback() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].GetType() == binlogdata.VEventType_VGTID {
			r.events = r.events[:i+1]
			return
		}
	}
	r.events = nil
}

// replay applies the events to the starting rows.
func (r *replica) replay(start map[string]string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := maps.Clone(start)
	r.copied, r.resync, r.completed = 0, 0, 0
	for _, ev := range r.events {
		switch ev.GetType() {
		case binlogdata.VEventType_ROW:
			for _, rc := range ev.GetRowEvent().GetRowChanges() {
				if b := rc.GetBefore(); b != nil {
					delete(rows, rowCells(b)[0])
				}
				if a := rc.GetAfter(); a != nil {
					c := rowCells(a)
					rows[c[0]] = c[1]
					if rc.GetBefore() == nil && ev.GetTimestamp() == 0 {
						r.copied++
					}
				}
			}
		case binlogdata.VEventType_VGTID:
			for _, tp := range ev.GetVgtid().GetShardGtids()[0].GetTablePKs() {
				if tp.GetResync() {
					r.resync++
				}
			}
		case binlogdata.VEventType_COPY_COMPLETED:
			r.completed++
		default:
		}
	}
	return rows
}

// rowCells are a row's values as text (cells in panics_test.go splits them).
func rowCells(row *query.Row) []string {
	var out []string
	for _, c := range cells(row) {
		out = append(out, string(c))
	}
	return out
}

func tableRows(t *testing.T, table string) map[string]string {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only
	res, err := conn.Execute("SELECT id, v FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for i := range res.RowNumber() {
		id, _ := res.GetString(i, 0)
		v, _ := res.GetString(i, 1)
		rows[id] = v
	}
	return rows
}

// A Snapshot request on a running stream copies the table again while a writer inserts,
// updates and deletes its rows; the stream is broken in the middle of the copy and resumed
// from its last VGTID. A consumer that had the table as it was when the stream started
// and applies every event has the table as it is: every delete reached it, including
// those of rows the copy had not read yet (their changes stream during the copy).
func TestSnapshotOnRunningStream(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS snap", "CREATE TABLE snap (id INT PRIMARY KEY, v VARCHAR(32))")
	var values []string
	for i := 1; i <= 600; i++ {
		values = append(values, fmt.Sprintf("(%d, 'init-%d')", i, i))
	}
	testkit.MustExec(t, db, "INSERT INTO snap VALUES "+strings.Join(values, ","))
	start := tableRows(t, "snap")
	addr := serve(t, dbConfig(), Options{})
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()

	r := &replica{}
	snaps := make(chan client.Snapshot, 1)
	// A paced copy, so that it is still under way when the stream breaks.
	req := client.Request{Filter: client.ParseTables("snap"), CopyChunkRows: 40, CopyMaxRowsPerSecond: 2000,
		HeartbeatInterval: 100 * time.Millisecond, Snapshots: snaps}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cl.Stream(ctx, req, r.handle) }()
	testkit.WaitFor(t, 20*time.Second, "the stream's first position", func() bool { return cl.LastPosition() != nil })

	writer := func(n int, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range n {
			id := 1 + rng.IntN(700)
			switch rng.IntN(3) {
			case 0:
				testkit.MustExec(t, db, fmt.Sprintf("DELETE FROM snap WHERE id = %d", id))
			case 1:
				testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO snap VALUES (%d, 'ins-%d') ON DUPLICATE KEY UPDATE v = 'dup-%d'", id, i, i))
			default:
				testkit.MustExec(t, db, fmt.Sprintf("UPDATE snap SET v = 'upd-%d' WHERE id = %d", i, id))
			}
		}
	}
	writer(30, 1)
	snaps <- client.Snapshot{Tables: []string{"snap"}}
	go writer(150, 2)
	// Some snapshot rows, not all: then the stream breaks.
	testkit.WaitFor(t, 20*time.Second, "the copy under way", func() bool { r.replay(start); return r.copied >= 120 })
	cancel()
	<-done
	r.rollback()
	pos := cl.LastPosition()
	if sg := pos.GetShardGtids()[0]; len(sg.GetTablePKs()) != 1 || !sg.GetTablePKs()[0].GetResync() {
		t.Fatalf("the position mid-copy has table_p_ks %v, want snap marked resync", sg.GetTablePKs())
	}
	writer(150, 3)

	req.Position, req.Snapshots = pos, nil
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- cl.Stream(ctx, req, r.handle) }()
	writer(50, 4)
	testkit.MustExec(t, db, "INSERT INTO snap VALUES (100000, 'last')")
	want := tableRows(t, "snap")
	// The table's changes stream during its copy: the last insert may come before the copy
	// ends.
	testkit.WaitFor(t, 20*time.Second, "the replica to reach the last insert and the copy's end", func() bool {
		return r.replay(start)["100000"] == "last" && r.completed > 0
	})
	got := r.replay(start)
	t.Logf("%d snapshot rows, %d VGTIDs with resync copy state, %d COPY_COMPLETED", r.copied, r.resync, r.completed)
	if r.completed == 0 || r.resync == 0 || r.copied < len(start)/2 {
		t.Errorf("%d snapshot rows, %d VGTIDs with resync copy state, %d COPY_COMPLETED", r.copied, r.resync, r.completed)
	}
	var diff []string
	for id, v := range want {
		if got[id] != v {
			diff = append(diff, fmt.Sprintf("id %s: replica %q, table %q", id, got[id], v))
		}
	}
	for id, v := range got {
		if _, ok := want[id]; !ok {
			diff = append(diff, fmt.Sprintf("id %s: replica %q, not in the table", id, v))
		}
	}
	if len(diff) > 0 {
		t.Fatalf("%d rows differ:\n%s", len(diff), strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
}

// A Snapshot request with a condition copies only the rows it holds for.
func TestSnapshotWhere(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS snapw", "CREATE TABLE snapw (id INT PRIMARY KEY, v VARCHAR(32))")
	var values []string
	for i := 1; i <= 100; i++ {
		values = append(values, fmt.Sprintf("(%d, 'v%d')", i, i))
	}
	testkit.MustExec(t, db, "INSERT INTO snapw VALUES "+strings.Join(values, ","))
	addr := serve(t, dbConfig(), Options{})
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	r := &replica{}
	snaps := make(chan client.Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = cl.Stream(ctx, client.Request{Filter: client.ParseTables("snapw"), CopyChunkRows: 15, Snapshots: snaps}, r.handle)
	}()
	testkit.WaitFor(t, 20*time.Second, "the stream's first position", func() bool { return cl.LastPosition() != nil })
	snaps <- client.Snapshot{Tables: []string{"snapw"}, Where: "id > 60 and id != 70"}
	testkit.WaitFor(t, 20*time.Second, "the copy's end", func() bool { r.replay(map[string]string{}); return r.completed > 0 })
	var ids []string
	r.mu.Lock()
	for _, ev := range r.events {
		for _, rc := range ev.GetRowEvent().GetRowChanges() {
			if rc.GetBefore() == nil && ev.GetTimestamp() == 0 {
				ids = append(ids, rowCells(rc.GetAfter())[0])
			}
		}
	}
	r.mu.Unlock()
	var want []string
	for i := 61; i <= 100; i++ {
		if i != 70 {
			want = append(want, fmt.Sprint(i))
		}
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("snapshot rows %v, want %v", ids, want)
	}
}

// A Snapshot request naming no table, a pattern, or a table the filter does not stream ends
// the stream with InvalidArgument saying what to fix.
func TestSnapshotBadRequests(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS snap2 (id INT PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS other2 (id INT PRIMARY KEY)")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	filter := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "snap2"}}}
	for _, tc := range []struct {
		name, message string
		tables        []string
		where         string
	}{
		{"no table", "name at least one table", nil, ""},
		{"pattern", "not a table name", []string{"/snap.*"}, ""},
		{"not streamed", "other2", []string{"other2"}, ""},
		{"no such table", "nosuch", []string{"nosuch"}, ""},
		{"no such column", "nosuchcol", []string{"snap2"}, "nosuchcol = 1"},
		{"not a condition", "snap2", []string{"snap2"}, "id = 1; drop table snap2"},
		{"keyrange", "in_keyrange cannot be read by a snapshot", []string{"snap2"}, "in_keyrange('-80')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Snapshot{Snapshot: &vstreamv1.Snapshot{Tables: tc.tables, Where: tc.where}}}
			st := firstError(t, cc, context.Background(), startMsg("current", filter), snap)
			if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.message) {
				t.Fatalf("got %v, want InvalidArgument naming %q", st.Err(), tc.message)
			}
		})
	}
}
