package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

// writeOn commits single-row INSERTs into table on its own connection, one about every
// millisecond, until the test ends.
func writeOn(t *testing.T, table string) {
	t.Helper()
	testkit.MustExec(t, db, "CREATE TABLE "+table+" (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := conn.Execute("INSERT INTO " + table + " (v) VALUES (1)"); err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = conn.Close(); testkit.MustExec(t, db, "DROP TABLE "+table) })
}

// firstGTID reads a dump up to its first transaction's GTID, and returns that with the dump's
// first event.
func firstGTID(t *testing.T, src binlogReader) (first *replication.BinlogEvent, gtid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var m txnMarks
	for {
		ev, err := src.GetEvent(ctx)
		if err != nil {
			t.Fatalf("dump: %v", err)
		}
		if first == nil {
			first = ev
		}
		if g, start, _ := m.Mark(ev); start {
			return first, gtidText(g)
		}
	}
}

// TestHeadPlaceStartsWhereGTIDDoes inspects the server while a writer commits, and starts a
// dump at the inspected position both by the head place it read and by GTID: the two dumps
// start with the same transaction. The place's dump starts at its offset (the server's rotate
// event says where), so it did not scan the binlog file.
func TestHeadPlaceStartsWhereGTIDDoes(t *testing.T) {
	e := bareEngine(t)
	writeOn(t, "headplace_writes")
	ctx := context.Background()
	places := 0
	for range 40 {
		info, err := e.inspect(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		place := e.dumpPlace(info, info.current)
		if place == nil {
			// MariaDB: a commit between the two readings of gtid_binlog_pos.
			continue
		}
		places++
		cfg := syncerConfig(&e.cfg, info, false, e.cfg.Logger)
		byPlace, stop, err := e.openDump(cfg, info.current, place)
		if err != nil {
			t.Fatal(err)
		}
		first, got := firstGTID(t, byPlace)
		stop()
		rot, ok := first.Event.(*replication.RotateEvent)
		if !ok || string(rot.NextLogName) != place.file || rot.Position != uint64(place.offset) {
			t.Fatalf("dump by place %s:%d began with %T %+v", place.file, place.offset, first.Event, first.Event)
		}
		byGTID, stop, err := e.openDump(cfg, info.current, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, want := firstGTID(t, byGTID)
		stop()
		if got != want {
			t.Fatalf("after %s: the dump at %s:%d starts with %s, the dump by GTID with %s", info.current, place.file, place.offset, got, want)
		}
	}
	// MySQL tells the place at every inspection; MariaDB when no commit comes between its
	// readings, most of the time at this rate.
	if places < 5 {
		t.Fatalf("%d of 40 inspections read a head place", places)
	}
}

// TestHeadPlaceOfAnotherServer opens a shared reader's dump by a head place that another
// server_id told (an address that reached another server between the inspection and the
// dump): the dump ends with an error that says so, and the engine's dumps start by GTID from
// then on.
func TestHeadPlaceOfAnotherServer(t *testing.T) {
	e := bareEngine(t)
	info, err := e.inspect(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if info.head == nil {
		t.Fatalf("no head place at %s (the server is idle)", info.current)
	}
	other := *info.head
	other.serverID++
	info.head = &other
	open := e.sharedDump(syncerConfig(&e.cfg, info, true, e.cfg.Logger), info)
	src, stop, err := open(info.current, func(*replication.BinlogEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, err = src.GetEvent(ctx)
		if err != nil {
			break
		}
	}
	want := fmt.Sprintf("served by server_id %d", other.serverID-1)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("dump ended with %v, want ErrUnavailable saying %q", err, want)
	}
	again, err := e.inspect(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if p := e.dumpPlace(again, again.current); p != nil {
		t.Fatalf("after a dump reached another server, a dump still starts at %s:%d", p.file, p.offset)
	}
}

// TestHeadPlaceWithoutLogStatus streams from MySQL as a user who may not read
// performance_schema.log_status (no BACKUP_ADMIN): the dump starts by GTID, and the stream
// is the same.
func TestHeadPlaceWithoutLogStatus(t *testing.T) {
	if db.Flavor() != testdb.MySQL {
		t.Skip("MariaDB reads the head place with SHOW MASTER STATUS")
	}
	testkit.MustExec(t, db,
		"CREATE USER IF NOT EXISTS 'nobackup'@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'nobackup'@'%'",
		"CREATE TABLE nobackup (id INT PRIMARY KEY)",
	)
	t.Cleanup(func() { testkit.MustExec(t, db, "DROP USER 'nobackup'@'%'", "DROP TABLE nobackup") })
	e, err := NewEngine(Config{Addr: db.Addr(), User: "nobackup", Password: "pw", Database: "test", Keyspace: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.conns.Close)
	info, err := e.inspect(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if info.head != nil || !e.places.noLogStatus.Load() {
		t.Fatalf("a user without BACKUP_ADMIN read a head place (%v)", info.head)
	}
	ts := startStream(t, e, Request{Position: CurrentPosition, Filter: rules(&binlogdata.Rule{Match: "nobackup"})})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO nobackup VALUES (1)")
	ts.expect("BEGIN", "FIELD nobackup id:INT32", "ROW nobackup +[1]", "GTID", "COMMIT", "VGTID")
}

// TestDumpPlaceOnlyWhereItWasRead: a head place starts only a dump at the very position it
// was read with, soon after the reading, while the engine trusts places.
func TestDumpPlaceOnlyWhereItWasRead(t *testing.T) {
	at := func(body string) position.Position {
		p, err := position.ParseBody(position.MariaDB, body)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	fresh := &headPlace{pos: at("0-1-100"), file: "bin.000002", offset: 4000, serverID: 1, read: time.Now()}
	stale := *fresh
	stale.read = time.Now().Add(-headPlaceTTL - time.Second)
	for _, c := range []struct {
		name  string
		place *headPlace
		pos   position.Position
		off   bool
		want  bool
	}{
		{"at its position", fresh, at("0-1-100"), false, true},
		{"no place", nil, at("0-1-100"), false, false},
		{"behind it", fresh, at("0-1-99"), false, false},
		{"another server id", fresh, at("0-2-100"), false, false},
		{"another domain too", fresh, at("0-1-100,1-1-5"), false, false},
		{"read too long ago", &stale, at("0-1-100"), false, false},
		{"places turned off", fresh, at("0-1-100"), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &Engine{}
			e.places.off.Store(c.off)
			got := e.dumpPlace(&serverInfo{current: fresh.pos, head: c.place}, c.pos)
			if (got != nil) != c.want {
				t.Fatalf("dumpPlace = %v, want a place: %v", got, c.want)
			}
		})
	}
}
