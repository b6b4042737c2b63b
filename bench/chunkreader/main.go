// Command chunkreader is the copy anchor of the process benchmarks (bench/process_test.go): what
// an application copying a table itself would write, go-sql-driver reading it on one connection
// in --chunk-row primary-key chunks (SELECT ... WHERE id > last ORDER BY id LIMIT n), every value
// scanned into sql.RawBytes, no conversion. The benchmark times it from process start to exit,
// as it times a vstreamd consumer copying the same table.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3306", "server host:port")
	user := flag.String("user", "root", "user")
	password := flag.String("password", "", "password")
	database := flag.String("database", "", "database")
	table := flag.String("table", "", "table to read; its first column is its BIGINT primary key")
	chunk := flag.Int("chunk-rows", 10000, "rows per SELECT")
	want := flag.Int("rows", 0, "rows the table holds (checked)")
	flag.Parse()
	if err := run(*addr, *user, *password, *database, *table, *chunk, *want); err != nil {
		fmt.Fprintln(os.Stderr, "chunkreader:", err)
		os.Exit(1)
	}
}

func run(addr, user, password, database, table string, chunk, want int) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", addr, user, password, database
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	// Only read from: nothing is lost if closing fails.
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	// With the driver's defaults a query with arguments is a prepared statement: the rows come
	// in the binary protocol, as an application's would.
	q := fmt.Sprintf("SELECT * FROM `%s` WHERE id > ? ORDER BY id LIMIT ?", table)
	rows, last := 0, int64(0)
	for {
		n, lastID, err := readChunk(db, q, last, chunk)
		if err != nil {
			return err
		}
		rows += n
		if n < chunk {
			break
		}
		last = lastID
	}
	if rows != want {
		return fmt.Errorf("read %d rows, want %d", rows, want)
	}
	fmt.Printf("done %d\n", rows)
	return nil
}

// readChunk reads the chunk after key last and returns its rows and its last key.
func readChunk(db *sql.DB, q string, last int64, chunk int) (int, int64, error) {
	rs, err := db.Query(q, last, chunk)
	if err != nil {
		return 0, 0, err
	}
	// rs.Err, returned below, has the read's error; closing after it adds nothing.
	defer func() { _ = rs.Close() }()
	cols, err := rs.Columns()
	if err != nil {
		return 0, 0, err
	}
	vals := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	n := 0
	for rs.Next() {
		if err = rs.Scan(dest...); err != nil {
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
