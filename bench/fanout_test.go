package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// The fan-out benchmark's scale. The defaults are the figures (100 streams, 500
// transactions/s) and keep the run near a minute on two cores.
var (
	fanStreams = flag.Int("fanout.streams", 100, "filtered streams, each selecting a table of its own")
	fanTxns    = flag.Int("fanout.txns", 20, "pre-filled transactions per table")
	fanTxnRows = flag.Int("fanout.rows", 50, "rows per pre-filled transaction")
	fanTPS     = flag.Int("fanout.tps", 500, "single-row transactions per second in the latency phase")
	fanLatency = flag.Duration("fanout.latency", 10*time.Second, "length of the latency phase")
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

var (
	fanOnce     sync.Once
	fanDB       *testdb.Server // a server of its own: its binlog holds the fan-out's rows only
	fanStart    string         // the position before the pre-filled transactions
	fanBinDir   string         // holds the vstreamd binary
	fanSetupErr error
	// fanNextID numbers the latency phase's rows, above every pre-filled id and across
	// iterations.
	fanNextID atomic.Int64
)

func fanTable(i int) string { return fmt.Sprintf("fan%03d", i) }

// fanAll selects every table of the benchmark, as one stream.
const fanAll = "/^fan[0-9]+$/"

// setupFanout starts the benchmark's MariaDB, creates one table per filtered stream, writes
// the binlog every run replays (transaction t goes to table t mod streams, so that each
// table's rows are spread over the whole binlog) and builds vstreamd.
func setupFanout(b *testing.B) {
	fanOnce.Do(func() { fanSetupErr = fillFanout() })
	if fanSetupErr != nil {
		b.Fatal(fanSetupErr)
	}
}

func fillFanout() error {
	var err error
	// Today each stream opens a binlog dump and a connection for the tables' definitions.
	opts := testdb.Options{Database: "fan", ExtraArgs: []string{"--max-connections=1000"}}
	if fanDB, err = testdb.Start(opts); err != nil {
		return err
	}
	for i := range *fanStreams {
		if err := fanDB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, sent BIGINT NOT NULL,
			customer VARCHAR(64), amount DECIMAL(12,2), note VARCHAR(255))`, fanTable(i))); err != nil {
			return err
		}
	}
	conn, err := fanDB.Conn("fan")
	if err != nil {
		return err
	}
	defer conn.Close()
	pos, err := binlogPos(conn)
	if err != nil {
		return err
	}
	fanStart = pos.String()
	rows := *fanTxnRows
	for t := range *fanTxns * *fanStreams {
		// sent is 0: the latency phase's rows are the ones with a time in it.
		q := fmt.Sprintf(`INSERT INTO %s SELECT seq, 0, CONCAT('customer-', seq), seq * 1.25,
			'a note of modest length for each row' FROM seq_%d_to_%d`, fanTable(t%*fanStreams), t*rows+1, (t+1)*rows)
		if _, err := conn.Execute(q); err != nil {
			return err
		}
	}
	if fanBinDir, err = os.MkdirTemp("", "vstream-fanout-"); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(fanBinDir, "vstreamd"), "./cmd/vstreamd")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build vstreamd: %w\n%s", err, out)
	}
	return nil
}

func closeFanout() {
	if fanDB != nil {
		fanDB.Close()
	}
	if fanBinDir != "" {
		os.RemoveAll(fanBinDir)
	}
}

// BenchmarkFanout streams the same pre-filled binlog to one stream selecting every table,
// then to -fanout.streams streams selecting a table each (together the same rows), each
// time from a vstreamd process of its own, so that the CPU and memory measured are the
// server's alone and not the clients'. Then, with the filtered streams still open, a writer
// commits -fanout.tps single-row transactions per second for -fanout.latency, and the clients
// measure commit-to-client latency. It reports the figures the shared binlog reader is judged
// by and asserts none of them.
func BenchmarkFanout(b *testing.B) {
	setupFanout(b)
	b.ResetTimer()
	n := *fanStreams
	var one, fan fanPhase
	var lat latencyPhase
	for range b.N {
		one.add(runFanPhase(b, []string{fanAll}, nil))
		tables := make([]string, n)
		for i := range tables {
			tables[i] = fanTable(i)
		}
		fan.add(runFanPhase(b, tables, &lat))
	}
	iters := float64(b.N)
	nn := fmt.Sprintf("%d-streams", n)
	b.ReportMetric(one.cpu.Seconds()/iters, "cpu-s/1-stream")
	b.ReportMetric(fan.cpu.Seconds()/iters, "cpu-s/"+nn)
	b.ReportMetric(fan.cpu.Seconds()/one.cpu.Seconds(), "cpu-ratio")
	b.ReportMetric(float64(one.dumps), "dumps-max/1-stream")
	b.ReportMetric(float64(fan.dumps), "dumps-max/"+nn)
	b.ReportMetric(fan.filteredEventsPerTxn(), "events/filtered-txn")
	b.ReportMetric(float64(one.peakRSS)/(1<<20), "peak-RSS-MiB/1-stream")
	b.ReportMetric(float64(fan.peakRSS)/(1<<20), "peak-RSS-MiB/"+nn)
	p50, p99 := lat.percentile(0.50), lat.percentile(0.99)
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "latency-p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "latency-p99-ms")
	b.ReportMetric(lat.cpuShare()*100, "cpu-%-latency-phase")
	b.ReportMetric(float64(lat.sent)/lat.wall.Seconds(), "txn/s-latency-phase")
	fmt.Printf("fanout: %d rows in %d transactions; 1 stream: server CPU %.2fs, %.2fs wall, max %d binlog dumps, peak RSS %.1f MiB; "+
		"%d streams: server CPU %.2fs (%.2fx), %.2fs wall, max %d binlog dumps, peak RSS %.1f MiB, %.2f events per filtered-out transaction; "+
		"%d transactions at %.0f/s: commit-to-client p50 %s p99 %s, server CPU %.0f%% of a core\n",
		*fanTxns**fanStreams**fanTxnRows, *fanTxns**fanStreams,
		one.cpu.Seconds()/iters, one.wall.Seconds()/iters, one.dumps, float64(one.peakRSS)/(1<<20),
		n, fan.cpu.Seconds()/iters, fan.cpu.Seconds()/one.cpu.Seconds(), fan.wall.Seconds()/iters, fan.dumps,
		float64(fan.peakRSS)/(1<<20), fan.filteredEventsPerTxn(),
		lat.sent, float64(lat.sent)/lat.wall.Seconds(), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), lat.cpuShare()*100)
}

// fanPhase is what one replay of the pre-filled binlog cost, summed over iterations.
type fanPhase struct {
	cpu, wall time.Duration
	dumps     int   // most binlog dump connections on the source at once
	peakRSS   int64 // vstreamd's VmHWM, bytes
	// events the clients received in transactions without rows of theirs, and how many
	// such transactions the binlog held before each client's last row.
	filteredEvents, filteredTxns int
}

func (p *fanPhase) add(q fanPhase) {
	p.cpu += q.cpu
	p.wall += q.wall
	p.dumps = max(p.dumps, q.dumps)
	p.peakRSS = max(p.peakRSS, q.peakRSS)
	p.filteredEvents += q.filteredEvents
	p.filteredTxns += q.filteredTxns
}

func (p *fanPhase) filteredEventsPerTxn() float64 {
	if p.filteredTxns == 0 {
		return 0
	}
	return float64(p.filteredEvents) / float64(p.filteredTxns)
}

// latencyPhase holds the latency phase's samples and the server CPU it took.
type latencyPhase struct {
	samples   []time.Duration
	sent      int
	cpu, wall time.Duration
}

func (l *latencyPhase) percentile(p float64) time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	slices.Sort(l.samples)
	return l.samples[int(float64(len(l.samples)-1)*p)]
}

func (l *latencyPhase) cpuShare() float64 {
	if l.wall == 0 {
		return 0
	}
	return l.cpu.Seconds() / l.wall.Seconds()
}

// runFanPhase starts vstreamd, streams the pre-filled binlog to one stream per match until
// each has every pre-filled row it selects, and, when lat is not nil, runs the latency phase
// on the same streams.
func runFanPhase(b *testing.B, matches []string, lat *latencyPhase) fanPhase {
	d := startVstreamd(b)
	defer d.stop(b)
	dumps := watchDumps(b)
	defer dumps()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	clients := make([]*fanClient, len(matches))
	prefilled := make(chan struct{}, len(matches))
	errc := make(chan error, len(matches))
	perTable := *fanTxns * *fanTxnRows
	cpu0, start := d.cpu(b), time.Now()
	for i, m := range matches {
		cc, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		st, err := startStream(ctx, cc, fanStart, m)
		if err != nil {
			b.Fatal(err)
		}
		c := &fanClient{quota: perTable * *fanStreams / len(matches)}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.run(st, prefilled); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("stream %s: %w", m, err)
			}
		}()
	}
	for range matches {
		select {
		case <-prefilled:
		case err := <-errc:
			b.Fatal(err)
		case <-time.After(5 * time.Minute):
			b.Fatal("the streams did not receive the pre-filled rows in 5 minutes")
		}
	}
	ph := fanPhase{cpu: d.cpu(b) - cpu0, wall: time.Since(start)}
	if len(matches) > 1 {
		for i, c := range clients {
			// Before the last transaction of table i come (txns-1)*streams+i+1 transactions,
			// txns of them its own.
			ph.filteredEvents += c.events - c.ownEvents
			ph.filteredTxns += (*fanTxns-1)*(len(matches)-1) + i
		}
	}
	if lat != nil {
		runLatency(b, d, clients, errc, lat)
	}
	var err error
	if ph.dumps, err = dumps(); err != nil {
		b.Fatal(err)
	}
	ph.peakRSS = d.peakRSS(b)
	return ph
}

// runLatency commits single-row transactions at -fanout.tps, spread over the tables, each
// row carrying the time just before its INSERT was sent, and waits until the clients have
// every one of them.
func runLatency(b *testing.B, d *vstreamd, clients []*fanClient, errc <-chan error, lat *latencyPhase) {
	// Transaction k is due at start + k/tps. Several writers take them in turn, so that a
	// commit slower than the interval delays the ones after it less; the row's time is taken
	// when its INSERT is sent, so a writer's own delay is not counted as latency.
	const writers = 8
	interval := time.Second / time.Duration(*fanTPS)
	var next, sent atomic.Int64
	var wg sync.WaitGroup
	werr := make(chan error, writers)
	cpu0, start := d.cpu(b), time.Now()
	for _, c := range clients {
		c.since.Store(start.UnixNano())
	}
	for range writers {
		conn, err := fanDB.Conn("fan")
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for {
				k := next.Add(1) - 1
				due := start.Add(time.Duration(k) * interval)
				if due.Sub(start) >= *fanLatency {
					return
				}
				time.Sleep(time.Until(due))
				q := fmt.Sprintf("INSERT INTO %s (id, sent, customer, amount, note) VALUES (%d, %d, 'latency', 1.25, 'a note')",
					fanTable(int(k)%len(clients)), 1<<40+fanNextID.Add(1), time.Now().UnixNano())
				if _, err := conn.Execute(q); err != nil {
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
	lat.wall += time.Since(start)
	want := int(sent.Load())
	deadline := time.Now().Add(time.Minute)
	for {
		got := 0
		for _, c := range clients {
			got += int(c.latencyRows.Load())
		}
		if got >= want {
			break
		}
		select {
		case err := <-errc:
			b.Fatal(err)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the clients received %d of %d latency rows in a minute", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lat.cpu += d.cpu(b) - cpu0
	lat.sent += want
	for _, c := range clients {
		c.mu.Lock()
		lat.samples = append(lat.samples, c.latencies...)
		c.mu.Unlock()
	}
}

// fanClient reads a stream: first the pre-filled rows it selects, counting the events that
// came with them, then the latency phase's rows, timing each.
type fanClient struct {
	quota int // pre-filled rows the stream selects
	// events is every event received up to the end of the transaction of the last
	// pre-filled row; ownEvents those of them in transactions that carried rows.
	events, ownEvents int
	// since is when the latency phase began (UnixNano); rows sent before are not timed.
	since       atomic.Int64
	latencyRows atomic.Int64
	mu          sync.Mutex
	latencies   []time.Duration
}

func (c *fanClient) run(st vstreamv1.VStreamService_StreamClient, prefilled chan<- struct{}) error {
	rows, pending, hasRows, done := 0, 0, false, false
	for {
		resp, err := st.Recv()
		if err != nil {
			if status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		}
		now := time.Now().UnixNano()
		for _, ev := range resp.Events {
			if !done {
				c.events++
				pending++
			}
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				hasRows = true
				for _, rc := range ev.RowEvent.RowChanges {
					sent, err := sentColumn(rc.After)
					if err != nil {
						return err
					}
					if sent == 0 {
						rows++
						continue
					}
					if sent < c.since.Load() {
						continue // an earlier iteration's latency phase
					}
					c.mu.Lock()
					c.latencies = append(c.latencies, time.Duration(now-sent))
					c.mu.Unlock()
					c.latencyRows.Add(1)
				}
			case binlogdata.VEventType_VGTID:
				// A VGTID closes what went before it: a transaction, or a run of them.
				if done {
					continue
				}
				if hasRows {
					c.ownEvents += pending
				}
				pending, hasRows = 0, false
				if rows >= c.quota {
					done = true
					prefilled <- struct{}{}
				}
			}
		}
	}
}

// sentColumn is the second column of a benchmark row: the time its INSERT was sent.
func sentColumn(r *query.Row) (int64, error) {
	if len(r.Lengths) < 2 || r.Lengths[0] < 0 || r.Lengths[1] < 0 {
		return 0, errors.New("row has no sent column")
	}
	v := r.Values[r.Lengths[0] : r.Lengths[0]+r.Lengths[1]]
	return strconv.ParseInt(string(v), 10, 64)
}

// vstreamd is a vstreamd process serving the benchmark's database.
type vstreamd struct {
	cmd  *exec.Cmd
	addr string
	log  bytes.Buffer
}

func startVstreamd(b *testing.B) *vstreamd {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	d := &vstreamd{addr: lis.Addr().String()}
	lis.Close()
	d.cmd = exec.Command(filepath.Join(fanBinDir, "vstreamd"), "--mysql-dsn", fanDB.DSN("fan"), "--listen", d.addr, "--log-level", "warn")
	d.cmd.Stdout, d.cmd.Stderr = &d.log, &d.log
	if err := d.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", d.addr); err == nil {
			c.Close()
			return d
		}
		if i == 200 {
			d.cmd.Process.Kill()
			d.cmd.Wait()
			b.Fatalf("vstreamd did not listen on %s in 10s:\n%s", d.addr, d.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills vstreamd and the binlog dumps it leaves on the source: MariaDB notices a
// dump's client is gone only when it next writes to it, and a stale dump would count in the
// next phase.
func (d *vstreamd) stop(b *testing.B) {
	d.cmd.Process.Kill()
	d.cmd.Wait()
	conn, err := fanDB.Conn("")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for range 100 {
		r, err := conn.Execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
		if err != nil {
			b.Fatal(err)
		}
		if r.RowNumber() == 0 {
			return
		}
		for i := range r.RowNumber() {
			id, _ := r.GetInt(i, 0)
			// The dump may end by itself in between: an unknown thread is not an error here.
			_, _ = conn.Execute(fmt.Sprintf("KILL %d", id))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("binlog dumps remain on the source after vstreamd stopped")
}

// cpu is the CPU time vstreamd has used, user and system, all threads.
func (d *vstreamd) cpu(b *testing.B) time.Duration {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces:
	// state is the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", d.cmd.Process.Pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatal(err)
	}
	return time.Duration(utime+stime) * clockTick
}

// peakRSS is vstreamd's peak resident memory (VmHWM), in bytes.
func (d *vstreamd) peakRSS(b *testing.B) int64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(s)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status has no VmHWM", d.cmd.Process.Pid)
	return 0
}

// watchDumps counts the binlog dump connections on the source every 50ms until the
// returned function is called, which returns the most seen at once, or the error that
// stopped the count.
func watchDumps(b *testing.B) func() (int, error) {
	conn, err := fanDB.Conn("")
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var most int
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			r, err := conn.Execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
			if err != nil {
				werr = err
				return
			}
			n, _ := r.GetInt(0, 0)
			most = max(most, int(n))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() (int, error) {
		once.Do(func() { close(stop); <-done })
		return most, werr
	}
}
