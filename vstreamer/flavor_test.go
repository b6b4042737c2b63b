package vstreamer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/position"
)

// onMySQL reports whether the test server is MySQL rather than MariaDB.
func onMySQL() bool { return db.Flavor() == testdb.MySQL }

// serverFlavor is the test server's position flavor.
func serverFlavor() position.Flavor {
	if onMySQL() {
		return position.MySQL56
	}
	return position.MariaDB
}

// goMySQLFlavor is the test server's flavor as go-mysql's replication names it.
func goMySQLFlavor() string {
	if onMySQL() {
		return mysql.MySQLFlavor
	}
	return mysql.MariaDBFlavor
}

// byFlavor picks the value that holds on the test server.
func byFlavor[T any](mariadb, mysql T) T {
	if onMySQL() {
		return mysql
	}
	return mariadb
}

// skipOnMySQL skips a test of what a MySQL server cannot write, saying why.
func skipOnMySQL(t testing.TB, why string) {
	t.Helper()
	if onMySQL() {
		t.Skip("not on MySQL: " + why)
	}
}

// lastGTID is the GTID of the server's last transaction: "0-1-5" on MariaDB (the tests write
// one domain), "<uuid>:5" on MySQL (its untagged GTIDs: a test may have written tagged ones).
func lastGTID(t testing.TB) string {
	t.Helper()
	return gtidAfter(t, 0)
}

// nextGTID is the GTID the server gives its next transaction, in lastGTID's form.
func nextGTID(t testing.TB) string {
	t.Helper()
	return gtidAfter(t, 1)
}

// gtidAfter is the GTID n transactions after the server's last.
func gtidAfter(t testing.TB, n int64) string {
	t.Helper()
	if !onMySQL() {
		g, err := queryStringOn(t, db.GTIDQuery())
		if err != nil {
			t.Fatal(err)
		}
		i := strings.LastIndexByte(g, '-')
		seq, err := strconv.ParseInt(g[i+1:], 10, 64)
		if err != nil || strings.Contains(g, ",") {
			t.Fatalf("gtid_binlog_pos %q: want one domain's GTID", g)
		}
		return g[:i+1] + strconv.FormatInt(seq+n, 10)
	}
	uuid := serverUUID(t)
	var last int64
	for _, part := range strings.Split(strings.TrimPrefix(headPos(t), "MySQL56/"), ",") {
		segs := strings.Split(part, ":")
		if segs[0] != uuid {
			continue
		}
		// <uuid>:<intervals>[:<tag>:<intervals>...]: the untagged intervals come first.
		for _, seg := range segs[1:] {
			if seg == "" || seg[0] < '0' || seg[0] > '9' {
				break
			}
			_, end, ok := strings.Cut(seg, "-")
			if !ok {
				end = seg
			}
			v, err := strconv.ParseInt(end, 10, 64)
			if err != nil {
				t.Fatalf("interval %q of %s: %v", seg, part, err)
			}
			last = v
		}
	}
	return uuid + ":" + strconv.FormatInt(last+n, 10)
}
