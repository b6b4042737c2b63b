package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// copyTables are the workload's tables (applier.SetupWorkload), in name order.
var copyTables = []string{"cp_a", "cp_b", "cp_c", "cp_j"}

// TestCopyParallelResumeAnywhere is TestCopyResumeAnywhere with tables read in parallel: the
// stream breaks at many points of a copy under writes and resumes from the last VGtid, and
// the image still equals the source with no row twice. Along the way it checks what makes a
// parallel copy resumable: chunks of several tables interleave, and every VGtid of the copy
// names every table, those done marked completed, each other with its own last key.
func TestCopyParallelResumeAnywhere(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			testCopyParallelResume(t, seed, copyFilter, copyTables, 13)
		})
	}
	// One table: its chunks are read ahead one after the other (chained), each after the
	// last key of the one before, not all sent yet: a chunk of 5 rows comes in 3 pieces.
	t.Run("one table", func(t *testing.T) {
		defer func(n int) { pieceRows = n }(pieceRows)
		pieceRows = 2
		before := chainedReads.Load()
		testCopyParallelResume(t, 3, rules(&binlogdata.Rule{Match: "cp_a"}), []string{"cp_a"}, 5)
		if chainedReads.Load() == before {
			t.Error("no chunk of cp_a was read ahead after another in flight")
		}
	})
}

// testCopyParallelResume copies the tables flt selects (names, in order) under a writer,
// three chunks of chunkRows at a time, breaking and resuming the stream at random points,
// and checks the image against the source.
func testCopyParallelResume(t *testing.T, seed uint64, flt *binlogdata.Filter, names []string, chunkRows int) {
	{
		{
			setupCopyTables(t)
			w := startWriter(t, seed, 5*time.Millisecond)
			e := newEngine(t)
			keys := map[string][]string{}
			for _, n := range names {
				keys[n] = copyKeys[n]
			}
			im := newImage(keys)
			rng := rand.New(rand.NewPCG(seed, 5))
			req := Request{Position: "", Filter: flt, CopyChunkRows: chunkRows, CopyParallelism: 3}
			breaks := 0
			// interleaved is set once a chunk of one table came between two chunks of another.
			interleaved := false
			var chunkTables []string
			completed := map[string]bool{}
			for !im.Copied {
				ts := startStream(t, e, req)
				chunk := false
				var txnCompleted []string
				for chunks, want := 0, 1+rng.IntN(4); chunks < want && !im.Copied; {
					ev := ts.next(false)
					switch ev.Type {
					case binlogdata.VEventType_LASTPK:
						chunk = true
						name := ev.LastPKEvent.GetTableLastPK().GetTableName()
						if n := len(chunkTables); n >= 2 && chunkTables[n-2] == name && chunkTables[n-1] != name {
							interleaved = true
						}
						chunkTables = append(chunkTables, name)
						if ev.LastPKEvent.GetCompleted() {
							txnCompleted = append(txnCompleted, name)
						}
					case binlogdata.VEventType_VGTID:
						for _, name := range txnCompleted {
							completed[name] = true
						}
						txnCompleted = txnCompleted[:0]
						checkCopyVGtid(t, ev.Vgtid, names, completed, im.Copied)
					default:
					}
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
					// What the client saw completed is what its VGtid says: a break may
					// drop a transaction that marked a table completed.
					clear(completed)
					for _, tp := range sg.TablePKs {
						if tp.Completed {
							completed[tp.TableName] = true
						}
					}
					req = Request{Position: sg.Gtid, TableLastPKs: sg.TablePKs, Filter: flt, CopyChunkRows: chunkRows, CopyParallelism: 3}
				}
			}
			w.Finish(t)
			ts := startStream(t, e, req)
			waitCaughtUp(t, ts, im)
			im.Check(t, db, "test")
			if breaks < 10 {
				t.Errorf("only %d breaks", breaks)
			}
			if !interleaved && len(names) > 1 {
				t.Errorf("no table's chunks were interleaved with another's: %v", chunkTables)
			}
		}
	}
}

