package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
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
	"github.com/vstream-cdc/vstream/internal/procstat"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// The fan-out benchmark's scale. The defaults are the targets' figures (100 streams, 500
// transactions/s) and keep the run near a minute on two cores.
var (
	fanStreams = flag.Int("fanout.streams", 100, "filtered streams, each selecting a table of its own")
	fanTxns    = flag.Int("fanout.txns", 20, "pre-filled transactions per table")
	fanTxnRows = flag.Int("fanout.rows", 50, "rows per pre-filled transaction")
	fanTPS     = flag.Int("fanout.tps", 500, "single-row transactions per second in the latency phase")
	fanLatency = flag.Duration("fanout.latency", 10*time.Second, "length of the latency phase")
)

var (
	fanOnce sync.Once
	// fanDB's binlog holds the pre-filled rows and nothing after them, so that every replay
	// reads the same; latDB takes the latency phases' writes. Both are servers of their
	// own, apart from the other benchmarks'.
	fanDB, latDB *testdb.Server
	fanStart     string // the position before the pre-filled transactions
	fanSetupErr  error
	// fanNextID numbers the latency phases' rows, across iterations.
	fanNextID atomic.Int64
)

func fanTable(i int) string { return fmt.Sprintf("fan%03d", i) }

// fanAll selects every table of the benchmark, as one stream.
const fanAll = "/^fan[0-9]+$/"

// setupFanout starts the benchmark's database servers, creates one table per filtered stream
// in each, writes the binlog every replay reads (transaction t goes to table t mod streams,
// so that each table's rows are spread over the whole binlog) and builds vstreamd.
func setupFanout(b *testing.B) {
	fanOnce.Do(func() { fanSetupErr = fillFanout() })
	if fanSetupErr != nil {
		b.Fatal(fanSetupErr)
	}
}

func fillFanout() error {
	var err error
	if fanDB, err = startFanDB(); err != nil {
		return err
	}
	if latDB, err = startFanDB(); err != nil {
		return err
	}
	conn, err := fanDB.Conn("fan")
	if err != nil {
		return err
	}
	defer conn.Close()
	pos, err := binlogPos(fanDB)
	if err != nil {
		return err
	}
	fanStart = pos.String()
	rows := *fanTxnRows
	for t := range *fanTxns * *fanStreams {
		q := fmt.Sprintf(`INSERT INTO %s SELECT seq, 0, CONCAT('customer-', seq), seq * 1.25,
			'a note of modest length for each row' FROM %s`, fanTable(t%*fanStreams), seqRange(fanDB, t*rows+1, (t+1)*rows))
		if _, err := conn.Execute(q); err != nil {
			return err
		}
	}
	return buildVstreamd()
}

