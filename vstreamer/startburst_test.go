package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/coalesce"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// serverCounts are the server's counts of connections ever opened (less the one reading
// them) and of SHOW VARIABLES statements, which every inspection runs once.
func serverCounts(t testing.TB) (conns, showVars int64) {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Connections', 'Com_show_variables')")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		n, _ := r.GetInt(i, 1)
		switch name {
		case "Connections":
			conns = n - 1
		case "Com_show_variables":
			showVars = n
		}
	}
	return conns, showVars
}

// oneTable is a request streaming one table from the server's head.
func oneTable(table string) Request {
	return Request{Position: CurrentPosition, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{
		{Match: table, Filter: "select * from " + table}}}}
}

// TestConcurrentStartsShareInspection: 100 streams starting together share a few inspections
// of the server and a few pooled SQL connections (each used to open one of its own and
// inspect the server alone), and each still streams its table.
func TestConcurrentStartsShareInspection(t *testing.T) {
	const n = 100
	for i := range n {
		testkit.MustExec(t, db, fmt.Sprintf("CREATE TABLE burst%d (id INT PRIMARY KEY, v INT)", i))
	}
	e := bareEngine(t)
	t.Cleanup(e.Drain)
	connsBefore, varsBefore := serverCounts(t)
	begin := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int, n)
	rows := make(chan int, n)
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			once := sync.OnceFunc(func() { started <- i })
			errc <- e.Stream(ctx, oneTable(fmt.Sprintf("burst%d", i)), func(evs []*binlogdata.VEvent) error {
				once()
				for _, ev := range evs {
					if ev.Type == binlogdata.VEventType_ROW {
						rows <- i
					}
				}
				return nil
			})
		})
	}
	defer func() { cancel(); wg.Wait() }()
	for range n {
		select {
		case <-started:
		case err := <-errc:
			t.Fatalf("a stream ended while starting: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("streams did not start")
		}
	}
	took := time.Since(begin)
	inspections, st := e.inspections.Runs(), e.conns.Stats()
	conns, vars := serverCounts(t)
	t.Logf("%d concurrent starts in %v: %d inspections (%d SHOW VARIABLES on the server), %d SQL connections dialed (%d leases of an idle one), %d server connections in all (with binlog dumps)",
		n, took.Round(time.Millisecond), inspections, vars-varsBefore, st.Dials, st.Reuses, conns-connsBefore)
	if inspections > 5 {
		t.Errorf("%d concurrent starts ran %d inspections of the server", n, inspections)
	}
	if st.Dials > poolBusy+2 {
		t.Errorf("%d concurrent starts dialed %d SQL connections", n, st.Dials)
	}
	if st.Leased != 0 {
		t.Errorf("%d SQL connections still leased by running streams", st.Leased)
	}
	// Each stream loads its table's definition at its first row, on a pooled connection.
	for i := range n {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO burst%d VALUES (1, 1)", i))
	}
	got := map[int]bool{}
	for len(got) < n {
		select {
		case i := <-rows:
			got[i] = true
		case err := <-errc:
			t.Fatalf("a stream ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d streams got their row", len(got), n)
		}
	}
	st = e.conns.Stats()
	conns, _ = serverCounts(t)
	t.Logf("after a row to each: %d SQL connections dialed, %d leases of an idle one, %d server connections in all",
		st.Dials, st.Reuses, conns-connsBefore)
	if st.Dials > 2*poolBusy+2 {
		t.Errorf("the streams dialed %d SQL connections for their tables' definitions", st.Dials)
	}
}

// gateInspections makes each inspection of e wait, after reading the server, until the test
// lets it end; ran receives the run's number as it reaches the gate.
func gateInspections(e *Engine) (ran chan int, release chan struct{}) {
	ran, release = make(chan int, 10), make(chan struct{})
	var n int
	e.inspections = coalesce.New(func(ctx context.Context) (*serverFacts, error) {
		f, err := e.inspectRun(ctx)
		n++ // runs never overlap
		ran <- n
		<-release
		return f, err
	})
	return ran, release
}