// checkCopyVGtid checks a VGtid sent during a copy: it names every table, the ones done
// marked completed without a key; after the final COPY_COMPLETED it names none.
func checkCopyVGtid(t *testing.T, vg *binlogdata.VGtid, copyTables []string, completed map[string]bool, copied bool) {
	t.Helper()
	pks := vg.GetShardGtids()[0].GetTablePKs()
	if copied || len(pks) == 0 && len(completed) == len(copyTables) {
		return
	}
	var names []string
	for _, tp := range pks {
		names = append(names, tp.TableName)
		if tp.Completed != completed[tp.TableName] {
			t.Errorf("VGtid marks %s completed=%v, but its copy completed=%v", tp.TableName, tp.Completed, completed[tp.TableName])
		}
		if tp.Completed && tp.Lastpk != nil {
			t.Errorf("VGtid gives completed table %s a last key", tp.TableName)
		}
	}
	if !slices.Equal(names, copyTables) {
		t.Errorf("VGtid of the copy names tables %v, want %v", names, copyTables)
	}
}

// TestCopyThrottle: with a bound on rows per second the copy reads no faster, serial or in
// parallel (the bound is the stream's, all tables together). Only a lower bound on the time
// is asserted, which a slow machine cannot break.
func TestCopyThrottle(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cth_a (id INT PRIMARY KEY)", "INSERT INTO cth_a SELECT seq FROM "+db.Seq(600),
		"CREATE TABLE cth_b (id INT PRIMARY KEY)", "INSERT INTO cth_b SELECT seq FROM "+db.Seq(600),
		"CREATE TABLE cth_c (id INT PRIMARY KEY)", "INSERT INTO cth_c SELECT seq FROM "+db.Seq(600))
	e := newEngine(t)
	const rate, rows = 1000, 1800
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			start := time.Now()
			ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "/^cth_"}), CopyChunkRows: 250,
				CopyParallelism: par, CopyMaxRowsPerSecond: rate})
			n := 0
			for {
				ev := ts.next(false)
				if ev.Type == binlogdata.VEventType_ROW {
					n += len(ev.RowEvent.RowChanges)
				}
				if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
					break
				}
			}
			if n != rows {
				t.Fatalf("copied %d rows, want %d", n, rows)
			}
			// The first step (a tenth of a second's rows) is free; the rest come at the rate.
			if d, least := time.Since(start), time.Duration(float64(rows-rate/10)/rate*float64(time.Second)); d < least {
				t.Errorf("copied %d rows in %s at most %d rows/s; want at least %s", rows, d, rate, least)
			}
		})
	}
}

// TestCopyThrottleSteps: the limiter is asked once per step of rows, the first row of each
// step, and holds the rows to its rate.
func TestCopyThrottleSteps(t *testing.T) {
	th := newCopyThrottle(50)
	if th.step != 5 {
		t.Fatalf("step %d, want a tenth of a second's rows, 5", th.step)
	}
	start := time.Now()
	for n := 1; n <= 30; n++ {
		if err := th.take(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if got := th.waits.Load(); got != 6 {
		t.Errorf("limiter asked %d times for 30 rows, want 6", got)
	}
	// 30 rows at 50/s, the first 5 free: at least half a second.
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("30 rows taken in %s at 50 rows/s", d)
	}
	if newCopyThrottle(0) != nil {
		t.Error("a zero rate makes a throttle; want none")
	}
	// Only a step's first row asks, and a wait ends with the stream's context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := th.take(ctx, 32); err != nil {
		t.Errorf("row 32, inside a step, asked the limiter: %v", err)
	}
	if err := th.take(ctx, 36); !errors.Is(err, context.Canceled) {
		t.Errorf("row 36, a step's first, with the context canceled: err = %v, want context.Canceled", err)
	}
}

// TestCopyOptionsRefused: bad copy pacing values are refused, naming the flag.
func TestCopyOptionsRefused(t *testing.T) {
	e := newEngine(t)
	for _, c := range []struct {
		req  Request
		flag string
	}{
		{Request{CopyParallelism: -1}, "copy_parallelism"},
		{Request{CopyParallelism: MaxCopyParallelism + 1}, "copy_parallelism"},
		{Request{CopyMaxRowsPerSecond: -5}, "copy_max_rows_per_second"},
		{Request{CopyMaxReplicationLag: -time.Second}, "copy_max_replication_lag"},
	} {
		c.req.Filter = copyFilter
		err := e.Stream(context.Background(), c.req, func([]*binlogdata.VEvent) error { return nil })
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: err = %v, want ErrBadOption naming %s", c.req, err, c.flag)
		}
	}
}

