package testdb

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// queryOn runs q on a new connection to srv's test database and returns its one value.
func queryOn(t *testing.T, srv *Server, q string) string {
	t.Helper()
	c, err := srv.Conn("vs_repl")
	if err != nil {
		t.Fatal(err)
	}
	defer hangUp(c)
	return queryString(t, c, q)
}

func mustExec(t *testing.T, srv *Server, sqls ...string) {
	t.Helper()
	if err := srv.Exec(sqls...); err != nil {
		t.Fatal(err)
	}
}

func mustPosition(t *testing.T, srv *Server) string {
	t.Helper()
	p, err := srv.Position()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplica walks a primary and its replica through what a failover test does with them:
// the replica copies what the primary had, follows it with the same GTIDs, lags when its
// replication stops, and after a kill -9 of the primary is promoted and written to.
func TestReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	primary, err := Start(Options{Database: "vs_repl", Logger: logger})
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Close)
	mustExec(t, primary, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32))", "INSERT INTO t VALUES (1, 'before')")

	begin := time.Now()
	replica, err := primary.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Close)
	t.Logf("StartReplica took %s", time.Since(begin))

	// What the primary had before the replica started is there, under the same GTIDs.
	if got := queryOn(t, replica, "SELECT GROUP_CONCAT(v ORDER BY id) FROM t"); got != "before" {
		t.Fatalf("replica rows = %q, want the primary's", got)
	}
	if p, r := mustPosition(t, primary), mustPosition(t, replica); p != r {
		t.Fatalf("after StartReplica: primary at %s, replica at %s", p, r)
	}
	settings := map[string]string{
		"SELECT @@read_only": "1",
		"SELECT @@server_id": strconv.FormatUint(uint64(replica.ServerID()), 10),
	}
	switch replica.Flavor() {
	case MariaDB:
		settings["SELECT @@log_slave_updates"] = "1"
		settings["SELECT @@gtid_strict_mode"] = "1"
	case MySQL:
		settings["SELECT @@log_replica_updates"] = "1"
		settings["SELECT @@gtid_mode"] = "ON"
	}
	for q, want := range settings {
		if got := queryOn(t, replica, q); got != want {
			t.Errorf("replica %s = %q, want %q", q, got, want)
		}
	}
	if replica.ServerID() == primary.ServerID() {
		t.Errorf("the replica has the primary's server id %d", primary.ServerID())
	}
	if replica.Flavor() == MySQL {
		if u := queryOn(t, replica, "SELECT @@server_uuid"); u == queryOn(t, primary, "SELECT @@server_uuid") {
			t.Errorf("the replica has the primary's server_uuid %s", u)
		}
	}

	// It follows the primary.
	mustExec(t, primary, "INSERT INTO t VALUES (2, 'after')", "UPDATE t SET v = 'changed' WHERE id = 1")
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	if got := queryOn(t, replica, "SELECT GROUP_CONCAT(v ORDER BY id) FROM t"); got != "changed,after" {
		t.Fatalf("replica rows = %q after catching up", got)
	}
	if p, r := mustPosition(t, primary), mustPosition(t, replica); p != r {
		t.Fatalf("after WaitCaughtUp: primary at %s, replica at %s", p, r)
	}

	// Stopped, it lags, and WaitCaughtUp says why at once instead of timing out.
	if err := replica.StopReplication(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, primary, "INSERT INTO t VALUES (3, 'missed')")
	begin = time.Now()
	err = replica.WaitCaughtUp(primary)
	if err == nil || !strings.Contains(err.Error(), "cannot catch up") || time.Since(begin) > 10*time.Second {
		t.Fatalf("WaitCaughtUp with replication stopped: %v after %s, want a prompt error", err, time.Since(begin))
	}
	if p, r := mustPosition(t, primary), mustPosition(t, replica); p == r {
		t.Fatalf("replica at the primary's %s with replication stopped", p)
	}
	if err := replica.StartReplication(); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}

	// A primary whose binlogs were purged is copied by a dump, then replicated from the
	// dump's position: the replica has every row, the primary's GTID set, and follows it.
	mustExec(t, primary, "FLUSH BINARY LOGS", "INSERT INTO t VALUES (4, 'flushed')")
	if err := primary.PurgeBinaryLogs(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	begin = time.Now()
	dumped, err := primary.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartReplica by dump took %s", time.Since(begin))
	mustExec(t, primary, "CREATE DATABASE other", "CREATE TABLE other.o (id INT PRIMARY KEY)", "INSERT INTO other.o VALUES (7)")
	if err := dumped.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	if got := queryOn(t, dumped, "SELECT CONCAT(GROUP_CONCAT(v ORDER BY id), (SELECT id FROM other.o)) FROM t"); got != "changed,after,missed,flushed7" {
		t.Fatalf("rows on the replica copied by dump = %q", got)
	}
	if p, r := mustPosition(t, primary), mustPosition(t, dumped); p != r {
		t.Fatalf("primary at %s, replica copied by dump at %s", p, r)
	}
	dumped.Close()
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	last := mustPosition(t, primary)

	// kill -9 of the primary, then the failover: the replica takes writes after the
	// primary's GTIDs, under its own server id or uuid.
	primary.Kill()
	if err := replica.Promote(); err != nil {
		t.Fatal(err)
	}
	if got := queryOn(t, replica, "SELECT @@read_only"); got != "0" {
		t.Fatalf("read_only = %s after Promote", got)
	}
	mustExec(t, replica, "INSERT INTO t VALUES (5, 'promoted')")
	after := mustPosition(t, replica)
	own := "-" + strconv.FormatUint(uint64(replica.ServerID()), 10) + "-"
	if replica.Flavor() == MySQL {
		own = queryOn(t, replica, "SELECT @@server_uuid") + ":1"
	}
	if !strings.Contains(after, own) {
		t.Fatalf("promoted replica at %s (primary was at %s): want its own GTID %s...", after, last, own)
	}
	if replica.Flavor() == MySQL && !strings.Contains(after, strings.TrimPrefix(last, "MySQL56/")) {
		t.Fatalf("promoted replica at %s lost the primary's %s", after, last)
	}

	// Promotion holds across a restart: no replication comes back, writes still go in.
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	c, err := replica.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := replica.replicationState(c)
	hangUp(c)
	if err != nil || st.configured {
		t.Fatalf("replication after Promote and Restart: %v, %v", st, err)
	}
	if got := queryOn(t, replica, "SELECT @@read_only"); got != "0" {
		t.Fatalf("read_only = %s after Promote and Restart", got)
	}
	mustExec(t, replica, "INSERT INTO t VALUES (6, 'restarted')")
	if got := queryOn(t, replica, "SELECT GROUP_CONCAT(v ORDER BY id) FROM t"); got != "changed,after,missed,flushed,promoted,restarted" {
		t.Fatalf("rows on the promoted replica = %q", got)
	}
}
