package vstreamer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// killed returns a connection the server has killed, as a network failure or a KILL leaves
// it: the client does not know yet.
func killed(t *testing.T, e *Engine) *client.Conn {
	t.Helper()
	conn, err := e.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, db, fmt.Sprintf("KILL CONNECTION %d", conn.GetConnectionID()))
	return conn
}

// TestEndSnapshotDropsBrokenConnection: a ROLLBACK that fails leaves the copy connection in an
// unknown state (possibly still in its snapshot); it is closed and the next chunk connects anew.
func TestEndSnapshotDropsBrokenConnection(t *testing.T) {
	e := newEngine(t)
	var logs strings.Builder
	s := &stream{log: slog.New(slog.NewTextHandler(&logs, nil)), keyspaceStream: keyspaceStream{copy: &copier{conn: killed(t, e)}}}
	s.endSnapshot()
	if s.copy.conn != nil {
		t.Fatal("the broken copy connection was kept")
	}
	if !strings.Contains(logs.String(), "ending the snapshot failed") {
		t.Errorf("log = %q", logs.String())
	}

	conn, err := e.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		t.Fatal(err)
	}
	s.copy.conn = conn
	s.endSnapshot()
	if s.copy.conn != conn {
		t.Fatal("a healthy copy connection was dropped")
	}
}

// TestUnlockTables: the read lock taken for a snapshot is released, and when UNLOCK TABLES
// fails the lock connection is closed (which releases its locks) rather than kept.
func TestUnlockTables(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE unlock_t (id INT PRIMARY KEY)")
	e := newEngine(t)
	lock, err := e.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.Execute("LOCK TABLES test.unlock_t READ"); err != nil {
		t.Fatal(err)
	}
	s := &stream{log: slog.New(slog.DiscardHandler), keyspaceStream: keyspaceStream{copy: &copier{lock: lock}}}
	s.unlockTables()
	if s.copy.lock != lock {
		t.Fatal("a healthy lock connection was dropped")
	}
	// Writes go through at once: the lock is gone.
	testkit.MustExec(t, db, "SET SESSION lock_wait_timeout = 2", "INSERT INTO unlock_t VALUES (1)")

	s.copy.lock = killed(t, e)
	s.unlockTables()
	if s.copy.lock != nil {
		t.Fatal("the broken lock connection was kept")
	}
}