// startFanDB starts a database server with the benchmark's tables.
func startFanDB() (*testdb.Server, error) {
	// Today each stream opens a binlog dump and a connection for the tables' definitions.
	db, err := testdb.Start(testdb.Options{Database: "fan", ExtraArgs: []string{"--max-connections=1000"}})
	if err != nil {
		return nil, err
	}
	for i := range *fanStreams {
		// sent is 0 in the pre-filled rows; the latency phases' rows carry a time in it.
		if err := db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, sent BIGINT NOT NULL,
			customer VARCHAR(64), amount DECIMAL(12,2), note VARCHAR(255))`, fanTable(i))); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

func closeFanout() {
	for _, db := range []*testdb.Server{fanDB, latDB} {
		if db != nil {
			db.Close()
		}
	}
}

// BenchmarkFanout streams the same pre-filled binlog to one stream selecting every table,
// then to -fanout.streams streams selecting a table each (together the same rows), each
// time from a vstreamd process of its own, so that the CPU and memory measured are the
// server's alone and not the clients'. Then, on the other server, each set of streams is
// opened again and writers commit -fanout.tps single-row transactions per second for
// -fanout.latency while the clients measure commit-to-client latency: the one stream's
// figures are the anchor the filtered streams' are read against. It reports the figures the
// shared binlog reader is judged by and asserts none of them.
func BenchmarkFanout(b *testing.B) {
	setupFanout(b)
	b.ResetTimer()
	tables := make([]string, *fanStreams)
	for i := range tables {
		tables[i] = fanTable(i)
	}
	var one, fan fanPhase
	for i := range b.N {
		o, f := runReplay(b, []string{fanAll}), runReplay(b, tables)
		// Each replay's own ratio too: the one stream's CPU varies from run to run by more
		// than the streams' share of it.
		fmt.Printf("fanout replay %d: one stream %.2fs, %d streams %.2fs: %.2fx\n", i+1, o.cpu.Seconds(), len(tables), f.cpu.Seconds(), f.cpu.Seconds()/o.cpu.Seconds())
		one.add(o)
		fan.add(f)
		one.add(runLatency(b, []string{fanAll}))
		fan.add(runLatency(b, tables))
	}
	one.report(b, "1-stream", b.N)
	fan.report(b, fmt.Sprintf("%d-streams", *fanStreams), b.N)
	b.ReportMetric(fan.cpu.Seconds()/one.cpu.Seconds(), "cpu-ratio")
	b.ReportMetric(fan.filteredEventsPerTxn(), "events/filtered-txn")
	fmt.Printf("fanout: %d rows in %d transactions, then %s at %d/s; %d streams against 1: server CPU %.2fx, %.2f events per filtered-out transaction\n",
		*fanTxns**fanStreams**fanTxnRows, *fanTxns**fanStreams, *fanLatency, *fanTPS,
		*fanStreams, fan.cpu.Seconds()/one.cpu.Seconds(), fan.filteredEventsPerTxn())
}

// report reports a phase's figures, averaged over iters, with units ending in /name.
func (p *fanPhase) report(b *testing.B, name string, iters int) {
	n := float64(iters)
	p50, p99 := p.lat.percentile(0.50), p.lat.percentile(0.99)
	ms := func(d time.Duration) float64 {
		if d == undelivered {
			return math.Inf(1)
		}
		return float64(d) / float64(time.Millisecond)
	}
	b.ReportMetric(p.cpu.Seconds()/n, "cpu-s/"+name)
	b.ReportMetric(float64(p.dumps), "dumps-max/"+name)
	b.ReportMetric(float64(p.peakRSS)/(1<<20), "peak-RSS-MiB/"+name)
	b.ReportMetric(ms(p50), "latency-p50-ms/"+name)
	b.ReportMetric(ms(p99), "latency-p99-ms/"+name)
	b.ReportMetric(float64(p.lat.lost), "latency-streams-lost/"+name)
	b.ReportMetric(p.lat.rate(), "latency-txn/s/"+name)
	b.ReportMetric(share(p.lat.cpu, p.lat.span)*100, "latency-cpu-%/"+name)
	b.ReportMetric(share(p.lat.clientCPU, p.lat.span)*100, "latency-bench-process-cpu-%/"+name)
	b.ReportMetric(share(p.lat.dbCPU, p.lat.span)*100, "latency-mariadb-cpu-%/"+name)
	b.ReportMetric(share(p.lat.machineBusy, p.lat.span)*100, "latency-machine-busy-%/"+name)
	b.ReportMetric(share(p.lat.machineIdle, p.lat.span)*100, "latency-machine-idle-%/"+name)
	b.ReportMetric(p.dbCPU.Seconds()/n, "mariadb-cpu-s/"+name)
	b.ReportMetric(float64(p.lat.responses)/p.lat.span.Seconds(), "latency-responses/s/"+name)
	b.ReportMetric(float64(p.lat.events)/p.lat.span.Seconds(), "latency-events/s/"+name)
	// The metrics keep their mariadb names whatever the flavor, so that runs compare.
	fmt.Printf("fanout %s: pre-filled binlog in %.2fs wall, server CPU %.2fs (%s %.2fs), max %d binlog dumps; %d transactions at %.0f/s: "+
		"commit-to-client p50 %.2fms p99 %.2fms, until the last row arrived server CPU %.0f%% of a core, %s %.0f%%, the benchmark process (clients and writers) %.0f%%, the whole machine %.0f%% (idle %.0f%%), %.0f responses/s, %.0f events/s; "+
		"%d streams lost, %d rows undelivered; peak RSS %.1f MiB\n",
		name, p.wall.Seconds()/n, p.cpu.Seconds()/n, serverName(fanDB), p.dbCPU.Seconds()/n, p.dumps, p.lat.sent, p.lat.rate(),
		ms(p50), ms(p99), share(p.lat.cpu, p.lat.span)*100, serverName(latDB), share(p.lat.dbCPU, p.lat.span)*100, share(p.lat.clientCPU, p.lat.span)*100,
		share(p.lat.machineBusy, p.lat.span)*100, share(p.lat.machineIdle, p.lat.span)*100,
		float64(p.lat.responses)/p.lat.span.Seconds(), float64(p.lat.events)/p.lat.span.Seconds(), p.lat.lost, p.lat.missing, float64(p.peakRSS)/(1<<20))
	for _, err := range p.lat.errs {
		fmt.Printf("fanout %s: %v\n", name, err)
	}
}

// fanPhase is what a set of streams cost, summed over iterations: the replay of the
// pre-filled binlog (cpu, wall and the filtered-out transactions) and the latency phase.
type fanPhase struct {
	cpu, wall time.Duration // of the replay
	dbCPU     time.Duration // MariaDB's in the replay
	dumps     int           // most binlog dump connections on the source at once, in either
	peakRSS   int64         // vstreamd's VmHWM, bytes, in either
	// events the clients received in transactions without rows of theirs, and how many
	// such transactions the binlog held before each client's last row.
	filteredEvents, filteredTxns int
	lat                          latencyPhase
}

func (p *fanPhase) add(q fanPhase) {
	p.cpu += q.cpu
	p.wall += q.wall
	p.dumps = max(p.dumps, q.dumps)
	p.peakRSS = max(p.peakRSS, q.peakRSS)
	p.filteredEvents += q.filteredEvents
	p.filteredTxns += q.filteredTxns
	p.lat.samples = append(p.lat.samples, q.lat.samples...)
	p.lat.sent += q.lat.sent
	p.lat.cpu += q.lat.cpu
	p.lat.wall += q.lat.wall
	p.lat.span += q.lat.span
	p.lat.clientCPU += q.lat.clientCPU
	p.lat.dbCPU += q.lat.dbCPU
	p.lat.machineBusy += q.lat.machineBusy
	p.lat.machineIdle += q.lat.machineIdle
	p.lat.responses += q.lat.responses
	p.lat.events += q.lat.events
	p.dbCPU += q.dbCPU
	p.lat.lost += q.lat.lost
	p.lat.missing += q.lat.missing
	p.lat.errs = append(p.lat.errs, q.lat.errs...)
}

func (p *fanPhase) filteredEventsPerTxn() float64 {
	if p.filteredTxns == 0 {
		return 0
	}
	return float64(p.filteredEvents) / float64(p.filteredTxns)
}

// latencyPhase holds the latency phase's samples and the server CPU it took.
type latencyPhase struct {
	samples []time.Duration
	sent    int
	// wall is how long the writers wrote, span until the last row arrived; cpu and
	// clientCPU are vstreamd's and the benchmark process's (clients and writers) over span.
	wall, span, cpu, clientCPU time.Duration
	dbCPU                      time.Duration // MariaDB's over span
	// machineBusy and machineIdle are the whole machine's over span, every core: what
	// else ran beside the benchmark shows here.
	machineBusy, machineIdle time.Duration
	// responses and events are what the clients received over span, all streams together.
	responses, events int64
	// lost counts the streams that ended with an error, errs says why; missing counts the
	// rows the clients did not receive.
	lost, missing int
	errs          []error
}

// undelivered stands for the latency of a row that never arrived.
const undelivered = time.Duration(math.MaxInt64)

// percentile is the latency of the p-th fraction of every row a client should have
// received: the rows that never arrived count as slower than all the others.
func (l *latencyPhase) percentile(p float64) time.Duration {
	n := len(l.samples) + l.missing
	if n == 0 {
		return 0
	}
	slices.Sort(l.samples)
	if k := int(float64(n-1) * p); k < len(l.samples) {
		return l.samples[k]
	}
	return undelivered
}

func (l *latencyPhase) rate() float64 {
	if l.wall == 0 {
		return 0
	}
	return float64(l.sent) / l.wall.Seconds()
}

// share is cpu as a fraction of a core over wall.
func share(cpu, wall time.Duration) float64 {
	if wall == 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}

// streams is a vstreamd process and one stream of it per match, each read by a fanClient.
type streams struct {
	d       *vstreamd
	clients []*fanClient
	// prefilled receives once from each client when it has its quota of pre-filled rows;
	// errc receives the error that ended a stream.
	prefilled chan struct{}
	errc      chan error
	dumps     func() (int, error)
	// close ends the streams and vstreamd; it may be called again.
	close func()
}

// openStreams opens one stream of d per match from position from; each stream's quota is
// its share of rows, the pre-filled rows the matches select together. The caller closes
// the streams, which stops d.
func openStreams(b *testing.B, d *vstreamd, from string, matches []string, rows int) *streams {
	s := &streams{d: d, dumps: watchDumps(b, d.db),
		prefilled: make(chan struct{}, len(matches)), errc: make(chan error, len(matches))}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var conns []*grpc.ClientConn
	var once sync.Once
	s.close = func() {
		once.Do(func() {
			cancel()
			for _, cc := range conns {
				cc.Close()
			}
			wg.Wait()
			s.dumps()
			s.d.stop(b)
		})
	}
	for i, m := range matches {
		cc, err := grpc.NewClient(s.d.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
		if err != nil {
			s.close()
			b.Fatal(err)
		}
		conns = append(conns, cc)
		st, err := startStream(ctx, cc, from, m)
		if err != nil {
			s.close()
			b.Fatal(err)
		}
		c := &fanClient{index: i, quota: rows / len(matches)}
		s.clients = append(s.clients, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.run(st, s.prefilled); err != nil && ctx.Err() == nil {
				c.failed.Store(true)
				s.errc <- fmt.Errorf("stream %s: %w", m, err)
			}
		}()
	}
	return s
}

// waitPrefilled waits until every client has its quota of pre-filled rows.
func (s *streams) waitPrefilled(b *testing.B) {
	for range s.clients {
		select {
		case <-s.prefilled:
		case err := <-s.errc:
			b.Fatal(err)
		case <-time.After(5 * time.Minute):
			b.Fatal("the streams did not receive the pre-filled rows in 5 minutes")
		}
	}
}

// finish records the phase's binlog dumps and vstreamd's peak memory in ph.
func (s *streams) finish(b *testing.B, ph *fanPhase) {
	var err error
	if ph.dumps, err = s.dumps(); err != nil {
		b.Fatal(err)
	}
	ph.peakRSS = s.d.peakRSS(b)
}

// runReplay streams fanDB's pre-filled binlog to one stream per match, from a vstreamd of
// its own, until each has every pre-filled row it selects.
func runReplay(b *testing.B, matches []string) fanPhase {
	d := startVstreamd(b, fanDB, fmt.Sprintf("replay-%d", len(matches)))
	// Starting the streams is part of their cost; starting the process is not.
	dbpid := dbPID(b, fanDB)
	cpu0, db0, start := d.cpu(b), procCPU(b, dbpid), time.Now()
	s := openStreams(b, d, fanStart, matches, *fanTxns**fanStreams**fanTxnRows)
	defer s.close()
	s.waitPrefilled(b)
	ph := fanPhase{cpu: s.d.cpu(b) - cpu0, dbCPU: procCPU(b, dbpid) - db0, wall: time.Since(start)}
	if len(matches) > 1 {
		for i, c := range s.clients {
			// Before the last transaction of table i come (txns-1)*streams+i+1 transactions,
			// txns of them its own.
			ph.filteredEvents += c.events - c.ownEvents
			ph.filteredTxns += (*fanTxns-1)*(len(matches)-1) + i
		}
	}
	s.finish(b, &ph)
	return ph
}

// runLatency opens one stream per match on latDB, from a vstreamd of its own, and once
// they all run (each has received a warm-up row), commits single-row transactions at
// -fanout.tps, spread over the tables, each row carrying the time just before its INSERT
// was sent, until every client has every one of them.
func runLatency(b *testing.B, matches []string) fanPhase {
	conn, err := latDB.Conn("fan")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	pos, err := binlogPos(latDB)
	if err != nil {
		b.Fatal(err)
	}
	for i := range *fanStreams {
		q := fmt.Sprintf("INSERT INTO %s (id, sent, customer, amount, note) VALUES (%d, 0, 'warm-up', 1.25, 'a note')",
			fanTable(i), fanNextID.Add(1))
		if _, err := conn.Execute(q); err != nil {
			b.Fatal(err)
		}
	}
	s := openStreams(b, startVstreamd(b, latDB, fmt.Sprintf("latency-%d", len(matches))), pos.String(), matches, *fanStreams)
	defer s.close()
	s.waitPrefilled(b)

	// Transaction k is due at start + k/tps. Several writers take them in turn, so that a
	// commit slower than the interval delays the ones after it less; the row's time is taken
	// when its INSERT is sent, so a writer's own delay is not counted as latency.
	const writers = 8
	interval := time.Second / time.Duration(*fanTPS)
	var next, sent atomic.Int64
	sentTo := make([]atomic.Int64, *fanStreams) // by table
	var wg sync.WaitGroup
	werr := make(chan error, writers)
	dbpid := dbPID(b, latDB)
	cpu0, client0, db0, start := s.d.cpu(b), procCPU(b, os.Getpid()), procCPU(b, dbpid), time.Now()
	busy0, idle0 := machineCPU(b)
	var responses0, events0 int64
	for _, c := range s.clients {
		responses0 += c.responses.Load()
		events0 += c.allEvents.Load()
	}
	for range writers {
		conn, err := latDB.Conn("fan")
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
					fanTable(int(k)%*fanStreams), fanNextID.Add(1), time.Now().UnixNano())
				if _, err := conn.Execute(q); err != nil {
					werr <- err
					return
				}
				sentTo[int(k)%*fanStreams].Add(1)
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	close(werr)
	if err := <-werr; err != nil {
		b.Fatal(err)
	}
	var ph fanPhase
	ph.lat.wall = time.Since(start)
	// A stream may end under the load (today a binlog dump that waits for its client longer
	// than the read timeout is cut): the phase goes on with the others and says so.
	want := func(c *fanClient) int64 {
		if len(s.clients) == 1 {
			return sent.Load()
		}
		return sentTo[c.index].Load()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		for drained := false; !drained; {
			select {
			case err := <-s.errc:
				ph.lat.errs = append(ph.lat.errs, err)
			default:
				drained = true
			}
		}
		waiting := 0
		for _, c := range s.clients {
			if !c.failed.Load() && c.latencyRows.Load() < want(c) {
				waiting++
			}
		}
		if waiting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ph.lat.cpu = s.d.cpu(b) - cpu0
	ph.lat.clientCPU = procCPU(b, os.Getpid()) - client0
	ph.lat.dbCPU = procCPU(b, dbpid) - db0
	ph.lat.span = time.Since(start)
	busy1, idle1 := machineCPU(b)
	ph.lat.machineBusy, ph.lat.machineIdle = busy1-busy0, idle1-idle0
	for _, c := range s.clients {
		ph.lat.responses += c.responses.Load()
		ph.lat.events += c.allEvents.Load()
	}
	ph.lat.responses -= responses0
	ph.lat.events -= events0
	ph.lat.sent = int(sent.Load())
	for _, c := range s.clients {
		if c.failed.Load() {
			ph.lat.lost++
		}
		ph.lat.missing += int(want(c) - c.latencyRows.Load())
		c.mu.Lock()
		ph.lat.samples = append(ph.lat.samples, c.latencies...)
		c.mu.Unlock()
	}
	s.finish(b, &ph)
	return ph
}

// fanClient reads a stream: first the pre-filled rows it selects, counting the events that
// came with them, then the latency phase's rows, timing each.
type fanClient struct {
	index int // of the stream, and of its table when each selects one
	quota int // pre-filled rows the stream selects
	// events is every event received up to the end of the transaction of the last
	// pre-filled row; ownEvents those of them in transactions that carried rows.
	events, ownEvents int
	latencyRows       atomic.Int64
	// responses and allEvents count everything received, for the latency phase's rates.
	responses, allEvents atomic.Int64
	failed               atomic.Bool // the stream ended with an error
	mu                   sync.Mutex
	latencies            []time.Duration
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
		c.responses.Add(1)
		c.allEvents.Add(int64(len(resp.Events)))
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
	*testkit.Vstreamd
	db  *testdb.Server
	log bytes.Buffer
}

// startVstreamd starts vstreamd on db's database fan; with -bench.cpuprofile it profiles
// into <dir>/<phase>.pprof.
func startVstreamd(b *testing.B, db *testdb.Server, phase string) *vstreamd {
	return startVstreamdOn(b, db, "fan", phase)
}

// startVstreamdOn starts vstreamd on db's database; with -bench.cpuprofile it profiles into
// <dir>/<phase>.pprof.
func startVstreamdOn(b *testing.B, db *testdb.Server, database, phase string) *vstreamd {
	return startVstreamdBin(b, vstreamdBin, db, database, phase)
}

// startVstreamdBin is startVstreamdOn with the vstreamd binary bin.
func startVstreamdBin(b *testing.B, bin string, db *testdb.Server, database, phase string) *vstreamd {
	d := &vstreamd{db: db}
	args := []string{"--mysql-dsn", db.DSN(database), "--log-level", "warn"}
	if *cpuProfileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(*cpuProfileDir, phase+".pprof"), "--drain-timeout", "1s")
	}
	v, err := testkit.StartVstreamd(bin, &d.log, args...)
	if err != nil {
		b.Fatalf("%v:\n%s", err, d.log.String())
	}
	d.Vstreamd = v
	return d
}

// stop kills vstreamd and the binlog dumps it leaves on the source: MariaDB notices a
// dump's client is gone only when it next writes to it, and a stale dump would count in the
// next phase.
func (d *vstreamd) stop(b *testing.B) {
	if *cpuProfileDir != "" {
		// The profile is written on a clean shutdown only.
		d.Stop(30 * time.Second)
	} else {
		d.Kill()
	}
	conn, err := d.db.Conn("")
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
func (d *vstreamd) cpu(b *testing.B) time.Duration { return procCPU(b, d.Pid()) }

// serverName names db's server in the benchmarks' reports.
func serverName(db *testdb.Server) string {
	if db.Flavor() == testdb.MySQL {
		return "MySQL"
	}
	return "MariaDB"
}

// dbPID is the process id of db's server (mariadbd or mysqld), from the pid file testdb
// has it write.
func dbPID(b *testing.B, db *testdb.Server) int {
	s, err := os.ReadFile(filepath.Join(db.Dir(), "server.pid"))
	if err != nil {
		b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(s)))
	if err != nil {
		b.Fatal(err)
	}
	return pid
}

// machineCPU is the time every core of the machine has been busy and idle (idle and
// iowait) since boot, from /proc/stat.
func machineCPU(b *testing.B) (busy, idle time.Duration) {
	s, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(s), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		b.Fatalf("/proc/stat: %q", line)
	}
	// user nice system idle iowait irq softirq steal; guest time is counted in user.
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		if i == 3 || i == 4 {
			idle += time.Duration(n) * procstat.ClockTick
		} else {
			busy += time.Duration(n) * procstat.ClockTick
		}
	}
	return busy, idle
}

// procCPU is the CPU time process pid has used, user and system, all threads.
func procCPU(b *testing.B, pid int) time.Duration {
	d, err := procstat.CPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// peakRSS is vstreamd's peak resident memory (VmHWM), in bytes.
func (d *vstreamd) peakRSS(b *testing.B) int64 {
	n, err := procstat.Memory(d.Pid(), "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// watchDumps counts the binlog dump connections on the source every 50ms until the
// returned function is called, which returns the most seen at once, or the error that
// stopped the count.
func watchDumps(b *testing.B, db *testdb.Server) func() (int, error) {
	conn, err := db.Conn("")
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