// nextRun waits for the next inspection to reach its gate; a stream's start that comes first
// took an inspection it should not have.
func nextRun(t *testing.T, ran <-chan int, starts ...<-chan error) {
	t.Helper()
	for _, res := range starts {
		select {
		case err := <-res:
			t.Fatalf("a stream started (%v) without the inspection that began after it arrived", err)
		default:
		}
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no inspection after the streams arrived")
	}
}

func waitWaiting(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.inspections.Waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams wait for the next inspection, want %d", e.inspections.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// streamResult starts a stream and reports its first batch (nil error) or its end. The test
// waits for the stream to end once its context is cancelled.
func streamResult(t *testing.T, e *Engine, ctx context.Context, req Request) <-chan error {
	out := make(chan error, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		out <- e.Stream(ctx, req, func([]*binlogdata.VEvent) error {
			select {
			case out <- nil:
			default:
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("a stream did not end")
		}
	})
	return out
}

func expectStart(t *testing.T, name string, res <-chan error, want error, text string) {
	t.Helper()
	select {
	case err := <-res:
		if want == nil && err != nil || want != nil && (!errors.Is(err, want) || !strings.Contains(err.Error(), text)) {
			t.Fatalf("%s: start = %v, want %v %q", name, err, want, text)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: did not start", name)
	}
}

// TestStartSeesSettingsChangedBeforeIt: a stream that starts while another stream's
// inspection runs does not take that inspection's facts, read before the stream arrived: a
// setting changed in between refuses the later stream, and not the earlier.
func TestStartSeesSettingsChangedBeforeIt(t *testing.T) {
	e := bareEngine(t)
	t.Cleanup(e.Drain)
	ran, release := gateInspections(e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := streamResult(t, e, ctx, Request{Position: CurrentPosition})
	nextRun(t, ran) // the first stream's inspection has read the server
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_image = 'MINIMAL'")
	defer testkit.MustExec(t, db, "SET GLOBAL binlog_row_image = 'FULL'")
	second := streamResult(t, e, ctx, Request{Position: CurrentPosition})
	waitWaiting(t, e, 1)
	release <- struct{}{}
	expectStart(t, "first stream", first, nil, "")
	nextRun(t, ran, second)
	release <- struct{}{}
	expectStart(t, "second stream", second, ErrServerConfig, "binlog_row_image is MINIMAL")
	if got := e.inspections.Runs(); got != 2 {
		t.Errorf("%d inspections, want 2", got)
	}
}

// TestSharedInspectionJudgedPerStream: streams sharing an inspection each judge the settings
// by their own request, as they did reading them alone: without binlog_row_metadata=FULL a
// BEST_EFFORT stream starts and the others are refused.
func TestSharedInspectionJudgedPerStream(t *testing.T) {
	e := bareEngine(t)
	t.Cleanup(e.Drain)
	ran, release := gateInspections(e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A stream whose inspection holds the next ones back until both of the test's wait.
	holder := streamResult(t, e, ctx, Request{Position: CurrentPosition})
	nextRun(t, ran)
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	defer testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'FULL'")
	best := streamResult(t, e, ctx, Request{Position: CurrentPosition, Filter: &binlogdata.Filter{
		Rules: []*binlogdata.Rule{{Match: "/.*/"}}, FieldEventMode: binlogdata.Filter_BEST_EFFORT}})
	strict := streamResult(t, e, ctx, Request{Position: CurrentPosition})
	waitWaiting(t, e, 2)
	release <- struct{}{}
	expectStart(t, "holder", holder, nil, "")
	nextRun(t, ran, best, strict)
	release <- struct{}{}
	expectStart(t, "best effort stream", best, nil, "")
	expectStart(t, "strict stream", strict, ErrServerConfig, "binlog_row_metadata is MINIMAL")
	if got := e.inspections.Runs(); got != 2 {
		t.Errorf("%d inspections, want 2", got)
	}
}
