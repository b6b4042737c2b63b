package interop

import (
	"regexp"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// The suite runs on either flavor testdb starts (VSTREAM_TEST_FLAVOR). Vitess's tests were
// written for MySQL 8, so on MySQL the ported cases expect Vitess's own values; the MariaDB
// expectations are the adaptations README.md lists, each for its reason.

// onMySQL reports whether the suite's server is MySQL.
func onMySQL() bool { return db.Flavor() == testdb.MySQL }

// byFlavor returns mariadb or mysql, for the suite's server.
func byFlavor[T any](mariadb, mysql T) T {
	if onMySQL() {
		return mysql
	}
	return mariadb
}

// positionAt is a position of this server's GTIDs in Vitess's notation: MariaDB's
// "MariaDB/0-1-<mariadb>" or MySQL's "MySQL56/<server uuid>:<mysql>", for a position the
// server has not reached or has purged.
func positionAt(t *testing.T, mariadb, mysql string) string {
	t.Helper()
	if !onMySQL() {
		return "MariaDB/0-1-" + mariadb
	}
	return "MySQL56/" + serverUUID(t) + ":" + mysql
}

// serverUUID is MySQL's @@server_uuid, the source of its GTIDs.
func serverUUID(t *testing.T) string {
	t.Helper()
	c, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute("SELECT @@GLOBAL.server_uuid")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.GetString(0, 0)
	return strings.Clone(s)
}

// utf8mb4Default is the collation of a utf8mb4 column that names none: MariaDB's default,
// utf8mb4_general_ci (45), or MySQL 8's utf8mb4_0900_ai_ci (255), which Vitess's tests expect.
func utf8mb4Default() uint32 { return byFlavor[uint32](45, 255) }

// utf8mb4Bin is utf8mb4_bin, 46 on both flavors.
const utf8mb4Bin = 46

var (
	intWidth  = regexp.MustCompile(`(?i)int\(([0-9]*)?\)`)
	yearWidth = regexp.MustCompile(`(?i)year\(([0-9]*)?\)`)
)

// widths is Vitess's RemoveAnyDeprecatedDisplayWidths: Vitess's tests write column types
// with display widths ("int(11)", "year(4)"), which MySQL 8.0.19 and later no longer report
// and which its tests strip there; MariaDB keeps them.
func widths(colType string) string {
	if !onMySQL() {
		return colType
	}
	return yearWidth.ReplaceAllString(intWidth.ReplaceAllString(colType, "int"), "year")
}
