package applier

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// WorkloadKeys are the tables of the workload and their key columns: an integer primary key,
// a composite primary key, a unique key only, and a table of JSON documents.
var WorkloadKeys = map[string][]string{"cp_a": {"id"}, "cp_b": {"a", "b"}, "cp_c": {"code"}, "cp_j": {"id"}}

// SetupWorkload (re)creates the workload's tables in the server's default database and fills
// them.
func SetupWorkload(t testing.TB, db *testdb.Server) {
	t.Helper()
	if err := db.Exec(
		"DROP TABLE IF EXISTS cp_a, cp_b, cp_c, cp_j",
		"CREATE TABLE cp_a (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), created DATETIME, qty INT NOT NULL DEFAULT 0)",
		"CREATE TABLE cp_b (a INT NOT NULL, b INT NOT NULL, v VARCHAR(200), PRIMARY KEY (a, b))",
		"CREATE TABLE cp_c (code VARCHAR(20) NOT NULL, n BIGINT, UNIQUE KEY (code))",
		"CREATE TABLE cp_j (id INT PRIMARY KEY, doc JSON)",
		"INSERT INTO cp_a SELECT seq, CONCAT('name', seq), seq * 1.5, '2024-01-01 00:00:00' + INTERVAL seq MINUTE, 0 FROM "+db.Seq(300),
		"INSERT INTO cp_b SELECT seq % 50, seq, REPEAT('v', seq % 30) FROM "+db.Seq(200),
		"INSERT INTO cp_c SELECT CONCAT('k', LPAD(seq, 5, '0')), seq FROM "+db.Seq(250),
		"INSERT INTO cp_j SELECT seq, JSON_OBJECT('n', seq, 'name', CONCAT('j', seq), 'tags', JSON_ARRAY('a', seq)) FROM "+db.Seq(100),
	); err != nil {
		t.Fatal(err)
	}
}

// Writer changes the workload's tables until stopped: inserts, updates (of values and of
// keys) and deletes, each its own transaction, sometimes several tables in one. On MySQL it
// also writes what only MySQL logs: JSON updates as partial diffs
// (binlog_row_value_options=PARTIAL_JSON), and, transaction by transaction at random,
// compressed transactions (binlog_transaction_compression) and tagged GTIDs.
type Writer struct {
	stop chan struct{}
	done chan struct{}
}