// TestCopyReplicationLagOnPrimary: the test server is a primary, with no replication lag, so
// a lag bound lets the copy run; its lag reads as zero, known.
func TestCopyReplicationLagOnPrimary(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE clag (id INT PRIMARY KEY)", "INSERT INTO clag VALUES (1), (2)")
	e := newEngine(t)
	for _, par := range []int{1, 2} {
		ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "clag"}), CopyParallelism: par,
			CopyMaxReplicationLag: time.Second})
		ts.expect("BEGIN", "FIELD clag id:INT32", "ROW clag +[1] +[2]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	}
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := &stream{sql: onConn(conn), keyspaceStream: keyspaceStream{cfg: &Config{Database: "test"}}}
	lag, known, err := s.replicationLag()
	if err != nil || !known || lag != 0 {
		t.Errorf("replication lag on a primary: %s known=%v err=%v; want 0, known", lag, known, err)
	}
}

// TestCopyParallelPoison: a copied row that cannot be decoded, read ahead on a worker, ends
// the stream naming its key (failure mode fail), or is skipped with the rows around it sent
// (skip): the worker's verdict reaches the stream as the serial copy's does.
func TestCopyParallelPoison(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cpp_a (id INT PRIMARY KEY, v DOUBLE)", "INSERT INTO cpp_a VALUES (1, 1), (2, 2), (3, 3)",
		"CREATE TABLE cpp_b (id INT PRIMARY KEY, v DOUBLE)", "INSERT INTO cpp_b VALUES (1, 1), (2, 2), (3, 3)")
	restore := faults.Set(func(p faults.Point, table string, data any) {
		if p != faults.Copy || table != "cpp_b" {
			return
		}
		if row := data.([]mysql.FieldValue); fmt.Sprint(row[0].Value()) == "2" {
			row[1] = mysql.NewFieldValue(mysql.FieldValueTypeString, 0, []byte("not a number"))
		}
	})
	defer restore()
	e := newEngine(t)
	flt := rules(&binlogdata.Rule{Match: "/^cpp_"})
	t.Run("fail", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err := e.Stream(ctx, Request{Filter: flt, CopyParallelism: 2}, func([]*binlogdata.VEvent) error { return nil })
		var po *PoisonError
		if !errors.As(err, &po) || po.Table != "cpp_b" || po.Column != "v" || !strings.Contains(po.Row, `copied row with key ("2")`) || po.Position == "" {
			t.Fatalf("err = %v, want a PoisonError for cpp_b.v naming key 2 and the position", err)
		}
	})
	t.Run("skip", func(t *testing.T) {
		ts := startStream(t, e, Request{Filter: flt, CopyParallelism: 2, FailureMode: FailSkip})
		got := map[string][]string{}
		for {
			ev := ts.next(false)
			if ev.Type == binlogdata.VEventType_ROW {
				for _, rc := range ev.RowEvent.RowChanges {
					got[ev.RowEvent.TableName] = append(got[ev.RowEvent.TableName], string(evtext.Cells(rc.After)[0]))
				}
			}
			if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
				break
			}
		}
		if a, b := strings.Join(got["cpp_a"], ","), strings.Join(got["cpp_b"], ","); a != "1,2,3" || b != "1,3" {
			t.Errorf("rows copied: cpp_a %s, cpp_b %s; want 1,2,3 and 1,3", a, b)
		}
	})
}

