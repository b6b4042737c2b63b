package vstreamer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// These tests run streams on the shared readers (vstreamer/fanout) beside the same streams
// on connections of their own, and compare what they send.

// ownEngine is bareEngine with a binlog connection per stream.
func ownEngine(t testing.TB) *Engine {
	e := bareEngine(t)
	e.cfg.OwnReaders = true
	return e
}

// withRing gives e's shared readers rings of n events. Their catch-up readers wait a tenth
// of a second for their streams (the default is a second): rings of a few events fill at
// once, and the tests resume many streams one after another.
func withRing(e *Engine, n int) *Engine {
	e.readers = fanout.NewPool(fanout.Config{MaxEvents: n, CatchUpWait: 100 * time.Millisecond,
		NewMarker: func() fanout.Marker { return &txnMarks{} }})
	return e
}

// headPos is the server's position now, as a stream writes it.
func headPos(t testing.TB) string {
	t.Helper()
	return serverPos(t).String()
}

// dumpThreads counts the binlog dump connections on the server.
func dumpThreads(t testing.TB) int {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, _ := r.GetInt(0, 0)
	return int(n)
}

// settleDumps waits for the dump connections of earlier tests to go, and returns how many
// stay.
func settleDumps(t testing.TB) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := dumpThreads(t)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// line renders an event with what a client keeps of it: its short form, its positions and
// its source.
func line(ev *binlogdata.VEvent) string {
	s := evtext.Short(ev)
	switch ev.Type {
	case binlogdata.VEventType_GTID:
		s += " " + ev.Gtid
	case binlogdata.VEventType_VGTID:
		s += " " + ev.Vgtid.ShardGtids[0].Gtid
	default:
		// The short form says it all.
	}
	if ev.EventGtid != "" {
		s += " event_gtid=" + ev.EventGtid
	}
	if ev.Source != nil {
		s += " source{" + ev.Source.String() + "}"
	}
	return s
}

// until reads a stream's events up to the VGTID at final.
func (ts *testStream) until(final string) []string {
	ts.t.Helper()
	var out []string
	for {
		ev := ts.next(false)
		out = append(out, line(ev))
		if ev.Type == binlogdata.VEventType_VGTID && ev.Vgtid.ShardGtids[0].Gtid == final {
			return out
		}
	}
}

// kinds records the readers a stream was served by.
type kinds struct {
	mu   sync.Mutex
	seen []string
}

func (k *kinds) Position(string, time.Time)        {}
func (k *kinds) CopyProgress(string, int64, int64) {}
func (k *kinds) Reader(kind string)                { k.mu.Lock(); k.seen = append(k.seen, kind); k.mu.Unlock() }
func (k *kinds) get() []string                     { k.mu.Lock(); defer k.mu.Unlock(); return slices.Clone(k.seen) }
func (k *kinds) has(kind string) bool              { return slices.Contains(k.get(), kind) }
func (k *kinds) String() string                    { return strings.Join(k.get(), ",") }
func newKinds() *kinds                             { return &kinds{} }

func (k *kinds) last() string {
	s := k.get()
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// foWrites writes transactions of several shapes to fo1 and fo2, numbered from n.
func foWrites(t testing.TB, n int) {
	t.Helper()
	testkit.MustExec(t, db,
		fmt.Sprintf("INSERT INTO fo1 VALUES (%d, 'a')", n),
		"BEGIN", fmt.Sprintf("INSERT INTO fo1 VALUES (%d, 'b')", n+1), fmt.Sprintf("INSERT INTO fo2 VALUES (%d, 'x')", n),
		fmt.Sprintf("UPDATE fo1 SET v = 'c' WHERE id = %d", n), "COMMIT",
		"BEGIN", fmt.Sprintf("INSERT INTO fo2 VALUES (%d, 'y')", n+1), "ROLLBACK",
		fmt.Sprintf("DELETE FROM fo2 WHERE id = %d", n),
	)
}

// TestSharedReaderSameEvents starts streams at once at different positions, with and without
// sources and filters, on shared readers and on connections of their own: each gets exactly
// the events of its twin.
func TestSharedReaderSameEvents(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fo1", "CREATE TABLE fo1 (id INT PRIMARY KEY, v VARCHAR(20))", "DROP TABLE IF EXISTS fo2", "CREATE TABLE fo2 (id INT PRIMARY KEY, v VARCHAR(20))")
	shared, own := bareEngine(t), ownEngine(t)
	// A stream at the head keeps the shared reader running while the others start.
	head := startStream(t, shared, Request{Position: "current"})
	head.expect("GTID", "OTHER", "VGTID")
	p0 := headPos(t)
	foWrites(t, 10)
	p1 := headPos(t)
	foWrites(t, 20)
	testkit.MustExec(t, db, "ALTER TABLE fo2 ADD COLUMN w INT")
	p2 := headPos(t)

	type twin struct {
		name        string
		shared, own *testStream
		k           *kinds
	}
	var twins []twin
	fo1 := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "fo1"}}}
	// ("current" is the head stream's: twins started from it could see different heads.)
	for _, pos := range []string{p0, p1, p2} {
		for _, req := range []Request{{}, {WithSource: true}, {Filter: fo1}} {
			req.Position = pos
			k := newKinds()
			req2 := req
			req2.Observer = k
			twins = append(twins, twin{name: fmt.Sprintf("%s src=%v filter=%v", pos, req.WithSource, req.Filter != nil),
				shared: startStream(t, shared, req2), own: startStream(t, own, req), k: k})
		}
	}
	testkit.MustExec(t, db, "ALTER TABLE fo1 ADD COLUMN w INT", "INSERT INTO fo1 VALUES (99, 'z', 1)", "INSERT INTO fo2 VALUES (99, 'z', 1)")
	final := headPos(t)
	for _, tw := range twins {
		got, want := tw.shared.until(final), tw.own.until(final)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the shared reader's stream differs\n got:\n  %s\nwant:\n  %s", tw.name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if tw.k.last() != ReaderShared {
			t.Errorf("%s: served by %s, want it to end on the shared reader", tw.name, tw.k)
		}
	}
	head.until(final)
}

