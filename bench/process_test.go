package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// The process benchmarks measure what a user gets: vstreamd as a process of its own, started
// afresh for every measurement, and the consumer as another, once with the project's client on
// the native API (bench/consumer) and once with Vitess's client on the vtgate API
// (interop/cmd/vtgateconsumer), each beside an anchor that does the same job without vstreamd,
// measured on the same server in the same run. The full workloads (docs/performance.md) are
// scaled down by default so that both flavors run in a few minutes on a 2-core machine:
//   - binlog: 1,000,000/scale rows inserted 100 per transaction, 200,000/scale single-row
//     UPDATEs, 100,000/scale DELETEs 10 per transaction (-process.scale, 10 by default); the
//     anchor is bench/binlogreader, go-mysql's BinlogSyncer decoding the same binlog, timed from
//     process start to exit;
//   - copy: a 500,000/scale-row table of ~260 bytes of text a row (-process.copy-scale, 2 by
//     default: at 50,000 rows the stream's start, a fixed cost, weighs on the ratio far more
//     than in the full run); the anchor is bench/chunkreader, go-sql-driver reading it in
//     10,000-row key chunks into sql.RawBytes;
//   - latency: single-row INSERTs from go-sql-driver at -process.tps for -process.latency (5s
//     by default, 20s in the full run); the anchor is a go-mysql reader in the writer's own
//     process, started at the current GTID. Each round also measures a bare process hop
//     (hopRun): the part of the consumer's latency over the anchor's that no vstreamd can
//     remove.
//
// The server runs with sync_binlog=0 and innodb_flush_log_at_trx_commit=2, so that its disk
// flushes do not set the pace. Every figure is reported beside its anchor, with the CPU time
// of every process: vstreamd's, the consumer's, the anchor's and the database server's.
// Nothing is asserted about time.
var (
	procScale     = flag.Int("process.scale", 10, "BenchmarkProcess/binlog: the full binlog workload (1,300,000 row changes) divided by this")
	procCopyScale = flag.Int("process.copy-scale", 2, "BenchmarkProcess/copy: the full 500,000-row table divided by this")
	procTPS       = flag.Int("process.tps", 500, "BenchmarkProcess/latency: single-row transactions per second")
	procLatency   = flag.Duration("process.latency", 5*time.Second, "BenchmarkProcess/latency: how long the writer commits, per consumer")
	procCompare   = flag.String("process.compare", "", "BenchmarkProcess: a second vstreamd binary (an earlier build, say) whose consumers run in the same rounds, named native-before and vtgate-before")
)

const (
	procTable    = "pb_orders"
	procCopy     = "pb_copy"
	procLatTable = "pb_lat"
	// procKeyspace is vstreamd's keyspace: the DSN's database.
	procKeyspace = "bench"
)

var (
	procBuildOnce sync.Once
	procBuildErr  error
	// consumerBin, vtgateConsumerBin, chunkReaderBin and hopBin are the processes the
	// benchmark runs, built beside vstreamd (buildVstreamd) and removed with it.
	consumerBin, vtgateConsumerBin, chunkReaderBin, hopBin string
)

// buildProcesses builds vstreamd and the anchors, and the two consumers: the vtgate one in the
// interop module, which pins the Vitess version and keeps it out of this module (see its
// package comment).
func buildProcesses() error {
	procBuildOnce.Do(func() {
		if procBuildErr = buildVstreamd(); procBuildErr != nil {
			return
		}
		dir := filepath.Dir(vstreamdBin)
		for _, p := range []struct {
			bin      *string
			dir, pkg string
		}{
			{&consumerBin, "..", "./bench/consumer"},
			{&chunkReaderBin, "..", "./bench/chunkreader"},
			{&hopBin, "..", "./bench/hop"},
			{&vtgateConsumerBin, "../interop", "./cmd/vtgateconsumer"},
		} {
			path := filepath.Join(dir, filepath.Base(p.pkg))
			build := exec.Command("go", "build", "-o", path, p.pkg)
			build.Dir = p.dir
			if out, err := build.CombinedOutput(); err != nil {
				procBuildErr = fmt.Errorf("build %s: %w\n%s", p.pkg, err, out)
				return
			}
			*p.bin = path
		}
	})
	return procBuildErr
}