// StartWriter starts a writer on its own connection to database; pause is the mean time
// between transactions.
func StartWriter(t testing.TB, db *testdb.Server, database string, seed uint64, pause time.Duration) *Writer {
	w := &Writer{stop: make(chan struct{}), done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, 7))
	go func() {
		defer close(w.done)
		mysql := db.Flavor() == testdb.MySQL
		conn, err := connect(db, database, mysql)
		next := 10000
		for {
			select {
			case <-w.stop:
				if conn != nil {
					_ = conn.Close() // the workload is over
				}
				return
			default:
			}
			if err != nil || conn == nil {
				// The server may be restarting: reconnect until it answers or we stop.
				time.Sleep(50 * time.Millisecond)
				conn, err = connect(db, database, mysql)
				continue
			}
			next++
			id := rng.IntN(400) + 1
			stmts := [][]string{
				{fmt.Sprintf("INSERT INTO cp_a VALUES (%d, 'w%d', %d.25, NOW(), 0)", next, next, next%100)},
				{fmt.Sprintf("UPDATE cp_a SET name = CONCAT(name, 'u'), amount = amount + 1 WHERE id = %d", id)},
				{fmt.Sprintf("UPDATE cp_a SET id = id + 100000 WHERE id = %d", id)},
				{fmt.Sprintf("DELETE FROM cp_a WHERE id = %d", id+1)},
				{fmt.Sprintf("INSERT INTO cp_b VALUES (%d, %d, 'n')", next%50, next)},
				{fmt.Sprintf("UPDATE cp_b SET v = CONCAT(v, 'x') WHERE a = %d", id%50)},
				{fmt.Sprintf("DELETE FROM cp_b WHERE a = %d AND b = %d", id%50, id)},
				{fmt.Sprintf("INSERT INTO cp_c VALUES ('k%05d', %d)", next, next)},
				{fmt.Sprintf("UPDATE cp_c SET n = n + 1 WHERE code = 'k%05d'", id)},
				{fmt.Sprintf("UPDATE cp_c SET code = CONCAT(code, 'z') WHERE code = 'k%05d'", id)},
				{"BEGIN", fmt.Sprintf("UPDATE cp_a SET qty = qty + 1 WHERE id = %d", id), fmt.Sprintf("UPDATE cp_b SET v = 'tx' WHERE a = %d", id%50), fmt.Sprintf("DELETE FROM cp_c WHERE code = 'k%05d'", id+2), "COMMIT"},
				{fmt.Sprintf("UPDATE cp_j SET doc = JSON_SET(doc, '$.w', %d, '$.tags[1]', 'b') WHERE id = %d", next, id%120)},
				{fmt.Sprintf("UPDATE cp_j SET doc = JSON_REPLACE(JSON_REMOVE(doc, '$.w'), '$.name', 'r%d') WHERE id = %d", next, id%120)},
				{fmt.Sprintf("INSERT INTO cp_j VALUES (%d, JSON_OBJECT('n', %d, 'name', 'new'))", next%20+100, next)},
				{fmt.Sprintf("DELETE FROM cp_j WHERE id = %d", id%120+1)},
			}
			todo := stmts[rng.IntN(len(stmts))]
			if mysql {
				todo = append(mysqlSession(rng), todo...)
			}
			for _, q := range todo {
				if _, qerr := conn.Execute(q); qerr != nil && !strings.Contains(qerr.Error(), "Duplicate entry") {
					_ = conn.Close() // broken or not, it is replaced by a new connection
					conn, err = nil, qerr
					break
				}
			}
			time.Sleep(time.Duration(rng.Int64N(int64(2 * pause))))
		}
	}()
	return w
}

// connect opens the writer's connection; on MySQL its JSON updates are logged as diffs.
func connect(db *testdb.Server, database string, mysql bool) (*client.Conn, error) {
	conn, err := db.Conn(database)
	if err != nil || !mysql {
		return conn, err
	}
	if _, err := conn.Execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'"); err != nil {
		_ = conn.Close() // unusable for the workload
		return nil, err
	}
	return conn, nil
}

// mysqlSession picks, for the next transaction, whether MySQL compresses it and whether its
// GTID is tagged.
func mysqlSession(rng *rand.Rand) []string {
	compression, gtid := "OFF", "AUTOMATIC"
	if rng.IntN(2) == 0 {
		compression = "ON"
	}
	if rng.IntN(3) == 0 {
		gtid = "AUTOMATIC:chaos"
	}
	return []string{"SET SESSION binlog_transaction_compression = " + compression, "SET gtid_next = '" + gtid + "'"}
}

// Finish stops the writer.
func (w *Writer) Finish(t testing.TB) {
	t.Helper()
	close(w.stop)
	<-w.done
}

// MySQLLogged counts the binlog events of the types only MySQL writes that the workload asks
// for (Transaction_payload, Update_rows_partial) across the server's binlog files, and tells
// whether a tagged GTID was executed: a test on MySQL checks its workload really wrote them.
func MySQLLogged(t testing.TB, db *testdb.Server) (counts map[string]int, tagged bool) {
	t.Helper()
	conn, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only
	files, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	counts = map[string]int{}
	for i := range files.RowNumber() {
		name, _ := files.GetString(i, 0)
		evs, qerr := conn.Execute("SHOW BINLOG EVENTS IN '" + name + "'")
		if qerr != nil {
			t.Fatal(qerr)
		}
		for j := range evs.RowNumber() {
			typ, _ := evs.GetString(j, 2)
			if typ == "Transaction_payload" || typ == "Update_rows_partial" {
				counts[typ]++
			}
		}
	}
	r, err := conn.Execute("SELECT @@GLOBAL.gtid_executed")
	if err != nil {
		t.Fatal(err)
	}
	set, _ := r.GetString(0, 0)
	return counts, strings.Contains(set, ":chaos:")
}