// TestSharedReaderConnections: streams at the head share one dump connection, and streams
// resumed from one old position add one catch-up connection, which ends once they reach the
// shared reader.
func TestSharedReaderConnections(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fc", "CREATE TABLE fc (id INT PRIMARY KEY, v VARCHAR(20))")
	base := settleDumps(t)
	e := bareEngine(t)
	old := headPos(t)
	for i := range 30 {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO fc VALUES (%d, 'a')", i))
	}
	const n = 6
	var heads []*testStream
	for range n {
		ts := startStream(t, e, Request{Position: "current"})
		ts.expect("GTID", "OTHER", "VGTID")
		heads = append(heads, ts)
	}
	waitDumps(t, base+1)
	var behind []*testStream
	var ks []*kinds
	for range n {
		k := newKinds()
		behind = append(behind, startStream(t, e, Request{Position: old, Observer: k}))
		ks = append(ks, k)
	}
	testkit.MustExec(t, db, "INSERT INTO fc VALUES (100, 'b')")
	final := headPos(t)
	done := make(chan struct{})
	maxSeen := 0
	go func() {
		defer close(done)
		for i := range behind {
			behind[i].until(final)
		}
	}()
	for {
		maxSeen = max(maxSeen, dumpThreads(t)-base)
		select {
		case <-done:
		case <-time.After(5 * time.Millisecond):
			continue
		}
		break
	}
	if maxSeen > 2 {
		t.Errorf("%d dump connections for %d streams at the head and %d from one old position, want at most 2", maxSeen, n, n)
	}
	for i, k := range ks {
		if !k.has(ReaderCatchUp) || k.last() != ReaderShared {
			t.Errorf("stream %d from the old position was served by %s, want catch-up then shared", i, k)
		}
	}
	waitDumps(t, base+1)
	for _, ts := range heads {
		ts.until(final)
	}
	if got := e.BinlogReaders(); got[ReaderShared] != 1 || got[ReaderCatchUp] != 0 {
		t.Errorf("BinlogReaders = %v, want one shared and no catch-up", got)
	}
}

// waitDumps waits for the server to count want dump connections.
func waitDumps(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := dumpThreads(t)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dump connections, want %d", n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gatedStream is a stream whose client reads nothing until the gate opens.
func gatedStream(t testing.TB, e *Engine, req Request, gate <-chan struct{}) *testStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testStream{t: t, events: make(chan *binlogdata.VEvent, 100000), errc: make(chan error, 1), cancel: cancel}
	go func() {
		ts.errc <- e.Stream(ctx, req, func(evs []*binlogdata.VEvent) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			for _, ev := range evs {
				ts.events <- ev
			}
			return nil
		})
	}()
	t.Cleanup(ts.stop)
	return ts
}