// procWorkload is the database and what was written to it for the process benchmarks.
type procWorkload struct {
	db *testdb.Server
	// binlogFrom is where the binlog workload starts, binlogRows its row changes.
	binlogFrom string
	binlogSet  string
	binlogRows int
	copyRows   int
	// nextID numbers the latency table's rows across runs.
	nextID atomic.Int64
}

// BenchmarkProcess runs the three measurements as sub-benchmarks (binlog, copy, latency) on one
// database server of their own, closed when they are done. Each iteration of a sub-benchmark
// is a round in which every reader reads once, the order turning from round to round: on a
// shared machine the load changes from second to second.
func BenchmarkProcess(b *testing.B) {
	if err := buildProcesses(); err != nil {
		b.Fatal(err)
	}
	db, err := testdb.Start(testdb.Options{Database: procKeyspace, ExtraArgs: []string{"--sync-binlog=0"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	w := &procWorkload{db: db}
	// Written in this order, so that the binlog readers, which stop after the binlog
	// workload's last row change, read nothing of the copy table's load.
	if err := w.writeBinlog(); err != nil {
		b.Fatal(err)
	}
	if err := w.writeCopy(); err != nil {
		b.Fatal(err)
	}
	if err := db.Exec(`CREATE TABLE ` + procLatTable + ` (id BIGINT PRIMARY KEY, customer VARCHAR(64),
		amount DECIMAL(12,2), note VARCHAR(255))`); err != nil {
		b.Fatal(err)
	}
	b.Run("binlog", w.benchBinlog)
	b.Run("copy", w.benchCopy)
	b.Run("latency", w.benchLatency)
}

// rowSQL is the SELECT list of a benchmark row numbered seq: about 260 bytes of text, as an
// ordinary orders table's.
const rowSQL = `seq, CONCAT('customer-', seq), seq * 1.25, seq % 17, seq / 3.0,
	ELT(1 + seq % 3, 'new', 'paid', 'shipped'), '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678',
	CONCAT('a note of some length for each order, long enough that the row holds about as much text ',
		'as the rows of an ordinary orders table would, with an address and a comment ', seq), seq % 256`

const tableSQL = ` (id BIGINT PRIMARY KEY, customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE,
	status ENUM('new','paid','shipped'), created DATETIME(3), updated TIMESTAMP(3) NULL,
	note VARCHAR(255), flags BIT(8))`

// writeBinlog writes the binlog workload: inserts 100 rows a transaction, single-row updates,
// deletes 10 rows a transaction.
func (w *procWorkload) writeBinlog() error {
	if err := w.db.Exec(`CREATE TABLE ` + procTable + tableSQL); err != nil {
		return err
	}
	pos, err := binlogPos(w.db)
	if err != nil {
		return err
	}
	w.binlogFrom, w.binlogSet = pos.String(), pos.Normalized().GTIDSet.String()
	conn, err := w.db.Conn(procKeyspace)
	if err != nil {
		return err
	}
	defer conn.Close()
	inserts, updates, deletes := 1000000 / *procScale, 200000 / *procScale, 100000 / *procScale
	for i := 0; i < inserts; i += 100 {
		if _, err := conn.Execute(fmt.Sprintf(`INSERT INTO %s SELECT %s FROM %s`, procTable, rowSQL, seqRange(w.db, i+1, i+100))); err != nil {
			return err
		}
	}
	for i := range updates {
		// Spread over the table, one row a transaction.
		id := 1 + (i*7919)%inserts
		if _, err := conn.Execute(fmt.Sprintf(`UPDATE %s SET qty = qty + 1, status = 'paid' WHERE id = %d`, procTable, id)); err != nil {
			return err
		}
	}
	for i := 0; i < deletes; i += 10 {
		if _, err := conn.Execute(fmt.Sprintf(`DELETE FROM %s WHERE id BETWEEN %d AND %d`, procTable, i+1, i+10)); err != nil {
			return err
		}
	}
	w.binlogRows = inserts + updates + deletes
	return nil
}

func (w *procWorkload) writeCopy() error {
	if err := w.db.Exec(`CREATE TABLE ` + procCopy + tableSQL); err != nil {
		return err
	}
	w.copyRows = 500000 / *procCopyScale
	for i := 0; i < w.copyRows; i += 10000 {
		n := min(10000, w.copyRows-i)
		if err := w.db.Exec(fmt.Sprintf(`INSERT INTO %s SELECT %s FROM %s`, procCopy, rowSQL, seqRange(w.db, i+1, i+n))); err != nil {
			return err
		}
	}
	return nil
}

// procReader is one way of doing a sub-benchmark's job, and what its runs added up to.
type procReader struct {
	name string
	// run does the job once and returns what it measured.
	run func(b *testing.B) procRun
	sum procRun
	// rounds is each round's time, for the spread of the ratio to the anchor's.
	rounds []time.Duration
}

// ratios are r's rate in each round over the anchor's in the same round.
func (r *procReader) ratios(anchor *procReader) []float64 {
	out := make([]float64, len(r.rounds))
	for i, d := range r.rounds {
		out[i] = anchor.rounds[i].Seconds() / d.Seconds()
	}
	return out
}

// procRun is one run's time and CPU times: the consumer's (or the anchor's), vstreamd's (none
// for an anchor) and the database server's, each over the run.
type procRun struct {
	elapsed, client, vstreamd, db time.Duration
	// responses and events are what a consumer received: how finely vstreamd batched.
	responses, events int
}

func (s *procRun) add(r procRun) {
	s.elapsed += r.elapsed
	s.client += r.client
	s.vstreamd += r.vstreamd
	s.db += r.db
	s.responses += r.responses
	s.events += r.events
}

// rounds runs every reader once per iteration, the order turning, and reports each one's rate
// in rows/s, its ratio to the anchor (readers[0]) with the lowest and highest ratio of a
// single round (the machine's noise: builds that differ by less are not told apart), and
// every process's CPU seconds per million rows.
// With -process.compare, compare makes the readers of the second vstreamd (native-before,
// vtgate-before), which join the rounds.
func (w *procWorkload) rounds(b *testing.B, job string, rows int, readers []*procReader, compare func(bin, name string) *procReader) {
	if *procCompare != "" {
		readers = append(readers, compare(*procCompare, "native-before"), compare(*procCompare, "vtgate-before"))
	}
	dbPid := dbPID(b, w.db)
	for i := 0; i < b.N; i++ {
		for k := range readers {
			r := readers[(i+k)%len(readers)]
			db0 := procCPU(b, dbPid)
			run := r.run(b)
			run.db = procCPU(b, dbPid) - db0
			r.sum.add(run)
			r.rounds = append(r.rounds, run.elapsed)
		}
	}
	mrows := float64(rows*b.N) / 1e6
	rate := func(r *procReader) float64 { return float64(rows*b.N) / r.sum.elapsed.Seconds() }
	line := fmt.Sprintf("process %s on %s, %d rows: ", job, serverName(w.db), rows)
	for _, r := range readers {
		b.ReportMetric(rate(r), r.name+"-rows/s")
		b.ReportMetric(r.sum.client.Seconds()/mrows, r.name+"-client-cpu-s/Mrows")
		b.ReportMetric(r.sum.db.Seconds()/mrows, r.name+"-db-cpu-s/Mrows")
		line += fmt.Sprintf("%s %.0f rows/s", r.name, rate(r))
		if r != readers[0] {
			b.ReportMetric(rate(r)/rate(readers[0]), r.name+"/anchor")
			lo, hi := spread(r.ratios(readers[0]))
			b.ReportMetric(lo, r.name+"/anchor-lowest")
			b.ReportMetric(hi, r.name+"/anchor-highest")
			b.ReportMetric(r.sum.vstreamd.Seconds()/mrows, r.name+"-vstreamd-cpu-s/Mrows")
			b.ReportMetric(float64(r.sum.responses)/float64(b.N), r.name+"-responses")
			b.ReportMetric(float64(r.sum.events)/float64(r.sum.responses), r.name+"-events/response")
			line += fmt.Sprintf(" (%.2fx, rounds %.2f-%.2fx; CPU s/Mrows: vstreamd %.2f, client %.2f, db %.2f; %d responses of %.1f events); ", rate(r)/rate(readers[0]),
				lo, hi, r.sum.vstreamd.Seconds()/mrows, r.sum.client.Seconds()/mrows, r.sum.db.Seconds()/mrows,
				r.sum.responses/b.N, float64(r.sum.events)/float64(r.sum.responses))
		} else {
			line += fmt.Sprintf(" (CPU s/Mrows: anchor %.2f, db %.2f); ", r.sum.client.Seconds()/mrows, r.sum.db.Seconds()/mrows)
		}
	}
	fmt.Println(strings.TrimSuffix(line, "; "))
}

// benchBinlog: the binlog workload read from its start by the anchor, and through vstreamd by
// each consumer, each process timed from its start to its exit.
func (w *procWorkload) benchBinlog(b *testing.B) {
	anchor := func(b *testing.B) procRun {
		p := startProc(b, readerBin, "--host", w.db.Host(), "--port", strconv.Itoa(w.db.Port()), "--user", w.db.User(),
			"--password", w.db.Password(), "--flavor", string(w.db.Flavor()), "--gtid", w.binlogSet,
			"--table", procTable, "--rows", strconv.Itoa(w.binlogRows))
		p.wait(b)
		return procRun{elapsed: p.elapsed, client: p.cpu}
	}
	w.rounds(b, "binlog", w.binlogRows, []*procReader{
		{name: "anchor", run: anchor},
		{name: "native", run: w.consume(vstreamdBin, consumerBin, "binlog", w.binlogFrom, procTable, w.binlogRows)},
		{name: "vtgate", run: w.consume(vstreamdBin, vtgateConsumerBin, "binlog", w.binlogFrom, procTable, w.binlogRows)},
	}, func(bin, name string) *procReader {
		return &procReader{name: name, run: w.consume(bin, consumerFor(name), "binlog", w.binlogFrom, procTable, w.binlogRows)}
	})
}

// benchCopy: the copy table read by the anchor in key chunks, and copied through vstreamd by
// each consumer from an empty position until the copy completed.
func (w *procWorkload) benchCopy(b *testing.B) {
	anchor := func(b *testing.B) procRun {
		p := startProc(b, chunkReaderBin, "--addr", w.db.Addr(), "--user", w.db.User(), "--password", w.db.Password(),
			"--database", procKeyspace, "--table", procCopy, "--chunk-rows", "10000", "--rows", strconv.Itoa(w.copyRows))
		p.wait(b)
		return procRun{elapsed: p.elapsed, client: p.cpu}
	}
	w.rounds(b, "copy", w.copyRows, []*procReader{
		{name: "anchor", run: anchor},
		{name: "native", run: w.consume(vstreamdBin, consumerBin, "copy", "", procCopy, w.copyRows)},
		{name: "vtgate", run: w.consume(vstreamdBin, vtgateConsumerBin, "copy", "", procCopy, w.copyRows)},
	}, func(bin, name string) *procReader {
		return &procReader{name: name, run: w.consume(bin, consumerFor(name), "copy", "", procCopy, w.copyRows)}
	})
}

// consumerFor is the consumer of a reader named native... or vtgate...
func consumerFor(name string) string {
	if strings.HasPrefix(name, "vtgate") {
		return vtgateConsumerBin
	}
	return consumerBin
}

// consume is a run of consumer bin in mode against a vstreamd (the binary server) started for
// it: the consumer's time from its start to its exit, its CPU, and vstreamd's CPU over that
// time.
func (w *procWorkload) consume(server, bin, mode, gtid, table string, rows int) func(b *testing.B) procRun {
	return func(b *testing.B) procRun {
		phase := "process-" + mode + "-" + filepath.Base(bin)
		if server != vstreamdBin {
			phase += "-before"
		}
		d := startVstreamdBin(b, server, w.db, procKeyspace, phase)
		defer d.stop(b)
		v0 := d.cpu(b)
		p := startProc(b, bin, append(clientProfile(phase), "--addr", d.Addr, "--mode", mode, "--gtid", gtid, "--table", table,
			"--keyspace", procKeyspace, "--rows", strconv.Itoa(rows))...)
		lines := p.wait(b)
		run := procRun{elapsed: p.elapsed, client: p.cpu, vstreamd: d.cpu(b) - v0}
		if _, err := fmt.Sscanf(lines[len(lines)-1], "done %d %d %d", new(int), &run.responses, &run.events); err != nil {
			b.Fatalf("%s: %q: %v", filepath.Base(bin), lines[len(lines)-1], err)
		}
		return run
	}
}

// clientProfile is the consumer's flag for a CPU profile of phase beside vstreamd's, in
// <-bench.cpuprofile>/<phase>-client.pprof; none without -bench.cpuprofile.
func clientProfile(phase string) []string {
	if *cpuProfileDir == "" {
		return nil
	}
	return []string{"--cpuprofile", filepath.Join(*cpuProfileDir, phase+"-client.pprof")}
}

// proc is a benchmark process: a consumer or an anchor, its stdout read line by line.
type proc struct {
	cmd    *exec.Cmd
	out    *bufio.Scanner
	stderr bytes.Buffer
	start  time.Time
	// kill ends a process that hangs (a stream that never ends): it fails the benchmark
	// rather than stop it.
	kill *time.Timer
	// elapsed and cpu are known once wait returned: start to exit, and user and system time.
	elapsed, cpu time.Duration
}

func startProc(b *testing.B, bin string, args ...string) *proc {
	p := &proc{cmd: exec.Command(bin, args...)}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	p.out = bufio.NewScanner(out)
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.kill = time.AfterFunc(5*time.Minute, func() { _ = p.cmd.Process.Kill() })
	return p
}

// line is the process's next line of output.
func (p *proc) line(b *testing.B) string {
	if !p.out.Scan() {
		err := p.out.Err()
		if err == nil {
			err = io.EOF
		}
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		b.Fatalf("%s: %v: %s", filepath.Base(p.cmd.Path), err, p.stderr.Bytes())
	}
	return p.out.Text()
}

// wait reads the process's lines to the end, waits for it to exit and returns the lines; it
// fails the benchmark unless the process succeeded.
func (p *proc) wait(b *testing.B) []string {
	var lines []string
	for p.out.Scan() {
		lines = append(lines, p.out.Text())
	}
	err := p.cmd.Wait()
	p.elapsed = time.Since(p.start)
	p.kill.Stop()
	if err != nil {
		b.Fatalf("%s: %v: %s", filepath.Base(p.cmd.Path), err, p.stderr.Bytes())
	}
	p.cpu = p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "done ") {
		b.Fatalf("%s ended without its done line: %q", filepath.Base(p.cmd.Path), lines)
	}
	return lines
}

// latencySide is one consumer's latency run: each row's time from its COMMIT returning to the
// writer to its arrival at the consumer, and at the anchor beside it.
type latencySide struct {
	consumer, anchor []time.Duration
	txns             int
	// CPU over the run: vstreamd's, the consumer's, and a bench/binlogreader process reading
	// the same binlog beside them (the floor of a reader process's cost, as the in-process
	// anchor's cannot be told apart from the writer's).
	vstreamd, client, reader time.Duration
	// p50s and p99s are each run's p50 less the anchor's and p99 over the anchor's, for
	// their spread.
	p50s, p99s []float64
}

// spread is the lowest and the highest of figures taken round by round.
func spread(v []float64) (lo, hi float64) {
	return slices.Min(v), slices.Max(v)
}

// benchLatency runs the writer once per consumer, the anchor reading beside each.
func (w *procWorkload) benchLatency(b *testing.B) {
	sides := map[string]*latencySide{"native": {}, "vtgate": {}}
	names := []string{"native", "vtgate"}
	if *procCompare != "" {
		sides["native-before"], sides["vtgate-before"] = &latencySide{}, &latencySide{}
		names = append(names, "native-before", "vtgate-before")
	}
	// hops are the floor under one more process on the row's way (see hopRun).
	var hops []time.Duration
	for i := 0; i < b.N; i++ {
		for k := range names {
			name := names[(i+k)%len(names)]
			server := vstreamdBin
			if strings.HasSuffix(name, "-before") {
				server = *procCompare
			}
			r := w.latencyRun(b, server, consumerFor(name))
			s := sides[name]
			s.consumer = append(s.consumer, r.consumer...)
			s.anchor = append(s.anchor, r.anchor...)
			s.txns += r.txns
			s.vstreamd += r.vstreamd
			s.client += r.client
			s.reader += r.reader
			s.p50s = append(s.p50s, ms(pct(r.consumer, 0.50))-ms(pct(r.anchor, 0.50)))
			s.p99s = append(s.p99s, ms(pct(r.consumer, 0.99))/ms(pct(r.anchor, 0.99)))
		}
		hops = append(hops, hopRun(b, hopSamples)...)
	}
	slices.Sort(hops)
	hp50, hp99 := pct(hops, 0.50), pct(hops, 0.99)
	b.ReportMetric(ms(hp50), "hop-p50-ms")
	b.ReportMetric(ms(hp99), "hop-p99-ms")
	var anchor []time.Duration
	for _, s := range sides {
		anchor = append(anchor, s.anchor...)
	}
	ap50, ap99 := pct(anchor, 0.50), pct(anchor, 0.99)
	b.ReportMetric(ms(ap50), "anchor-p50-ms")
	b.ReportMetric(ms(ap99), "anchor-p99-ms")
	line := fmt.Sprintf("process latency on %s, %d transactions/s: anchor p50 %.3fms p99 %.3fms; a process hop p50 %.3fms p99 %.3fms",
		serverName(w.db), *procTPS, ms(ap50), ms(ap99), ms(hp50), ms(hp99))
	for _, name := range names {
		s := sides[name]
		p50, p99 := pct(s.consumer, 0.50), pct(s.consumer, 0.99)
		perTxn := func(d time.Duration) float64 { return ms(d) / float64(s.txns) }
		b.ReportMetric(ms(p50), name+"-p50-ms")
		b.ReportMetric(ms(p99), name+"-p99-ms")
		b.ReportMetric(ms(p50)-ms(ap50), name+"-p50-diff-ms")
		b.ReportMetric(ms(p99)/ms(ap99), name+"-p99/anchor")
		p50lo, p50hi := spread(s.p50s)
		p99lo, p99hi := spread(s.p99s)
		b.ReportMetric(p50lo, name+"-p50-diff-ms-lowest")
		b.ReportMetric(p50hi, name+"-p50-diff-ms-highest")
		b.ReportMetric(p99lo, name+"-p99/anchor-lowest")
		b.ReportMetric(p99hi, name+"-p99/anchor-highest")
		b.ReportMetric(perTxn(s.vstreamd), name+"-vstreamd-cpu-ms/txn")
		b.ReportMetric(perTxn(s.client), name+"-client-cpu-ms/txn")
		b.ReportMetric(perTxn(s.reader), name+"-binlogreader-cpu-ms/txn")
		line += fmt.Sprintf("; %s p50 %.3fms p99 %.3fms (p50 +%.3fms, runs +%.3f-%.3f; p99 %.2fx, runs %.2f-%.2fx; CPU ms/txn: vstreamd %.3f, client %.3f, a go-mysql reader process %.3f)",
			name, ms(p50), ms(p99), ms(p50)-ms(ap50), p50lo, p50hi, ms(p99)/ms(ap99), p99lo, p99hi, perTxn(s.vstreamd), perTxn(s.client), perTxn(s.reader))
	}
	fmt.Println(line)
}

// latencyRun starts vstreamd (the binary server), the consumer bin and the in-process anchor
// at the binlog's head, waits until both have the warm-up row, then commits single-row INSERTs
// at -process.tps for -process.latency and waits until both have every row.
func (w *procWorkload) latencyRun(b *testing.B, server, bin string) latencySide {
	txns := int(int64(*procTPS) * int64(*procLatency) / int64(time.Second))
	pos, err := binlogPos(w.db)
	if err != nil {
		b.Fatal(err)
	}
	warm := w.nextID.Add(1)
	if err := w.db.Exec(fmt.Sprintf("INSERT INTO %s.%s VALUES (%d, 'warm-up', 1.25, 'a note')", procKeyspace, procLatTable, warm)); err != nil {
		b.Fatal(err)
	}
	first := warm + 1
	w.nextID.Add(int64(txns))

	phase := "process-latency-" + filepath.Base(bin)
	if server != vstreamdBin {
		phase += "-before"
	}
	d := startVstreamdBin(b, server, w.db, procKeyspace, phase)
	// Stopped last: it ends the binlog dumps left on the source, the anchors' too.
	defer d.stop(b)

	// The anchor: go-mysql in this process, the writer's, from the same position.
	arrived := make([]atomic.Int64, txns)
	var got atomic.Int64
	anchorWarm := make(chan struct{})
	cfg := replicaConfig(w.db, 2000000004)
	cfg.TimestampStringLocation = time.UTC
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	st, err := syncer.StartSyncGTID(syncSet(pos))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var anchorErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		warmed := false
		for {
			ev, err := st.GetEvent(ctx)
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					anchorErr.Store(err)
				}
				return
			}
			now := time.Now().UnixNano()
			re, ok := ev.Event.(*replication.RowsEvent)
			if !ok || string(re.Table.Table) != procLatTable {
				continue
			}
			for _, row := range re.Rows {
				id, _ := row[0].(int64)
				if id == warm && !warmed {
					warmed = true
					close(anchorWarm)
				}
				if k := id - first; k >= 0 && k < int64(txns) {
					arrived[k].Store(now)
					got.Add(1)
				}
			}
		}
	}()
	defer func() { cancel(); <-done }()

	p := startProc(b, bin, append(clientProfile(phase), "--addr", d.Addr, "--mode", "latency", "--gtid", pos.String(), "--table", procLatTable,
		"--keyspace", procKeyspace, "--rows", strconv.Itoa(txns))...)
	if l := p.line(b); l != "ready" {
		b.Fatalf("consumer said %q before it was ready", l)
	}
	select {
	case <-anchorWarm:
	case <-time.After(time.Minute):
		b.Fatalf("the anchor did not receive the warm-up row in a minute: %v", anchorErr.Load())
	}
	reader := startProcBinlogReader(b, w.db, pos.Normalized().GTIDSet.String())
	defer reader.stop()

	v0, c0, r0 := d.cpu(b), procCPU(b, p.cmd.Process.Pid), procCPU(b, reader.cmd.Process.Pid)
	committed := w.writeLatency(b, first, txns)
	lines := p.wait(b)
	for deadline := time.Now().Add(time.Minute); got.Load() < int64(txns); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("in a minute the anchor received %d of %d rows: %v", got.Load(), txns, anchorErr.Load())
		}
	}
	// The consumer has exited: its CPU is all in its ProcessState.
	side := latencySide{txns: txns, vstreamd: d.cpu(b) - v0, client: p.cpu - c0, reader: procCPU(b, reader.cmd.Process.Pid) - r0}
	// A row that arrives before its COMMIT returned to the writer has waited for nothing the
	// user could see: it counts as 0.
	since := func(k int, at int64) time.Duration { return max(0, time.Duration(at-committed[k])) }
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "sample" {
			continue
		}
		id, err1 := strconv.ParseInt(f[1], 10, 64)
		at, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil || id < first || id >= first+int64(txns) {
			b.Fatalf("consumer line %q: %v", l, err)
		}
		side.consumer = append(side.consumer, since(int(id-first), at))
	}
	if len(side.consumer) != txns {
		b.Fatalf("the consumer received %d of %d rows", len(side.consumer), txns)
	}
	for k := range arrived {
		side.anchor = append(side.anchor, since(k, arrived[k].Load()))
	}
	slices.Sort(side.anchor)
	return side
}