// TestReplicationLagOf reads SHOW REPLICA STATUS rows: the largest lag over the channels, a
// NULL (replication stopped) unknown, no row (a primary) none.
func TestReplicationLagOf(t *testing.T) {
	// status builds the rows as go-mysql reads them: nil is NULL, an int a number.
	status := func(names []string, rows [][]any) *mysql.Resultset {
		res := &mysql.Resultset{FieldNames: map[string]int{}}
		for i, n := range names {
			res.FieldNames[n] = i
			res.Fields = append(res.Fields, &mysql.Field{Name: []byte(n)})
		}
		for _, r := range rows {
			var vals []mysql.FieldValue
			for _, v := range r {
				switch v := v.(type) {
				case nil:
					vals = append(vals, mysql.NewFieldValue(mysql.FieldValueTypeNull, 0, nil))
				case int:
					vals = append(vals, mysql.NewFieldValue(mysql.FieldValueTypeSigned, uint64(v), nil))
				case string:
					vals = append(vals, mysql.NewFieldValue(mysql.FieldValueTypeString, 0, []byte(v)))
				}
			}
			res.Values = append(res.Values, vals)
		}
		return res
	}
	for _, c := range []struct {
		names []string
		rows  [][]any
		lag   time.Duration
		known bool
	}{
		{[]string{"Seconds_Behind_Source"}, nil, 0, true},
		{[]string{"Channel_Name", "Seconds_Behind_Source"}, [][]any{{"a", 3}, {"b", 7}}, 7 * time.Second, true},
		{[]string{"Seconds_Behind_Master", "Connection_name"}, [][]any{{5, ""}}, 5 * time.Second, true},
		{[]string{"Seconds_Behind_Source"}, [][]any{{nil}}, 0, false},
		{[]string{"Seconds_Behind_Source"}, [][]any{{nil}, {4}}, 4 * time.Second, false},
	} {
		lag, known, err := lagOf(status(c.names, c.rows))
		if err != nil || lag != c.lag || known != c.known {
			t.Errorf("%v %v: lag %s known=%v err=%v; want %s known=%v", c.names, c.rows, lag, known, err, c.lag, c.known)
		}
	}
	if _, _, err := lagOf(status([]string{"Slave_IO_State"}, [][]any{{"x"}})); err == nil {
		t.Error("rows without a lag column: no error")
	}
}

// TestWaitForLag: a copy waits while the lag is above the bound or unknown, and goes on once
// it is under it; a stream that ends stops the wait.
func TestWaitForLag(t *testing.T) {
	defer func(d time.Duration) { lagPoll = d }(lagPoll)
	lagPoll = time.Millisecond
	lags := []time.Duration{30 * time.Second, -1, 11 * time.Second, 10 * time.Second, 0}
	reads := 0
	s := &stream{log: slog.New(slog.DiscardHandler), lag: lagGate{max: 10 * time.Second, read: func() (time.Duration, bool, error) {
		l := lags[min(reads, len(lags)-1)]
		reads++
		return max(l, 0), l >= 0, nil
	}}}
	if err := s.waitForLag(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 30s, unknown, 11s wait; 10s is within the bound.
	if reads != 4 {
		t.Errorf("lag read %d times, want 4", reads)
	}
	reads = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.waitForLag(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting with the stream ended: err = %v, want context.Canceled", err)
	}
	s.lag.max = 0
	reads = 0
	if err := s.waitForLag(context.Background()); err != nil || reads != 0 {
		t.Errorf("without a bound: err %v, %d reads; want none", err, reads)
	}
}

// TestLagWithin: a chained read ahead asks whether the lag is within the bound without
// waiting, and the lag is read at most once per poll.
func TestLagWithin(t *testing.T) {
	defer func(d time.Duration) { lagPoll = d }(lagPoll)
	lagPoll = time.Hour
	lag, reads := 20*time.Second, 0
	s := &stream{lag: lagGate{max: 10 * time.Second, read: func() (time.Duration, bool, error) {
		reads++
		return lag, true, nil
	}}}
	if ok, err := s.lagWithin(); ok || err != nil {
		t.Errorf("lag 20s, bound 10s: within=%v err=%v", ok, err)
	}
	lag = 0
	if ok, _ := s.lagWithin(); ok || reads != 1 {
		t.Errorf("within a poll: within=%v after %d reads; want the last answer, false, after 1", ok, reads)
	}
	lagPoll = 0
	if ok, _ := s.lagWithin(); !ok || reads != 2 {
		t.Errorf("after a poll, lag 0: within=%v after %d reads; want true after 2", ok, reads)
	}
	s.lag.max = 0
	if ok, _ := s.lagWithin(); !ok || reads != 2 {
		t.Errorf("without a bound: within=%v after %d reads; want true, no read", ok, reads)
	}
}
