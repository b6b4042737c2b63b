package vstreamer

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// eventList is a dump of the events given, which then waits.
type eventList struct {
	evs []*replication.BinlogEvent
	i   int
}

func (l *eventList) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	if l.i == len(l.evs) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	l.i++
	return l.evs[l.i-1], nil
}

// sharedSkips is a shared reader whose ring holds transactions of table other, which the
// streams of skippingStream leave out.
type sharedSkips struct {
	pool    *fanout.Pool
	open    fanout.OpenFunc
	start   position.Position
	lastPos uint32
}

func newSharedSkips(tb testing.TB, txns int) *sharedSkips {
	tb.Helper()
	var evs []*replication.BinlogEvent
	for i := range txns {
		evs = append(evs, skippedTxn(false, uint64(2+i), uint32(1000*i))...)
	}
	start, err := position.Parse("MariaDB/0-1-1")
	if err != nil {
		tb.Fatal(err)
	}
	k := &sharedSkips{start: start, lastPos: evs[len(evs)-1].Header.LogPos,
		pool: fanout.NewPool(fanout.Config{MaxEvents: len(evs) + 16, NewMarker: func() fanout.Marker { return &txnMarks{} }}),
		open: func(position.Position, func(*replication.BinlogEvent) error) (fanout.Source, func(), error) {
			return &eventList{evs: evs}, func() {}, nil
		}}
	// Another stream's cursor has the shared hub read every event before the streams read.
	keep := k.pool.Attach(start, true, k.open, nil)
	tb.Cleanup(keep.Close)
	for {
		ev, err := keep.GetEvent(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Header.LogPos == k.lastPos {
			return k
		}
	}
}

// read has s read every transaction on the shared reader, as its reader goroutine and its
// stream goroutine do.
func (k *sharedSkips) read(tb testing.TB, s *stream) {
	c := k.pool.Attach(k.start, true, k.open, nil)
	defer c.Close()
	s.leaveOut(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan *replication.BinlogEvent, loopQueue)
	done := make(chan error, 1)
	go func() { done <- s.read(ctx, c, events) }()
	defer func() {
		cancel()
		<-done
	}()
	for {
		ev, err := s.nextEvent(ctx, events)
		if err != nil {
			tb.Fatal(err)
		}
		if ev == nil {
			continue
		}
		if err := s.handle(ev); err != nil {
			tb.Fatal(err)
		}
		if ev.Header.LogPos == k.lastPos {
			return
		}
	}
}

// TestSharedSkippedTransactionAllocs: on a shared reader, a transaction a filtered stream
// leaves out costs well below one allocation all told (the cursor's, the reader goroutine's
// and the stream goroutine's): the cursor hands out a run of such transactions as one
// event, the reader goroutine passes it on in one send, and the stream moves its position
// by each transaction's GTID in turn, sending nothing.
func TestSharedSkippedTransactionAllocs(t *testing.T) {
	const txns = 4096
	k := newSharedSkips(t, txns)
	s, sent, _ := skippingStream(t, "MariaDB/0-1-1")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	k.read(t, s)
	runtime.ReadMemStats(&after)
	per := float64(after.Mallocs-before.Mallocs) / txns
	t.Logf("%.3f allocations per skipped transaction", per)
	if per > 0.25 {
		t.Errorf("a skipped transaction costs %.3f allocations", per)
	}
	if got, want := s.cursor.pos.String(), "MariaDB/0-1-"+strconv.Itoa(txns+1); got != want {
		t.Errorf("position %s, want %s", got, want)
	}
	if len(s.out.batch) != 0 || *sent != 0 || !s.skip.pending || s.cursor.inTxn {
		t.Errorf("after skipped transactions: batch %d, sent %d, pending %v, in transaction %v", len(s.out.batch), *sent, s.skip.pending, s.cursor.inTxn)
	}
}

// BenchmarkSharedSkipped: what a transaction a filtered stream leaves out costs it on a
// shared reader, in its cursor, its reader goroutine and its stream goroutine.
func BenchmarkSharedSkipped(b *testing.B) {
	const txns = 4096
	k := newSharedSkips(b, txns)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += txns {
		b.StopTimer()
		s, _, _ := skippingStream(b, "MariaDB/0-1-1")
		b.StartTimer()
		k.read(b, s)
	}
}

// TestRunBeforeQueued: the stream goroutine takes the transactions of a run one at a time, in
// order, each as a run of one, and all of them before an event queued behind the run, also
// when it looks at its other channels (every fairEvery events).
func TestRunBeforeQueued(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run("full select "+strconv.FormatBool(full), func(t *testing.T) {
			s, _, _ := skippingStream(t, "MariaDB/0-1-1")
			var run fanout.TxnEnds
			for i := range 3 {
				txn := skippedTxn(false, uint64(2+i), uint32(1000*i))
				run.Txns = append(run.Txns, fanout.Ends{First: txn[0], Last: txn[len(txn)-1]})
			}
			queued := skippedTxn(false, 5, 3000)[0]
			events := make(chan *replication.BinlogEvent, 2)
			events <- &replication.BinlogEvent{Header: run.Txns[2].Last.Header, Event: &run}
			events <- queued
			for i := range 4 {
				if full {
					s.in.quick = fairEvery
				}
				ev, err := s.nextEvent(context.Background(), events)
				if err != nil {
					t.Fatal(err)
				}
				if ev == nil {
					t.Fatalf("event %d: none", i)
				}
				if i == 3 {
					if ev != queued {
						t.Fatalf("after the run: %T", ev.Event)
					}
					break
				}
				one, ok := ev.Event.(*fanout.TxnEnds)
				if !ok || len(one.Txns) != 1 || one.Txns[0] != run.Txns[i] || ev.Header != run.Txns[i].Last.Header {
					t.Fatalf("event %d: %T, not the run's transaction %d alone", i, ev.Event, i)
				}
				if err := s.handle(ev); err != nil {
					t.Fatal(err)
				}
				if got, want := s.cursor.pos.String(), "MariaDB/0-1-"+strconv.Itoa(2+i); got != want {
					t.Errorf("position %s after transaction %d, want %s", got, i, want)
				}
			}
		})
	}
}