// hopSamples is how many messages hopRun writes per round: a few seconds at the writer's rate.
const hopSamples = 1500

// hopRun measures the floor under the latency of a consumer that is a process of its own: it
// writes n timestamps, at the latency writer's rate, from this process to a bench/hop process
// over loopback TCP, and returns how long after its writing each was read there. A row
// reaches the anchor, a reader in the writer's own process, over one such hop (from the
// server) while its COMMIT returns over another; it reaches a consumer over one more, from
// vstreamd. The consumer's p50 over the anchor's can therefore not be below the hop's p50,
// whatever vstreamd does.
func hopRun(b *testing.B, n int) []time.Duration {
	p := startProc(b, hopBin)
	l := p.line(b)
	addr, ok := strings.CutPrefix(l, "listening ")
	if !ok {
		b.Fatalf("hop said %q before it listened", l)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	interval := time.Second / time.Duration(*procTPS)
	start := time.Now()
	var msg [8]byte
	for k := range n {
		time.Sleep(time.Until(start.Add(time.Duration(k) * interval)))
		binary.LittleEndian.PutUint64(msg[:], uint64(time.Now().UnixNano()))
		if _, err := c.Write(msg[:]); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	var hops []time.Duration
	lines := p.wait(b)
	for _, l := range lines[:len(lines)-1] {
		d, ok := strings.CutPrefix(l, "d ")
		ns, err := strconv.ParseInt(d, 10, 64)
		if !ok || err != nil {
			b.Fatalf("hop line %q", l)
		}
		hops = append(hops, time.Duration(ns))
	}
	if len(hops) != n {
		b.Fatalf("hop read %d of %d messages", len(hops), n)
	}
	return hops
}

// writeLatency commits txns single-row INSERTs with go-sql-driver at -process.tps, ids from
// first on, on a few connections that take the transactions in turn (so that a slow commit
// delays the ones after it less), and returns when each one's COMMIT returned (unix nanos, by
// id - first).
func (w *procWorkload) writeLatency(b *testing.B, first int64, txns int) []int64 {
	const writers = 4
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", w.db.Addr(), w.db.User(), w.db.Password(), procKeyspace
	// Statements go as text with their values in them, not as prepared statements: one round
	// trip per INSERT.
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sdb := sql.OpenDB(conn)
	defer sdb.Close()
	sdb.SetMaxOpenConns(writers)
	sdb.SetMaxIdleConns(writers)
	committed := make([]int64, txns)
	interval := time.Second / time.Duration(*procTPS)
	var next atomic.Int64
	var wg sync.WaitGroup
	werr := make(chan error, writers)
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				k := next.Add(1) - 1
				if k >= int64(txns) {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(k) * interval)))
				if _, err := sdb.Exec("INSERT INTO "+procLatTable+" VALUES (?, 'latency', 1.25, 'a note')", first+k); err != nil {
					werr <- err
					return
				}
				committed[k] = time.Now().UnixNano()
			}
		})
	}
	wg.Wait()
	close(werr)
	if err := <-werr; err != nil {
		b.Fatal(err)
	}
	return committed
}

// startProcBinlogReader starts bench/binlogreader on db after gtid, reading until stopped, and
// returns once its dump is open.
func startProcBinlogReader(b *testing.B, db *testdb.Server, gtid string) *binlogReader {
	cmd := exec.Command(readerBin, "--host", db.Host(), "--port", strconv.Itoa(db.Port()),
		"--user", db.User(), "--password", db.Password(), "--flavor", string(db.Flavor()), "--gtid", gtid)
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
