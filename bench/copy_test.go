package bench

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

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
// beside two anchors reading the same table in the same run: mariadb-dump --quick to
// /dev/null, and a go-sql-driver client reading it in 10,000-row key chunks (what an
// application copying the table itself would write). It prints vstreamd's ratio to each.
func BenchmarkCopy(b *testing.B) {
	setupCopy(b)
	// The copy's server goes away with its benchmark: its background work (flushing a million
	// rows) must not weigh on the benchmarks after it.
	b.Cleanup(func() {
		copyDB.Close()
		copyDB = nil
	})
	var dumpRate, chunkRate, copyRate float64
	dbPid := dbPID(b, copyDB)
	b.Run("mariadb-dump", func(b *testing.B) {
		var elapsed time.Duration
		var cpu copyCPU
		for i := 0; i < b.N; i++ {
			start := time.Now()
			db := procCPU(b, dbPid)
			cmd := exec.Command("mariadb-dump", "--quick", "--skip-lock-tables", "--single-transaction",
				"-h", copyDB.Host(), "-P", strconv.Itoa(copyDB.Port()), "-u", copyDB.User(), "-p"+copyDB.Password(), "bench", "copysrc")
			if out, err := cmd.CombinedOutput(); err != nil && len(out) > 0 && cmd.ProcessState.ExitCode() != 0 {
				b.Fatalf("mariadb-dump: %v", err)
			}
			elapsed += time.Since(start)
			cpu.db += procCPU(b, dbPid) - db
			cpu.reader += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		dumpRate = float64(copyRows*b.N) / elapsed.Seconds()
		b.ReportMetric(dumpRate, "rows/s")
		cpu.report(b)
	})
	b.Run("go-sql-driver-chunks", func(b *testing.B) {
		var elapsed time.Duration
		var cpu copyCPU
		for i := 0; i < b.N; i++ {
			stop := cpu.start(b, dbPid)
			elapsed += readInChunks(b)
			stop()
		}
		chunkRate = float64(copyRows*b.N) / elapsed.Seconds()
		b.ReportMetric(chunkRate, "rows/s")
		cpu.report(b)
	})
	b.Run("vstreamd-copy", func(b *testing.B) {
		var elapsed time.Duration
		var bytes int64
		var cpu copyCPU
		for i := 0; i < b.N; i++ {
			stop := cpu.start(b, dbPid)
			d, n := copyThroughServer(b)
			stop()
			elapsed += d
			bytes += n
		}
		copyRate = float64(copyRows*b.N) / elapsed.Seconds()
		b.ReportMetric(copyRate, "rows/s")
		b.ReportMetric(float64(bytes)/elapsed.Seconds()/1e6, "MB/s")
		cpu.report(b)
	})
	if dumpRate > 0 && chunkRate > 0 && copyRate > 0 {
		fmt.Printf("copy: mariadb-dump --quick %.0f rows/s, go-sql-driver 10,000-row chunks %.0f rows/s, vstreamd copy to gRPC client %.0f rows/s, ratio %.2f to mariadb-dump, %.2f to go-sql-driver\n",
			dumpRate, chunkRate, copyRate, copyRate/dumpRate, copyRate/chunkRate)
	}
}

// copyCPU adds up the CPU time MariaDB and the reader used over a sub-benchmark's runs: on
// a shared machine the rate follows the share of the cores each side gets, while the CPU
// a row costs each side does not. For the two Go readers the reader is this process (for
// vstreamd-copy, the engine, the gRPC server and the gRPC client together).
type copyCPU struct {
	db, reader time.Duration
	runs       int
}

// start begins one run read in this process; the function it returns ends it.
func (c *copyCPU) start(b *testing.B, dbPid int) func() {
	db, self := procCPU(b, dbPid), procCPU(b, os.Getpid())
	return func() {
		c.db += procCPU(b, dbPid) - db
		c.reader += procCPU(b, os.Getpid()) - self
		c.runs++
	}
}

// report gives both as CPU seconds per million rows read.
func (c *copyCPU) report(b *testing.B) {
	rows := float64(copyRows*max(c.runs, b.N)) / 1e6
	b.ReportMetric(c.db.Seconds()/rows, "db-cpu-s/Mrows")
	b.ReportMetric(c.reader.Seconds()/rows, "reader-cpu-s/Mrows")
}

// chunkRows is the anchor client's chunk: rows per SELECT.
const chunkRows = 10000

// readInChunks reads the whole table with go-sql-driver on one connection, 10,000 rows per
// SELECT after the last key read, each row's values scanned as sql.RawBytes (no conversion),
// and returns the time it took. With the driver's defaults a query with arguments is a
// prepared statement, so the rows come in the binary protocol.
func readInChunks(b *testing.B) time.Duration {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", copyDB.Addr(), copyDB.User(), copyDB.Password(), "bench"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	start := time.Now()
	rows, last := 0, int64(0)
	for {
		n, lastID, err := readChunk(db, last)
		if err != nil {
			b.Fatal(err)
		}
		rows += n
		if n < chunkRows {
			break
		}
		last = lastID
	}
	if rows != copyRows {
		b.Fatalf("read %d rows, want %d", rows, copyRows)
	}
	return time.Since(start)
}

// readChunk reads the chunk after key last and returns its rows and its last key.
func readChunk(db *sql.DB, last int64) (int, int64, error) {
	rs, err := db.Query(`SELECT id, customer, amount, qty, price, status, created, updated, note, flags
		FROM copysrc WHERE id > ? ORDER BY id LIMIT ?`, last, chunkRows)
	if err != nil {
		return 0, 0, err
	}
	defer rs.Close()
	vals := make([]sql.RawBytes, 10)
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	n := 0
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return 0, 0, err
		}
		n++
		// The key is parsed from its text, as the client must to ask for the next chunk.
		if last, err = strconv.ParseInt(string(vals[0]), 10, 64); err != nil {
			return 0, 0, err
		}
	}
	return n, last, rs.Err()
}

// copyThroughServer copies the table and returns the time and the bytes of row values received.
func copyThroughServer(b *testing.B) (time.Duration, int64) {
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
