package vstreamer

import (
	"context"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

// TestBinlogsLocate: a position maps to the binlog file a resume from it starts reading, as
// the server picks it by the GTID set at each file's head; once that file is purged the
// position has none.
func TestBinlogsLocate(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS bl", "CREATE TABLE bl (id INT PRIMARY KEY)", "FLUSH BINARY LOGS")
	// before: the file of the first insert is the oldest it needs.
	before := headPos(t)
	testkit.MustExec(t, db, "INSERT INTO bl VALUES (1)")
	// first: everything up to the first insert; a resume reads on from the file the flush
	// opens, whose head it contains.
	first := headPos(t)
	testkit.MustExec(t, db, "FLUSH BINARY LOGS", "INSERT INTO bl VALUES (2)")
	second := headPos(t)
	testkit.MustExec(t, db, "FLUSH BINARY LOGS")

	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := e.Binlogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b.Files)
	if n < 3 {
		t.Fatalf("%d binlog files, want at least 3", n)
	}
	cases := []struct {
		name string
		pos  string
		want int // index from the newest file: 0 is the file being written
	}{
		{"before the first insert", before, 2},
		{"at the first insert", first, 1},
		{"at the second insert, the server's position", second, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := position.Parse(c.pos)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := b.Locate(p)
			if !ok || got != n-1-c.want {
				t.Errorf("Locate(%s) = %d, %v; want %d of %d files (%v)", c.pos, got, ok, n-1-c.want, n, b.Files)
			}
		})
	}

	purgeBinlogs(t)
	if b, err = e.Binlogs(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.Files) != 1 {
		t.Fatalf("after the purge: %v", b.Files)
	}
	for _, c := range cases {
		p, _ := position.Parse(c.pos)
		got, ok := b.Locate(p)
		if wantOK := c.want == 0; ok != wantOK || (ok && got != 0) {
			t.Errorf("after the purge, Locate(%s) = %d, %v; want found: %v", c.pos, got, ok, wantOK)
		}
	}
}

// TestBinlogsExpiry: the server's binlog expiry is read in seconds on both flavors.
func TestBinlogsExpiry(t *testing.T) {
	old, err := queryStringOn(t, "SELECT @@GLOBAL.binlog_expire_logs_seconds")
	if err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, db, "SET GLOBAL binlog_expire_logs_seconds = 7200")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET GLOBAL binlog_expire_logs_seconds = "+old) })
	b, err := newEngine(t).Binlogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.Expire != 2*time.Hour {
		t.Errorf("Expire = %v, want 2h", b.Expire)
	}
}
