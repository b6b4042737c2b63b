// Command binlogreader is an anchor of the latency and process benchmarks: the least a binlog
// consumer process does, read a MariaDB or MySQL binlog from a GTID position with go-mysql's
// BinlogSyncer and decode every event, sending nothing on. BenchmarkLatency runs it as a process
// of its own beside vstreamd and reads its CPU per transaction from /proc, the floor under
// vstreamd's. BenchmarkProcess/binlog runs it with --rows and times it from start to exit: it
// then stops once it has decoded that many row changes of --table.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func main() {
	host := flag.String("host", "127.0.0.1", "server host")
	port := flag.Int("port", 3306, "server port")
	user := flag.String("user", "root", "user")
	password := flag.String("password", "", "password")
	flavor := flag.String("flavor", mysql.MariaDBFlavor, "the server's flavor, "+mysql.MariaDBFlavor+" or "+mysql.MySQLFlavor)
	gtid := flag.String("gtid", "", "GTID set to read after, in the flavor's form (0-1-5, or <uuid>:1-5)")
	rows := flag.Int("rows", 0, "exit after decoding this many row changes of --table (0: read until signalled)")
	table := flag.String("table", "", "the table whose row changes --rows counts")
	flag.Parse()
	if err := run(*host, uint16(*port), *user, *password, *flavor, *gtid, *table, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "binlogreader:", err)
		os.Exit(1)
	}
}

func run(host string, port uint16, user, password, flavor, gtid, table string, rows int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	set, err := mysql.ParseGTIDSet(flavor, gtid)
	if err != nil {
		return fmt.Errorf("gtid %q: %w", gtid, err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 2000000003, Flavor: flavor, Host: host, Port: port, User: user, Password: password,
		TimestampStringLocation: time.UTC, DisableRetrySync: true, Logger: slog.New(slog.DiscardHandler),
	})
	defer syncer.Close()
	st, err := syncer.StartSyncGTID(set)
	if err != nil {
		return err
	}
	// Ready once the dump is open: the benchmark waits for this line before it writes.
	fmt.Println("reading")
	seen := 0
	for rows == 0 || seen < rows {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Table) == table {
			seen += changes(ev.Header.EventType, re)
		}
	}
	fmt.Printf("done %d\n", seen)
	return nil
}

// changes is how many row changes a rows event holds: go-mysql lists an UPDATE's before and
// after images one after the other, two rows per change.
func changes(t replication.EventType, re *replication.RowsEvent) int {
	switch t {
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		return len(re.Rows) / 2
	default:
		// Inserts and deletes: one row a change.
		return len(re.Rows)
	}
}
