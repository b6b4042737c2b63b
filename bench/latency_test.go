package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vclient "github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/procstat"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// The latency benchmark's load: the targets' 500 single-row transactions a second.
var (
	latTPS      = flag.Int("latency.tps", 500, "single-row transactions per second committed in BenchmarkLatency")
	latDuration = flag.Duration("latency.duration", 10*time.Second, "how long BenchmarkLatency's writers commit")
	// grpc-go's client, left to its own window, estimates the connection's bandwidth with a
	// PING after data arrives, which the server answers: at a few hundred small messages a
	// second, one PING per message. The client package's fixed window turns that off.
	latWindow = flag.Int("latency.window", 0, "bytes: the client's fixed flow-control window (client.Options.WindowSize: 0 is client.DefaultWindowSize, -1 grpc-go's estimated window)")
)

var (
	latencyOnce     sync.Once
	latencyDB       *testdb.Server
	latencySetupErr error
	// latencyID numbers the benchmark's rows across iterations.
	latencyID atomic.Int64
)

// setupLatency starts the latency benchmark's MariaDB, apart from the other benchmarks',
// with its one table, and builds vstreamd.
func setupLatency(b *testing.B) {
	latencyOnce.Do(func() {
		if latencySetupErr = buildVstreamd(); latencySetupErr != nil {
			return
		}
		if latencyDB, latencySetupErr = testdb.Start(testdb.Options{Database: "lat"}); latencySetupErr != nil {
			return
		}
		// sent is when the row's INSERT was sent (unix nanos); 0 in the warm-up rows.
		latencySetupErr = latencyDB.Exec(`CREATE TABLE lat (id BIGINT PRIMARY KEY, sent BIGINT NOT NULL,
			customer VARCHAR(64), amount DECIMAL(12,2), note VARCHAR(255))`)
	})
	if latencySetupErr != nil {
		b.Fatal(latencySetupErr)
	}
}

func closeLatency() {
	if latencyDB != nil {
		latencyDB.Close()
	}
}

// BenchmarkLatency commits -latency.tps single-row transactions a second for
// -latency.duration while two readers of the same binlog time each row from just before its
// INSERT was sent to its receipt: one stream of a vstreamd process of its own, read by a gRPC
// client, and beside it the anchor, a bare go-mysql BinlogSyncer in the benchmark process
// that only decodes. It reports both readers' p50 and p99, the p99 ratio and the p50
// difference, and vstreamd's CPU per transaction (user and system, from /proc) until the last
// row arrived. It asserts nothing.
func BenchmarkLatency(b *testing.B) {
	setupLatency(b)
	b.ResetTimer()
	var sum latencyRun
	for i := range b.N {
		r := runLatencyPair(b, fmt.Sprintf("latency-%d", i))
		sum.vstreamd = append(sum.vstreamd, r.vstreamd...)
		sum.bare = append(sum.bare, r.bare...)
		sum.txns += r.txns
		sum.user += r.user
		sum.sys += r.sys
		sum.anchorCPU += r.anchorCPU
		sum.span += r.span
		sum.responses += r.responses
		sum.events += r.events
		sum.switches += r.switches
	}
	vp50, vp99 := pct(sum.vstreamd, 0.50), pct(sum.vstreamd, 0.99)
	bp50, bp99 := pct(sum.bare, 0.50), pct(sum.bare, 0.99)
	perTxn := func(d time.Duration) float64 { return ms(d) / float64(sum.txns) }
	b.ReportMetric(ms(vp50), "p50-ms/vstreamd")
	b.ReportMetric(ms(vp99), "p99-ms/vstreamd")
	b.ReportMetric(ms(bp50), "p50-ms/go-mysql")
	b.ReportMetric(ms(bp99), "p99-ms/go-mysql")
	b.ReportMetric(ms(vp50)-ms(bp50), "p50-diff-ms")
	b.ReportMetric(ms(vp99)/ms(bp99), "p99-ratio")
	b.ReportMetric(perTxn(sum.user+sum.sys), "cpu-ms/txn")
	b.ReportMetric(perTxn(sum.sys), "sys-cpu-ms/txn")
	b.ReportMetric(perTxn(sum.anchorCPU), "cpu-ms/txn/binlogreader")
	b.ReportMetric(float64(sum.responses)/float64(sum.txns), "responses/txn")
	b.ReportMetric(float64(sum.switches)/float64(sum.txns), "ctx-switches/txn")
	fmt.Printf("latency: %d single-row transactions at %.0f/s; commit-to-client p50 %.3fms p99 %.3fms (go-mysql alone p50 %.3fms p99 %.3fms): "+
		"p50 +%.3fms, p99 %.2fx; vstreamd CPU %.3fms per transaction (user %.3fms, system %.3fms; a bare go-mysql reader process %.3fms), %.0f%% of a core, %.1f context switches per transaction; %.2f responses and %.2f events per transaction\n",
		sum.txns, float64(sum.txns)/sum.span.Seconds(), ms(vp50), ms(vp99), ms(bp50), ms(bp99), ms(vp50)-ms(bp50), ms(vp99)/ms(bp99),
		perTxn(sum.user+sum.sys), perTxn(sum.user), perTxn(sum.sys), perTxn(sum.anchorCPU), share(sum.user+sum.sys, sum.span)*100,
		float64(sum.switches)/float64(sum.txns), float64(sum.responses)/float64(sum.txns), float64(sum.events)/float64(sum.txns))
}