// TestSharedReaderStalledClient: a client that reads nothing does not hold up the others,
// which get every event; once it reads again it gets every event too, from a catch-up reader
// that starts where it fell behind, in the middle of a transaction.
func TestSharedReaderStalledClient(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fs", "CREATE TABLE fs (id INT PRIMARY KEY, v VARCHAR(20))")
	shared, own := withRing(bareEngine(t), 32), ownEngine(t)
	start := headPos(t)
	gate := make(chan struct{})
	k := newKinds()
	// One event per batch: the stalled stream stops inside the first transaction.
	stalled := gatedStream(t, shared, Request{Position: start, MaxBatchBytes: 1, Observer: k}, gate)
	var fast []*testStream
	for range 3 {
		fast = append(fast, startStream(t, shared, Request{Position: start}))
	}
	twin := startStream(t, own, Request{Position: start})
	for i := range 20 {
		sqls := []string{"BEGIN"}
		for j := range 10 {
			sqls = append(sqls, fmt.Sprintf("INSERT INTO fs VALUES (%d, 'v')", i*10+j))
		}
		testkit.MustExec(t, db, append(sqls, "COMMIT")...)
	}
	final := headPos(t)
	want := twin.until(final)
	for i, ts := range fast {
		if got := ts.until(final); !slices.Equal(got, want) {
			t.Errorf("stream %d beside a stalled one differs\n got:\n  %s\nwant:\n  %s", i, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	close(gate)
	if got := stalled.until(final); !slices.Equal(got, want) {
		t.Errorf("the stalled stream differs\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if !k.has(ReaderCatchUp) {
		t.Errorf("the stalled stream was served by %s, want it moved to a catch-up reader", k)
	}
}

// TestSharedReaderResumeFromEveryVGTID resumes a stream from each VGTID it sent on readers
// whose rings hold a few events, so that resumes start on catch-up readers and move to the
// shared one: each resumed stream is exactly the rest of the recording.
func TestSharedReaderResumeFromEveryVGTID(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fanr", "CREATE TABLE fanr (id INT PRIMARY KEY, v VARCHAR(10))")
	e := withRing(bareEngine(t), 4)
	ts := startStream(t, e, Request{Position: "current"})
	first := ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db,
		"INSERT INTO fanr VALUES (1, 'a')",
		"BEGIN", "INSERT INTO fanr VALUES (2, 'b')", "UPDATE fanr SET v = 'c' WHERE id = 1", "COMMIT",
		"ALTER TABLE fanr ADD COLUMN w INT",
		"DELETE FROM fanr WHERE id = 2",
		"INSERT INTO fanr VALUES (3, 'd', 4)",
	)
	final := headPos(t)
	rec := ts.until(final)
	vgtids := recordedVGTIDs(first[2].Vgtid.ShardGtids[0].Gtid, rec)
	own := ownEngine(t)
	for _, pos := range vgtids[:len(vgtids)-1] {
		t.Run(pos, func(t *testing.T) {
			want := startStream(t, own, Request{Position: pos}).until(final)
			if got := startStream(t, e, Request{Position: pos}).until(final); !slices.Equal(got, want) {
				t.Errorf("resumed on the shared readers:\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// TestOwnReaders: with OwnReaders, and under file positions, a stream reads on a connection of
// its own, and says so; otherwise on the shared reader.
func TestOwnReaders(t *testing.T) {
	for _, c := range []struct {
		name string
		e    *Engine
		want string
	}{
		{"shared", bareEngine(t), ReaderShared},
		{"OwnReaders", ownEngine(t), ReaderOwn},
		{"file positions", newFilePosEngine(t), ReaderOwn},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := newKinds()
			ts := startStream(t, c.e, Request{Position: "current", Observer: k})
			ts.expect("GTID", "OTHER", "VGTID")
			deadline := time.Now().Add(5 * time.Second)
			for k.last() == "" && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := k.String(); got != c.want {
				t.Errorf("served by %q, want %q", got, c.want)
			}
			if n := c.e.BinlogReaders()[ReaderShared]; (c.want == ReaderShared) != (n == 1) {
				t.Errorf("%d shared readers", n)
			}
		})
	}
}

// TestSharedReaderStartsUnderWrites starts streams from "current" together while a writer
// runs: they all read on the one shared connection, each from the shared reader's head, and
// each gets exactly what a stream of its own from its first position gets.
func TestSharedReaderStartsUnderWrites(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fw", "CREATE TABLE fw (id INT PRIMARY KEY)")
	base := settleDumps(t)
	e := bareEngine(t)
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			if err := db.Exec(fmt.Sprintf("INSERT INTO fw VALUES (%d)", i)); err != nil {
				wrote <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	const n = 10
	streams := make([]*testStream, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streams[i] = startStream(t, e, Request{Position: "current"})
		}()
	}
	wg.Wait()
	starts := make([]string, n)
	for i, ts := range streams {
		starts[i] = ts.expect("GTID", "OTHER", "VGTID")[2].Vgtid.ShardGtids[0].Gtid
	}
	most := 0
	for range 20 {
		most = max(most, dumpThreads(t)-base)
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if most != 1 {
		t.Errorf("%d dump connections for %d streams started together from current, want 1", most, n)
	}
	final := headPos(t)
	own := ownEngine(t)
	for i, ts := range streams {
		got := ts.until(final)
		want := startStream(t, own, Request{Position: starts[i]}).until(final)
		if !slices.Equal(got, want) {
			t.Errorf("stream %d from %s differs from one of its own\n got:\n  %s\nwant:\n  %s", i, starts[i], strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// recordedVGTIDs is first and the position of every VGTID of a record (testStream.until).
func recordedVGTIDs(first string, rec []string) []string {
	vgtids := []string{first}
	for _, l := range rec {
		if pos, ok := strings.CutPrefix(l, "VGTID "); ok {
			vgtids = append(vgtids, pos)
		}
	}
	return vgtids
}
