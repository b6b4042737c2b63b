package bench

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/procstat"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// bigTxnMiB is the size of BenchmarkBigTransaction's transaction: rows of 1 KiB of text.
var bigTxnMiB = flag.Int("bigtxn.mib", 1024, "MiB of row values BenchmarkBigTransaction inserts in one transaction")

var (
	bigTxnOnce     sync.Once
	bigTxnDB       *testdb.Server
	bigTxnSetupErr error
)

// setupBigTxn starts the big-transaction benchmark's database server with its table and builds
// vstreamd. The server's buffer pool and redo log are larger than the other benchmarks' so
// that the insert does not take minutes.
func setupBigTxn(b *testing.B) {
	bigTxnOnce.Do(func() {
		if bigTxnSetupErr = buildVstreamd(); bigTxnSetupErr != nil {
			return
		}
		bigTxnDB, bigTxnSetupErr = testdb.Start(testdb.Options{Database: "big",
			ExtraArgs:   []string{"--innodb-buffer-pool-size=256M"},
			MariaDBArgs: []string{"--innodb-log-file-size=256M"},
			MySQLArgs:   []string{"--innodb-redo-log-capacity=256M"}})
		if bigTxnSetupErr != nil {
			return
		}
		bigTxnSetupErr = bigTxnDB.Exec(`CREATE TABLE big (id BIGINT PRIMARY KEY, note TEXT)`)
	})
	if bigTxnSetupErr != nil {
		b.Fatal(bigTxnSetupErr)
	}
}

func closeBigTxn() {
	if bigTxnDB != nil {
		bigTxnDB.Close()
	}
}

// BenchmarkBigTransaction commits one transaction of -bigtxn.mib MiB (rows of 1 KiB of text)
// and streams it to one client of a vstreamd process of its own, which counts the rows and
// keeps none. It reports vstreamd's peak resident memory (VmHWM) beside its resident memory
// with the stream open before the transaction (the anchor) and the transaction's size, the
// rate the rows arrived at, and vstreamd's CPU. It asserts nothing.
func BenchmarkBigTransaction(b *testing.B) {
	setupBigTxn(b)
	rows := *bigTxnMiB << 10
	b.ResetTimer()
	var peak, idle int64
	var wall, cpu time.Duration
	for i := range b.N {
		r := runBigTxn(b, rows, fmt.Sprintf("bigtxn-%d", i))
		peak, idle = max(peak, r.peak), max(idle, r.idle)
		wall += r.wall
		cpu += r.cpu
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	size := float64(*bigTxnMiB)
	rate := size * float64(b.N) / wall.Seconds()
	b.ReportMetric(mib(peak), "peak-RSS-MiB")
	b.ReportMetric(mib(idle), "idle-RSS-MiB")
	b.ReportMetric(mib(peak)/size, "peak-RSS/txn-size")
	b.ReportMetric(rate, "MiB/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	fmt.Printf("big transaction: %d MiB in one transaction (%d rows of 1 KiB) streamed at %.1f MiB/s after its commit; vstreamd peak RSS %.1f MiB (%.1f MiB with the stream open before it, %.3f of the transaction's size), CPU %.1fs\n",
		*bigTxnMiB, rows, rate, mib(peak), mib(idle), mib(peak)/size, cpu.Seconds()/float64(b.N))
}

type bigTxnRun struct {
	peak, idle int64
	wall, cpu  time.Duration
}

// runBigTxn opens the stream, commits the transaction and waits for its rows, timed from
// the commit.
func runBigTxn(b *testing.B, rows int, phase string) bigTxnRun {
	conn, err := bigTxnDB.Conn("big")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Execute("TRUNCATE TABLE big"); err != nil {
		b.Fatal(err)
	}
	pos, err := binlogPos(bigTxnDB)
	if err != nil {
		b.Fatal(err)
	}
	d := startVstreamdOn(b, bigTxnDB, "big", phase)
	defer d.stop(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc, err := grpc.NewClient(d.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	st, err := startStream(ctx, cc, pos.String(), "big")
	if err != nil {
		b.Fatal(err)
	}
	// The stream runs once a warm-up row has come through it.
	if _, err := conn.Execute("INSERT INTO big VALUES (0, 'warm-up')"); err != nil {
		b.Fatal(err)
	}
	for warm := false; !warm; {
		resp, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range resp.Events {
			warm = warm || ev.Type == binlogdata.VEventType_ROW
		}
	}
	idle, err := procstat.Memory(d.Pid(), "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	received := make(chan error, 1)
	go func() {
		n := 0
		for n < rows {
			resp, err := st.Recv()
			if err != nil {
				received <- fmt.Errorf("after %d of %d rows: %w", n, rows, err)
				return
			}
			for _, ev := range resp.Events {
				if ev.Type == binlogdata.VEventType_ROW {
					n += len(ev.RowEvent.RowChanges)
				}
			}
		}
		received <- nil
	}()
	// vstreamd is idle while the server inserts: the transaction reaches the binlog at its commit.
	cpu0 := d.cpu(b)
	if _, err := conn.Execute(fmt.Sprintf("INSERT INTO big SELECT seq, REPEAT(CHAR(97 + seq %% 26), 1024) FROM %s", bigTxnDB.Seq(rows))); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := <-received; err != nil {
		b.Fatal(err)
	}
	return bigTxnRun{peak: d.peakRSS(b), idle: idle, wall: time.Since(start), cpu: d.cpu(b) - cpu0}
}