// latencyRun is what one run of BenchmarkLatency measured.
type latencyRun struct {
	vstreamd, bare []time.Duration
	txns           int
	// user and sys are vstreamd's CPU from the first write until both readers had every
	// row, which span is; responses and events what the gRPC client received over it.
	user, sys, span time.Duration
	// anchorCPU is the binlogreader process's CPU over span: reading and decoding the
	// binlog alone, the floor under vstreamd's.
	anchorCPU         time.Duration
	responses, events int64
	// switches counts the times vstreamd's threads left the CPU over span: each is a
	// thread going to sleep, most of them waking for an event and sleeping again.
	switches int64
}

func ms(d time.Duration) float64 {
	if d == undelivered {
		return math.Inf(1)
	}
	return float64(d) / float64(time.Millisecond)
}

// pct is the p-th fraction of samples.
func pct(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return undelivered
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// latencyReader collects a reader's samples: each row's latency, and warm once it has seen
// a warm-up row (sent 0).
type latencyReader struct {
	mu      sync.Mutex
	samples []time.Duration
	rows    atomic.Int64
	warm    chan struct{}
	warmed  sync.Once
	err     atomic.Value
}

func newLatencyReader() *latencyReader { return &latencyReader{warm: make(chan struct{})} }

func (r *latencyReader) row(sent, now int64) {
	if sent == 0 {
		r.warmed.Do(func() { close(r.warm) })
		return
	}
	r.mu.Lock()
	r.samples = append(r.samples, time.Duration(now-sent))
	r.mu.Unlock()
	r.rows.Add(1)
}

func (r *latencyReader) taken() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples)
}

func (r *latencyReader) fail(err error) { r.err.CompareAndSwap(nil, err) }

func (r *latencyReader) failed() error {
	err, _ := r.err.Load().(error)
	return err
}

