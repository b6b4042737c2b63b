package bench

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
				'a note of modest length for each order', seq %% 256 FROM %s`, seqRange(copyDB, i+1, i+100000)))
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
//
// Each round reads the table once each way, one after the other, the order turning from round
// to round: on a shared machine the load changes from second to second, and readers measured
// in rounds of their own would each meet a different load.
func BenchmarkCopy(b *testing.B) {
	setupCopy(b)
	// The copy's server goes away with its benchmark: its background work (flushing a million
	// rows) must not weigh on the benchmarks after it.
	b.Cleanup(func() {
		copyDB.Close()
		copyDB = nil
	})
	dbPid := dbPID(b, copyDB)
	dumpName := filepath.Base(dumpTool(copyDB))
	var readers []*copyReader
	var rounds int
	b.Run("interleaved", func(b *testing.B) {
		readers = []*copyReader{
			{name: "dump", read: dumpTable},
			{name: "chunks", read: inProcess(readInChunks)},
			{name: "vstreamd", read: inProcess(copyThroughServer)},
		}
		for i := 0; i < b.N; i++ {
			for k := range readers {
				r := readers[(i+k)%len(readers)]
				db := procCPU(b, dbPid)
				d, cpu := r.read(b)
				r.elapsed += d
				r.db += procCPU(b, dbPid) - db
				r.reader += cpu
			}
		}
		for _, r := range readers {
			rows := float64(copyRows*b.N) / 1e6
			b.ReportMetric(r.rate(b.N), r.name+"-rows/s")
			b.ReportMetric(r.db.Seconds()/rows, r.name+"-db-cpu-s/Mrows")
			b.ReportMetric(r.reader.Seconds()/rows, r.name+"-reader-cpu-s/Mrows")
		}
		b.ReportMetric(readers[2].rate(b.N)/readers[1].rate(b.N), "vstreamd/chunks")
		b.ReportMetric(readers[2].rate(b.N)/readers[0].rate(b.N), "vstreamd/dump")
		b.ReportMetric(readers[1].cpu().Seconds()/readers[2].cpu().Seconds(), "vstreamd/chunks-by-cpu")
		rounds = b.N
	})
	if rounds > 0 {
		dump, chunks, copied := readers[0].rate(rounds), readers[1].rate(rounds), readers[2].rate(rounds)
		fmt.Printf("copy: %s --quick %.0f rows/s, go-sql-driver 10,000-row chunks %.0f rows/s, vstreamd copy to gRPC client %.0f rows/s, ratio %.2f to %s, %.2f to go-sql-driver (%.2f by CPU per row)\n",
			dumpName, dump, chunks, copied, copied/dump, dumpName, copied/chunks, readers[1].cpu().Seconds()/readers[2].cpu().Seconds())
	}
}

// copyReader is one way of reading the whole table, and what its reads added up to: the time,
// and the CPU time of MariaDB and of the reader. On a shared machine a reader's rate follows
// the share of the cores it gets; the CPU a row costs each side does not.
type copyReader struct {
	name string
	// read reads the table once and returns the time it took and the reader's CPU time.
	read                func(b *testing.B) (time.Duration, time.Duration)
	elapsed, db, reader time.Duration
}

func (r *copyReader) rate(rounds int) float64 {
	return float64(copyRows*rounds) / r.elapsed.Seconds()
}

// cpu is the CPU time of MariaDB and the reader together. The ratio of two readers' is the
// ratio their rates would have where the cores are what limits them, as on a machine whose
// cores are all busy: unlike the rates, it does not follow the share of the cores each run
// happened to get.
func (r *copyReader) cpu() time.Duration { return r.db + r.reader }

// inProcess is a reader in this process, whose CPU time is the process's: for vstreamd, the
// engine, the gRPC server and the gRPC client together.
func inProcess(read func(b *testing.B) time.Duration) func(b *testing.B) (time.Duration, time.Duration) {
	return func(b *testing.B) (time.Duration, time.Duration) {
		self := procCPU(b, os.Getpid())
		d := read(b)
		return d, procCPU(b, os.Getpid()) - self
	}
}

// dumpTable runs mariadb-dump --quick (on MySQL, MySQL's own mysqldump) of the table to
// /dev/null: its output goes to the file itself, not through this process, whose CPU and heap
// would then count it.
func dumpTable(b *testing.B) (time.Duration, time.Duration) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	var stderr bytes.Buffer
	start := time.Now()
	cmd := exec.Command(dumpTool(copyDB), "--quick", "--skip-lock-tables", "--single-transaction",
		"-h", copyDB.Host(), "-P", strconv.Itoa(copyDB.Port()), "-u", copyDB.User(), "-p"+copyDB.Password(), "bench", "copysrc")
	cmd.Stdout, cmd.Stderr = devNull, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v: %s", cmd.Path, err, stderr.Bytes())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// dumpTool is the server's own dump client: MariaDB's from the system, MySQL's from the
// prefix scripts/install-mysql.sh unpacked it into (the system's mysqldump is MariaDB's).
func dumpTool(db *testdb.Server) string {
	if db.Flavor() == testdb.MySQL {
		return filepath.Join(testdb.MySQLPrefix(), "bin", "mysqldump")
	}
	return "mariadb-dump"
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

// copyThroughServer copies the table and returns the time it took.
func copyThroughServer(b *testing.B) time.Duration {
	defer profilePhase(b, "copy")()
	start := time.Now()
	st, stop := openStream(b, copyDB, "", "copysrc")
	defer stop()
	rows := 0
	for {
		resp, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range resp.Events {
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				rows += len(ev.RowEvent.RowChanges)
			case binlogdata.VEventType_COPY_COMPLETED:
				if ev.Keyspace == "" {
					if rows != copyRows {
						b.Fatalf("copied %d rows, want %d", rows, copyRows)
					}
					return time.Since(start)
				}
			}
		}
	}
}
