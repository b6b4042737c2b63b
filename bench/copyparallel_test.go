package bench

import (
	"database/sql"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// The parallel copy's data: parTables tables of parRows rows each, copysrc's columns.
const (
	parTables = 5
	parRows   = copyRows / parTables
)

// parallelism defaults to the machine's cores, two to five: on a machine whose cores are all
// busy, more tables at once only add to the work (their rows wait in memory longer).
var parallelism = flag.Int("copy.parallelism", min(max(runtime.NumCPU(), 2), parTables), "BenchmarkCopyParallel: tables vstreamd copies at once (default: the cores, 2 to 5)")

var (
	parOnce     sync.Once
	parDB       *testdb.Server
	parSetupErr error
)

func parTable(i int) string { return fmt.Sprintf("cpar_%d", i+1) }

func setupParallel(b *testing.B) {
	parOnce.Do(func() {
		parDB, parSetupErr = testdb.Start(testdb.Options{Database: "bench"})
		if parSetupErr != nil {
			return
		}
		for i := 0; i < parTables && parSetupErr == nil; i++ {
			parSetupErr = parDB.Exec(fmt.Sprintf(`CREATE TABLE %s (
				id BIGINT PRIMARY KEY, customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE,
				status ENUM('new','paid','shipped'), created DATETIME(3), updated TIMESTAMP(3) NULL,
				note VARCHAR(255), flags BIT(8))`, parTable(i)),
				fmt.Sprintf(`INSERT INTO %s SELECT seq, CONCAT('customer-', seq), seq * 1.25, seq %% 17, seq / 3.0,
				ELT(1 + seq %% 3, 'new', 'paid', 'shipped'), '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678',
				'a note of modest length for each order', seq %% 256 FROM %s`, parTable(i), seqRange(parDB, 1, parRows)))
		}
	})
	if parSetupErr != nil {
		b.Fatal(parSetupErr)
	}
}

// BenchmarkCopyParallel copies five tables of 200,000 rows each (1,000,000 in all, copysrc's
// columns) through vstreamd to a gRPC client on loopback, one table at a time and then
// -copy.parallelism tables at once, beside the anchor, a go-sql-driver client reading the
// same tables one after the other in 10,000-row key chunks on one connection, in the same
// run. It prints each copy's ratio to the anchor, by time and by CPU per row (the CPU of the
// database and of this process, which holds vstreamd, its gRPC server and the client).
//
// As in BenchmarkCopy each round reads the data once each way, the order turning from round
// to round, so that the readers meet the same changing load of a shared machine.
func BenchmarkCopyParallel(b *testing.B) {
	setupParallel(b)
	b.Cleanup(func() {
		parDB.Close()
		parDB = nil
	})
	dbPid := dbPID(b, parDB)
	var readers []*copyReader
	var rounds int
	b.Run("interleaved", func(b *testing.B) {
		readers = []*copyReader{
			{name: "chunks", read: inProcess(readTablesInChunks)},
			{name: "vstreamd-serial", read: inProcess(copyTablesThroughServer(1))},
			{name: "vstreamd-parallel", read: inProcess(copyTablesThroughServer(*parallelism))},
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
			mrows := float64(copyRows*b.N) / 1e6
			b.ReportMetric(r.rate(b.N), r.name+"-rows/s")
			b.ReportMetric(r.db.Seconds()/mrows, r.name+"-db-cpu-s/Mrows")
			b.ReportMetric(r.reader.Seconds()/mrows, r.name+"-reader-cpu-s/Mrows")
		}
		b.ReportMetric(readers[1].rate(b.N)/readers[0].rate(b.N), "serial/chunks")
		b.ReportMetric(readers[2].rate(b.N)/readers[0].rate(b.N), "parallel/chunks")
		b.ReportMetric(readers[0].cpu().Seconds()/readers[2].cpu().Seconds(), "parallel/chunks-by-cpu")
		rounds = b.N
	})
	if rounds > 0 {
		chunks, serial, par := readers[0].rate(rounds), readers[1].rate(rounds), readers[2].rate(rounds)
		fmt.Printf("copy of 5 tables: go-sql-driver 10,000-row chunks %.0f rows/s, vstreamd one table at a time %.0f rows/s (%.2fx), %d at once %.0f rows/s (%.2fx; %.2fx by CPU per row)\n",
			chunks, serial, serial/chunks, *parallelism, par, par/chunks, readers[0].cpu().Seconds()/readers[2].cpu().Seconds())
	}
}

// readTablesInChunks reads the five tables one after the other with go-sql-driver on one
// connection, as readInChunks reads copysrc, and returns the time it took.
func readTablesInChunks(b *testing.B) time.Duration {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", parDB.Addr(), parDB.User(), parDB.Password(), "bench"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	start := time.Now()
	rows := 0
	for i := 0; i < parTables; i++ {
		q := `SELECT id, customer, amount, qty, price, status, created, updated, note, flags
			FROM ` + parTable(i) + ` WHERE id > ? ORDER BY id LIMIT ?`
		last := int64(0)
		for {
			n, lastID, err := readChunkOf(db, q, last)
			if err != nil {
				b.Fatal(err)
			}
			rows += n
			if n < chunkRows {
				break
			}
			last = lastID
		}
	}
	if rows != copyRows {
		b.Fatalf("read %d rows, want %d", rows, copyRows)
	}
	return time.Since(start)
}

// readChunkOf is readChunk with the query given.
func readChunkOf(db *sql.DB, q string, last int64) (int, int64, error) {
	rs, err := db.Query(q, last, chunkRows)
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
		if last, err = strconv.ParseInt(string(vals[0]), 10, 64); err != nil {
			return 0, 0, err
		}
	}
	return n, last, rs.Err()
}

// copyTablesThroughServer copies the five tables through vstreamd, par of them at once, and
// returns the time it took.
func copyTablesThroughServer(par int) func(b *testing.B) time.Duration {
	return func(b *testing.B) time.Duration {
		defer profilePhase(b, fmt.Sprintf("copy-parallel-%d", par))()
		start := time.Now()
		st, stop := openStreamFlags(b, parDB, "", "/^cpar_", &vstreamv1.Flags{CopyParallelism: int32(par)})
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
}
