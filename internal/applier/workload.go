package applier

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// WorkloadKeys are the tables of the workload and their key columns: an integer primary key,
// a composite primary key, and a unique key only.
var WorkloadKeys = map[string][]string{"cp_a": {"id"}, "cp_b": {"a", "b"}, "cp_c": {"code"}}

// SetupWorkload (re)creates the workload's tables in the server's default database and fills
// them.
func SetupWorkload(t testing.TB, db *testdb.Server) {
	t.Helper()
	if err := db.Exec(
		"DROP TABLE IF EXISTS cp_a, cp_b, cp_c",
		"CREATE TABLE cp_a (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), created DATETIME, qty INT NOT NULL DEFAULT 0)",
		"CREATE TABLE cp_b (a INT NOT NULL, b INT NOT NULL, v VARCHAR(200), PRIMARY KEY (a, b))",
		"CREATE TABLE cp_c (code VARCHAR(20) NOT NULL, n BIGINT, UNIQUE KEY (code))",
		"INSERT INTO cp_a SELECT seq, CONCAT('name', seq), seq * 1.5, '2024-01-01 00:00:00' + INTERVAL seq MINUTE, 0 FROM "+db.Seq(300),
		"INSERT INTO cp_b SELECT seq % 50, seq, REPEAT('v', seq % 30) FROM "+db.Seq(200),
		"INSERT INTO cp_c SELECT CONCAT('k', LPAD(seq, 5, '0')), seq FROM "+db.Seq(250),
	); err != nil {
		t.Fatal(err)
	}
}

// Writer changes the workload's tables until stopped: inserts, updates (of values and of
// keys) and deletes, each its own transaction, sometimes several tables in one.
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
		conn, err := db.Conn(database)
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
				conn, err = db.Conn(database)
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
			}
			for _, q := range stmts[rng.IntN(len(stmts))] {
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

// Finish stops the writer.
func (w *Writer) Finish(t testing.TB) {
	t.Helper()
	close(w.stop)
	<-w.done
}