// runLatencyPair runs both readers from the binlog's head, waits until each has received a
// warm-up row, then commits the transactions and waits for both to receive every one.
func runLatencyPair(b *testing.B, phase string) latencyRun {
	conn, err := latencyDB.Conn("lat")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	pos, err := binlogPos(latencyDB)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Execute(fmt.Sprintf("INSERT INTO lat VALUES (%d, 0, 'warm-up', 1.25, 'a note')", latencyID.Add(1))); err != nil {
		b.Fatal(err)
	}
	d := startVstreamdOn(b, latencyDB, "lat", phase)
	// Stopped last: it ends the binlog dumps left on the source, the bare reader's too.
	defer d.stop(b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// The project's client with its defaults, as an application would stream; a broken
	// stream fails the run rather than resume.
	vc, err := vclient.Dial(d.Addr, vclient.Options{WindowSize: int32(*latWindow), AckInterval: -1, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer vc.Close()
	vs, bare := newLatencyReader(), newLatencyReader()
	var responses, events atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		err := vc.Stream(ctx, vclient.Request{
			Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: pos.String()}}},
			Filter:   &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "lat"}}},
		}, func(_ context.Context, evs []*binlogdata.VEvent) error {
			now := time.Now().UnixNano()
			responses.Add(1)
			events.Add(int64(len(evs)))
			for _, ev := range evs {
				if ev.Type != binlogdata.VEventType_ROW {
					continue
				}
				for _, rc := range ev.RowEvent.RowChanges {
					sent, err := sentColumn(rc.After)
					if err != nil {
						return err
					}
					vs.row(sent, now)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
			vs.fail(err)
		}
	}()

	cfg := replicaConfig(latencyDB, 2000000002)
	cfg.TimestampStringLocation, cfg.EventCacheCount = time.UTC, 64
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	bst, err := syncer.StartSyncGTID(syncSet(pos))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer wg.Done()
		for {
			ev, err := bst.GetEvent(ctx)
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					bare.fail(err)
				}
				return
			}
			now := time.Now().UnixNano()
			re, ok := ev.Event.(*replication.RowsEvent)
			if !ok || string(re.Table.Table) != "lat" {
				continue
			}
			for _, row := range re.Rows {
				sent, ok := row[1].(int64)
				if !ok {
					bare.fail(fmt.Errorf("sent column is %T", row[1]))
					return
				}
				bare.row(sent, now)
			}
		}
	}()
	for _, r := range []*latencyReader{vs, bare} {
		select {
		case <-r.warm:
		case <-time.After(time.Minute):
			b.Fatalf("a reader did not receive the warm-up row in a minute: %v / %v", vs.failed(), bare.failed())
		}
	}

	anchor := startBinlogReader(b, pos.Normalized().GTIDSet.String())
	defer anchor.stop()
	anchor0 := procCPU(b, anchor.cmd.Process.Pid)
	user0, sys0 := vstreamdTimes(b, d)
	sw0 := vstreamdSwitches(b, d)
	responses0, events0 := responses.Load(), events.Load()
	start := time.Now()
	sent := writeAt(b, *latTPS, *latDuration, func(conn *client.Conn) error {
		_, err := conn.Execute(fmt.Sprintf("INSERT INTO lat VALUES (%d, %d, 'latency', 1.25, 'a note')", latencyID.Add(1), time.Now().UnixNano()))
		return err
	})
	for deadline := time.Now().Add(time.Minute); vs.rows.Load() < sent || bare.rows.Load() < sent; {
		for _, r := range []*latencyReader{vs, bare} {
			if err := r.failed(); err != nil {
				b.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("in a minute vstreamd's client received %d and go-mysql %d of %d rows", vs.rows.Load(), bare.rows.Load(), sent)
		}
		time.Sleep(5 * time.Millisecond)
	}
	user1, sys1 := vstreamdTimes(b, d)
	// The anchor has read every row by now: the binlog reaches it no later than the
	// in-process reader, which had them all.
	anchorCPU := procCPU(b, anchor.cmd.Process.Pid) - anchor0
	run := latencyRun{txns: int(sent), user: user1 - user0, sys: sys1 - sys0, anchorCPU: anchorCPU, span: time.Since(start), switches: vstreamdSwitches(b, d) - sw0,
		responses: responses.Load() - responses0, events: events.Load() - events0}
	run.vstreamd, run.bare = vs.taken(), bare.taken()
	return run
}

// writeAt commits a transaction with write at tps for d, on a few connections to
// latencyDB that take the transactions in turn, so that a commit slower than the interval
// delays the ones after it less. It returns how many it committed.
func writeAt(b *testing.B, tps int, d time.Duration, write func(*client.Conn) error) int64 {
	const writers = 8
	interval := time.Second / time.Duration(tps)
	var next, sent atomic.Int64
	var wg sync.WaitGroup
	werr := make(chan error, writers)
	start := time.Now()
	for range writers {
		conn, err := latencyDB.Conn("lat")
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for {
				due := time.Duration(next.Add(1)-1) * interval
				if due >= d {
					return
				}
				time.Sleep(time.Until(start.Add(due)))
				if err := write(conn); err != nil {
					werr <- err
					return
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	close(werr)
	if err := <-werr; err != nil {
		b.Fatal(err)
	}
	return sent.Load()
}

func vstreamdTimes(b *testing.B, d *vstreamd) (user, sys time.Duration) {
	user, sys, err := procstat.Times(d.Pid())
	if err != nil {
		b.Fatal(err)
	}
	return user, sys
}

func vstreamdSwitches(b *testing.B, d *vstreamd) int64 {
	n, err := procstat.ContextSwitches(d.Pid())
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// binlogReader is the bench/binlogreader process: go-mysql reading and decoding the binlog,
// nothing more.
type binlogReader struct{ cmd *exec.Cmd }

// startBinlogReader starts the anchor reading latencyDB's binlog after gtid and returns once
// its dump is open.
func startBinlogReader(b *testing.B, gtid string) *binlogReader {
	cmd := exec.Command(readerBin, "--host", latencyDB.Host(), "--port", strconv.Itoa(latencyDB.Port()),
		"--user", latencyDB.User(), "--password", latencyDB.Password(), "--flavor", string(latencyDB.Flavor()), "--gtid", gtid)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &binlogReader{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "reading\n" {
		r.stop()
		b.Fatalf("binlogreader did not start: %q %v: %s", line, err, stderr.String())
	}
	return r
}

func (r *binlogReader) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
