package bench

import (
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

const copyRows = 1000000

var (
	copyOnce sync.Once
	// copyDB is a server of its own, so that the copy's table and load do not touch the
	// binlog benchmark's server.
	copyDB       *testdb.Server
	copySetupErr error
)

func setupCopy(b *testing.B) {
	copyOnce.Do(func() {
		copyDB, copySetupErr = testdb.Start(testdb.Options{Database: "bench"})
		if copySetupErr != nil {
			return
		}
		setupErr := copyDB.Exec(`CREATE TABLE copysrc (
			id BIGINT PRIMARY KEY, customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE,
			status ENUM('new','paid','shipped'), created DATETIME(3), updated TIMESTAMP(3) NULL,
			note VARCHAR(255), flags BIT(8))`)
		for i := 0; i < copyRows && setupErr == nil; i += 100000 {
			setupErr = copyDB.Exec(fmt.Sprintf(`INSERT INTO copysrc SELECT seq, CONCAT('customer-', seq), seq * 1.25, seq %% 17, seq / 3.0,
				ELT(1 + seq %% 3, 'new', 'paid', 'shipped'), '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678',
				'a note of modest length for each order', seq %% 256 FROM seq_%d_to_%d`, i+1, i+100000))
		}
		copySetupErr = setupErr
	})
	if copySetupErr != nil {
		b.Fatal(copySetupErr)
	}
}

// BenchmarkCopy copies a 1,000,000-row table through vstreamd to a gRPC client on loopback,
// beside mariadb-dump --quick of the same table to /dev/null, and prints the ratio.
func BenchmarkCopy(b *testing.B) {
	setupCopy(b)
	// The copy's server goes away with its benchmark: its background work (flushing a million
	// rows) must not weigh on the benchmarks after it.
	b.Cleanup(func() {
		copyDB.Close()
		copyDB = nil
	})
	var dumpRate, copyRate float64
	b.Run("mariadb-dump", func(b *testing.B) {
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			cmd := exec.Command("mariadb-dump", "--quick", "--skip-lock-tables", "--single-transaction",
				"-h", copyDB.Host(), "-P", strconv.Itoa(copyDB.Port()), "-u", copyDB.User(), "-p"+copyDB.Password(), "bench", "copysrc")
			if out, err := cmd.CombinedOutput(); err != nil && len(out) > 0 && cmd.ProcessState.ExitCode() != 0 {
				b.Fatalf("mariadb-dump: %v", err)
			}
			elapsed += time.Since(start)
		}
		dumpRate = float64(copyRows*b.N) / elapsed.Seconds()
		b.ReportMetric(dumpRate, "rows/s")
	})
	b.Run("vstreamd-copy", func(b *testing.B) {
		var elapsed time.Duration
		var bytes int64
		for i := 0; i < b.N; i++ {
			d, n := copyThroughServer(b)
			elapsed += d
			bytes += n
		}
		copyRate = float64(copyRows*b.N) / elapsed.Seconds()
		b.ReportMetric(copyRate, "rows/s")
		b.ReportMetric(float64(bytes)/elapsed.Seconds()/1e6, "MB/s")
	})
	if dumpRate > 0 && copyRate > 0 {
		fmt.Printf("copy: mariadb-dump --quick %.0f rows/s, vstreamd copy to gRPC client %.0f rows/s, ratio %.2f\n",
			dumpRate, copyRate, copyRate/dumpRate)
	}
}

// copyThroughServer copies the table and returns the time and the bytes of row values received.
func copyThroughServer(b *testing.B) (time.Duration, int64) {
	defer profilePhase(b, "copy")()
	start := time.Now()
	st, stop := openStream(b, copyDB, "", "copysrc")
	defer stop()
	rows := 0
	var bytes int64
	for {
		resp, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range resp.Events {
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				rows += len(ev.RowEvent.RowChanges)
				for _, rc := range ev.RowEvent.RowChanges {
					bytes += int64(len(rc.After.Values))
				}
			case binlogdata.VEventType_COPY_COMPLETED:
				if ev.Keyspace == "" {
					if rows != copyRows {
						b.Fatalf("copied %d rows, want %d", rows, copyRows)
					}
					return time.Since(start), bytes
				}
			}
		}
	}
}
