package vstreamer

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// TestDescribe reads what the encoders are told about the server: its flavor, version, time
// zone and collations, including the ids MariaDB gives its UCA 14.0.0 collations only in
// COLLATION_CHARACTER_SET_APPLICABILITY.
func TestDescribe(t *testing.T) {
	d, err := newEngine(t).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// MySQL's VERSION() names no flavor ("9.7.4-2"), MariaDB's does ("11.8.3-MariaDB-log").
	if d.Flavor != string(db.Flavor()) || strings.Contains(d.Version, "MariaDB") == onMySQL() || d.TimeZone == "" || strings.EqualFold(d.TimeZone, "SYSTEM") {
		t.Errorf("description %+v", d)
	}
	collations := map[uint32]string{8: "latin1", 28: "gbk", 45: "utf8mb4", 54: "utf16", 63: "binary"}
	if onMySQL() {
		collations[255] = "utf8mb4" // utf8mb4_0900_ai_ci, MySQL's default
		collations[309] = "utf8mb4" // utf8mb4_0900_bin
	}
	for id, want := range collations {
		if got := d.Collations[id]; got != want {
			t.Errorf("collation %d is %q, want %q", id, got, want)
		}
	}
	if onMySQL() {
		// MySQL's collations all have their ids in COLLATIONS.
		return
	}
	id, err := queryStringOn(t, "SELECT ID FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE FULL_COLLATION_NAME = 'utf16_uca1400_ai_ci'")
	n, perr := strconv.ParseUint(id, 10, 32)
	if err != nil || perr != nil {
		t.Skipf("no UCA 14.0.0 collations here: %v %v", err, perr)
	}
	if got := d.Collations[uint32(n)]; n < 2048 || got != "utf16" {
		t.Errorf("utf16_uca1400_ai_ci (id %d) is %q in the collations", n, got)
	}
}

// TestSchemaUnderWriteLock: a table another session holds under LOCK TABLES ... WRITE is
// still described at once, from information_schema, with the lengths the server's result
// metadata would give; the stream does not wait for the lock.
func TestSchemaUnderWriteLock(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS swl", "CREATE TABLE swl (id INT UNSIGNED PRIMARY KEY, v VARCHAR(10), d DATETIME)")
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	free, err := schema.Load(conn, "test", "swl")
	if err != nil || len(free) != 3 || free[0].Result == nil {
		t.Fatalf("unlocked: %+v %v", free, err)
	}
	lock, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.Execute("LOCK TABLES swl WRITE"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	locked, err := schema.Load(conn, "test", "swl")
	if err != nil || len(locked) != 3 {
		t.Fatalf("locked: %+v %v", locked, err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("describing a locked table took %v", took)
	}
	if locked[0].Result != nil {
		t.Errorf("the result metadata of a locked table was read")
	}
	cf := schema.Columns(free)
	cl := schema.Columns(locked)
	for i := range cf {
		a, b := cf[i].Field("test", "swl"), cl[i].Field("test", "swl")
		if a.ColumnLength != b.ColumnLength || a.Type != b.Type || a.ColumnType != b.ColumnType {
			t.Errorf("column %d: unlocked %v, locked %v", i, a, b)
		}
	}
}
