package vstreamer

import (
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/vstreamer/position"
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
// one domain), "<uuid>:5" on MySQL.
func lastGTID(t testing.TB) string {
	t.Helper()
	if !onMySQL() {
		g, err := queryStringOn(t, db.GTIDQuery())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	head := headPos(t) // MySQL56/<uuid>:1-N
	return serverUUID(t) + ":" + head[strings.LastIndexAny(head, ":-")+1:]
}