// TestSharedReaderSkippedRunsResume: a filtered stream on the shared reader, where runs of
// transactions of the tables it leaves out come as one event each, gets exactly what a
// stream on a reader of its own gets, from its start and resumed from each VGTID it sent:
// every skipped transaction moves the position by its own GTID, also those skipped around
// a DDL, a transaction the stream sends and one it sends part of.
func TestSharedReaderSkippedRunsResume(t *testing.T) {
	shared, own := newEngine(t), ownEngine(t)
	var writes []string
	for i := range 20 {
		writes = append(writes, fmt.Sprintf("INSERT INTO skb VALUES (%d)", i))
	}
	writes = append(writes, "INSERT INTO ska VALUES (1, 'a')")
	for i := range 10 {
		writes = append(writes, fmt.Sprintf("INSERT INTO skb VALUES (%d)", 100+i))
	}
	writes = append(writes, "ALTER TABLE skb ADD COLUMN w INT")
	for i := range 10 {
		writes = append(writes, fmt.Sprintf("INSERT INTO skb VALUES (%d, 1)", 200+i))
	}
	writes = append(writes, "BEGIN", "INSERT INTO skb VALUES (300, 1)", "UPDATE ska SET v = 'b' WHERE id = 1", "COMMIT")
	for i := range 5 {
		writes = append(writes, fmt.Sprintf("INSERT INTO skb VALUES (%d, 1)", 400+i))
	}
	for _, skipEmpty := range []bool{false, true} {
		t.Run(fmt.Sprintf("SkipEmptyTransactions %v", skipEmpty), func(t *testing.T) {
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS ska", "DROP TABLE IF EXISTS skb",
				"CREATE TABLE ska (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE skb (id INT PRIMARY KEY)")
			req := Request{Position: "current", Filter: filterSKA, SkipEmptyTransactions: skipEmpty}
			ts := startStream(t, shared, req)
			first := ts.expect("GTID", "OTHER", "VGTID")
			testkit.MustExec(t, db, writes...)
			final := headPos(t)
			rec := ts.until(final)
			vgtids := recordedVGTIDs(first[2].Vgtid.ShardGtids[0].Gtid, rec)
			// 48 transactions.
			if n := len(vgtids); !skipEmpty && n != 49 {
				t.Fatalf("%d VGTIDs, want the first and one per transaction", n)
			}
			// Lone VGTIDs come with time.
			for _, pos := range vgtids[:len(vgtids)-1] {
				t.Run(pos, func(t *testing.T) {
					r := req
					r.Position = pos
					want := withoutLoneVGTIDs(startStream(t, own, r).until(final))
					if got := withoutLoneVGTIDs(startStream(t, shared, r).until(final)); !slices.Equal(got, want) {
						t.Errorf("on the shared reader:\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
					}
				})
			}
		})
	}
}
