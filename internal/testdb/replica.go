package testdb

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// caughtUpTimeout bounds StartReplica's and WaitCaughtUp's wait for a replica to apply
// what its primary has: a test's few transactions take milliseconds, a loaded machine's
// replication thread a few seconds.
const caughtUpTimeout = 60 * time.Second

// lastServerID numbers the replicas of this process: a primary drops the older of two
// replicas connecting with one server id, and MariaDB's GTIDs name the server that wrote
// them, so every server of a topology needs its own. Primaries default to 1.
var lastServerID atomic.Uint32

func init() { lastServerID.Store(1) }

// replication is one flavor's statements for running a replica. The flavors name the same
// things differently; what the replica does with them is the same.
type replication struct {
	// change points the replica at host, port, user, password with GTID auto-positioning.
	change string
	// startPos, when set, is run before change with the GTID set the replica starts after.
	startPos              string
	start, stop, reset    string
	status                string
	ioRunning, sqlRunning string // SHOW ... STATUS columns
	// wait waits for a GTID set to be applied, up to a number of seconds; it returns 0 when
	// the set was applied.
	wait string
}

var replications = map[Flavor]replication{
	MariaDB: {
		// MASTER_USE_GTID=slave_pos starts after @@gtid_slave_pos, which startPos sets.
		change:     "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
		startPos:   "SET GLOBAL gtid_slave_pos = %s",
		start:      "START SLAVE",
		stop:       "STOP SLAVE",
		reset:      "RESET SLAVE ALL",
		status:     "SHOW SLAVE STATUS",
		ioRunning:  "Slave_IO_Running",
		sqlRunning: "Slave_SQL_Running",
		// MASTER_GTID_WAIT returns -1 on timeout.
		wait: "SELECT MASTER_GTID_WAIT(%s, %d)",
	},
	MySQL: {
		// caching_sha2_password over TCP without TLS needs the source's RSA public key.
		// Auto-positioning sends the replica's @@gtid_executed: it starts after what it has.
		change:     "CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=1",
		start:      "START REPLICA",
		stop:       "STOP REPLICA",
		reset:      "RESET REPLICA ALL",
		status:     "SHOW REPLICA STATUS",
		ioRunning:  "Replica_IO_Running",
		sqlRunning: "Replica_SQL_Running",
		// WAIT_FOR_EXECUTED_GTID_SET returns 1 on timeout.
		wait: "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %d)",
	},
}

// replicaArgs are a replica's server settings besides its primary's. Its relay log is named
// after its directory, not the host (the default), and it is read-only until Promote, as a
// replica is kept (the all-privileges test user writes through read_only all the same).
func replicaArgs(dir string) []string {
	return []string{
		"--relay-log=" + filepath.Join(dir, "relay-bin"),
		"--read-only=ON",
	}
}

// StartReplica starts a second server of the same flavor and options (its own directory,
// port and server id, and on MySQL its own server_uuid) replicating from s with GTID
// auto-positioning, and waits until it has applied everything s has executed. Its binlog
// holds the same GTIDs as s's (log_slave_updates / log_replica_updates are on), so a
// stream position taken on s is one on the replica: what a failover relies on.
//
// The replica copies s's data by replicating s's binlog from the start when s still has all
// of it, so that its own binlog holds every transaction s's does, from the first. When s
// purged binlogs, it copies s's databases with mariadb-dump / mysqldump instead and
// replicates from the dump's GTID position; its binlog then starts there, and positions
// before it are purged on the replica. Either way, changes s made outside
// its binlog (Start's bootstrap: the test user and Options.Database) the replica makes
// itself. The caller must Close the replica.
func (s *Server) StartReplica() (*Server, error) {
	begin := time.Now()
	purged, err := s.purgedGTIDs()
	if err != nil {
		return nil, err
	}
	opts := s.opts
	opts.Port = 0
	opts.ServerID = lastServerID.Add(1)
	if opts.ServerID == s.serverID {
		opts.ServerID = lastServerID.Add(1)
	}
	r, err := start(opts, true)
	if err != nil {
		return nil, fmt.Errorf("testdb: start a replica of %s: %w", s.Addr(), err)
	}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	// Empty: the replica has nothing yet, so it asks for the primary's whole binlog.
	from := ""
	if purged != "" {
		if from, err = r.copyByDump(s); err != nil {
			return nil, fmt.Errorf("testdb: copy %s (binlogs purged up to %s) to its replica: %w", s.Addr(), purged, err)
		}
	}
	if err := r.replicateFrom(s, from); err != nil {
		return nil, err
	}
	if err := r.WaitCaughtUp(s); err != nil {
		return nil, err
	}
	ok = true
	s.log.Info("testdb: replica ready", "primary", s.Addr(), "replica", r.Addr(), "server_id", r.serverID,
		"copied_by_dump", purged != "", "elapsed", time.Since(begin).Round(time.Millisecond))
	return r, nil
}

// purgedGTIDs is what the server executed that its binlogs no longer hold, "" when they
// hold everything.
func (s *Server) purgedGTIDs() (string, error) {
	c, err := s.Conn("")
	if err != nil {
		return "", err
	}
	defer hangUp(c)
	var purged string
	switch s.flavor {
	case MySQL:
		if purged, err = queryOne(c, "SELECT @@GLOBAL.gtid_purged"); err != nil {
			return "", err
		}
	case MariaDB:
		// MariaDB keeps no purged set: the GTID list at the head of the oldest binlog is
		// what came before it, "[]" when nothing did.
		files, err := s.binaryLogs()
		if err != nil {
			return "", err
		}
		if len(files) == 0 {
			return "", fmt.Errorf("testdb: %s has no binlogs to replicate", s.Addr())
		}
		r, err := c.Execute("SHOW BINLOG EVENTS IN " + quoteString(files[0]) + " LIMIT 4")
		if err != nil {
			return "", fmt.Errorf("testdb: read the head of %s: %w", files[0], err)
		}
		defer r.Close()
		for i := range r.RowNumber() {
			typ, _ := r.GetStringByName(i, "Event_type")
			if typ == "Gtid_list" {
				info, _ := r.GetStringByName(i, "Info")
				purged = strings.Trim(strings.Clone(info), "[]")
				break
			}
		}
	}
	return strings.ReplaceAll(purged, "\n", ""), nil
}

// dumpGTID finds the GTID position a dump was taken at: mariadb-dump --gtid writes it as
// gtid_slave_pos, mysqldump --set-gtid-purged=ON as GTID_PURGED (which the load sets).
var dumpGTID = map[Flavor]*regexp.Regexp{
	MariaDB: regexp.MustCompile(`(?m)^-- SET GLOBAL gtid_slave_pos='([^']*)';`),
	MySQL:   regexp.MustCompile(`SET @@GLOBAL\.GTID_PURGED=(?:/\*!80000 '\+'\*/ )?'([^']*)';`),
}

// copyByDump copies primary's databases (but the system schemas) into the server, a fresh
// replica, and makes the replica's GTID state the dump's position, which it returns: the
// replica has executed what the primary had when the dump was taken, and its binlog starts
// there. Both dumps take a consistent snapshot at a GTID position (--single-transaction with
// a brief global read lock for the position).
func (s *Server) copyByDump(primary *Server) (string, error) {
	dump, load, err := clientTools(s.flavor)
	if err != nil {
		return "", err
	}
	dbs, err := primary.userDatabases()
	if err != nil {
		return "", err
	}
	// Root over the unix socket: both flavors' root@localhost has no password there, and
	// MySQL's caching_sha2_password over TCP would want TLS or the server's key.
	conn := func(srv *Server) []string {
		return []string{"--no-defaults", "--socket=" + srv.socketPath(), "--user=root"}
	}
	args := append(conn(primary), "--single-transaction", "--routines", "--events", "--triggers")
	switch s.flavor {
	case MariaDB:
		args = append(args, "--gtid", "--master-data=2")
	case MySQL:
		args = append(args, "--set-gtid-purged=ON", "--source-data=2")
	}
	args = append(args, "--databases")
	args = append(args, dbs...)
	file := filepath.Join(s.tmpDir(), "copy.sql")
	if err = runTool(dump, args, nil, file); err != nil {
		return "", err
	}
	sql, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("testdb: %w", err)
	}
	m := dumpGTID[s.flavor].FindSubmatch(sql)
	if m == nil {
		return "", fmt.Errorf("testdb: %s wrote no GTID position into %s", dump, file)
	}
	pos := strings.ReplaceAll(string(m[1]), "\n", "")
	loadArgs := conn(s)
	if s.flavor == MariaDB {
		// The copy is the primary's transactions up to pos, which the replica's binlog
		// must not hold again under GTIDs of its own (mysqldump's load says so itself).
		loadArgs = append(loadArgs, "--init-command=SET SESSION sql_log_bin = 0")
	}
	if err = runTool(load, loadArgs, sql, ""); err != nil {
		return "", err
	}
	if s.flavor == MariaDB {
		// As MySQL's GTID_PURGED does: the replica has executed up to pos, and its binlog
		// (empty so far: the load was not logged) starts there.
		if err = s.execAdmin("RESET MASTER", "SET GLOBAL gtid_binlog_state = "+quoteString(pos)); err != nil {
			return "", err
		}
	}
	return pos, nil
}

// userDatabases lists the server's databases but the system schemas.
func (s *Server) userDatabases() ([]string, error) {
	c, err := s.Conn("")
	if err != nil {
		return nil, err
	}
	defer hangUp(c)
	r, err := c.Execute("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') ORDER BY schema_name")
	if err != nil {
		return nil, fmt.Errorf("testdb: list the databases of %s: %w", s.Addr(), err)
	}
	defer r.Close()
	dbs := make([]string, 0, r.RowNumber())
	for i := range r.RowNumber() {
		dbs = append(dbs, resultString(r, i, 0))
	}
	return dbs, nil
}

// clientTools finds the flavor's dump and command-line client: Debian's for MariaDB, the
// private prefix's for MySQL.
func clientTools(f Flavor) (dump, load string, err error) {
	if f == MySQL {
		bin := filepath.Join(MySQLPrefix(), "bin")
		dump, load = filepath.Join(bin, "mysqldump"), filepath.Join(bin, "mysql")
		for _, p := range []string{dump, load} {
			if !isExecutable(p) {
				return "", "", fmt.Errorf("testdb: %s not found (run scripts/install-mysql.sh): %w", p, ErrNotInstalled)
			}
		}
		return dump, load, nil
	}
	if dump, err = findBinary("mariadb-dump"); err != nil {
		return "", "", err
	}
	if load, err = findBinary("mariadb"); err != nil {
		return "", "", err
	}
	return dump, load, nil
}

// runTool runs a client program with stdin (when set) and its standard output into the file
// out (when set), and reports a failure with what it wrote on standard error.
func runTool(path string, args []string, stdin []byte, out string) error {
	cmd := exec.Command(path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("testdb: %w", err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testdb: %s: %w; stderr:\n%s", filepath.Base(path), err, tail(stderr.Bytes(), 20))
	}
	return nil
}

// replicateFrom points the server at primary, after the GTID position from ("" for the
// start of the primary's binlog), and starts replication. On MySQL the replica's own
// gtid_executed is that position already.
func (s *Server) replicateFrom(primary *Server, from string) error {
	sqls := replications[s.flavor]
	var stmts []string
	if sqls.startPos != "" {
		stmts = append(stmts, fmt.Sprintf(sqls.startPos, quoteString(from)))
	}
	stmts = append(stmts,
		fmt.Sprintf(sqls.change, quoteString(primary.Host()), primary.Port(), quoteString(primary.User()), quoteString(primary.Password())),
		sqls.start,
	)
	return s.execAdmin(stmts...)
}

// execAdmin runs statements on a connection of their own, so that they never share a
// session (or an open transaction) with Exec's.
func (s *Server) execAdmin(stmts ...string) error {
	c, err := s.Conn("")
	if err != nil {
		return err
	}
	defer hangUp(c)
	for _, q := range stmts {
		if _, err := c.Execute(q); err != nil {
			return fmt.Errorf("testdb: %s on %s: %w", abbrev(q), s.Addr(), err)
		}
	}
	return nil
}

// WaitCaughtUp waits until the server, a replica, has applied every transaction primary has
// executed now (MASTER_GTID_WAIT / WAIT_FOR_EXECUTED_GTID_SET). It fails at once when
// replication is stopped or has stopped on an error, naming the error, rather than wait
// for what cannot come; and after a minute, with the replica's state.
func (s *Server) WaitCaughtUp(primary *Server) error {
	pos, err := primary.Position()
	if err != nil {
		return fmt.Errorf("testdb: wait for %s to catch up: %w", s.Addr(), err)
	}
	set := strings.TrimPrefix(pos, primary.PositionFlavor()+"/")
	c, err := s.Conn("")
	if err != nil {
		return err
	}
	defer hangUp(c)
	sqls := replications[s.flavor]
	deadline := time.Now().Add(caughtUpTimeout)
	for {
		// Short waits, so that a replication error between them ends the wait.
		got, err := queryOne(c, fmt.Sprintf(sqls.wait, quoteString(set), 1))
		if err != nil {
			return fmt.Errorf("testdb: wait for %s to apply %s: %w", s.Addr(), set, err)
		}
		if got == "0" {
			return nil
		}
		st, err := s.replicationState(c)
		if err != nil {
			return err
		}
		if st.broken() {
			return fmt.Errorf("testdb: %s cannot catch up with %s (%s): replication %s", s.Addr(), primary.Addr(), set, st)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testdb: %s has not applied %s of %s after %s: replication %s", s.Addr(), set, primary.Addr(), caughtUpTimeout, st)
		}
	}
}

// replicationState is what SHOW SLAVE / REPLICA STATUS says of the threads.
type replicationState struct {
	configured        bool
	ioRunning         string // Yes, No, Connecting
	sqlRunning        string
	ioError, sqlError string
}

// broken: neither thread will make progress without someone starting replication again.
// An I/O thread that is Connecting retries by itself (the primary may be restarting).
func (st replicationState) broken() bool {
	return !st.configured || st.sqlRunning != "Yes" || st.ioRunning == "No"
}

func (st replicationState) String() string {
	if !st.configured {
		return "not configured"
	}
	return fmt.Sprintf("I/O thread %s (last error %q), SQL thread %s (last error %q)", st.ioRunning, st.ioError, st.sqlRunning, st.sqlError)
}

func (s *Server) replicationState(c *client.Conn) (replicationState, error) {
	sqls := replications[s.flavor]
	r, err := c.Execute(sqls.status)
	if err != nil {
		return replicationState{}, fmt.Errorf("testdb: %s on %s: %w", sqls.status, s.Addr(), err)
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		return replicationState{}, nil
	}
	col := func(name string) string {
		v, _ := r.GetStringByName(0, name)
		return strings.Clone(v)
	}
	return replicationState{
		configured: true,
		ioRunning:  col(sqls.ioRunning),
		sqlRunning: col(sqls.sqlRunning),
		ioError:    col("Last_IO_Error"),
		sqlError:   col("Last_SQL_Error"),
	}, nil
}

// StopReplication stops the replica's threads, leaving its configuration: transactions the
// primary writes from now on are missing on the replica until StartReplication.
func (s *Server) StopReplication() error {
	return s.execAdmin(replications[s.flavor].stop)
}

// StartReplication starts the threads StopReplication stopped; the replica resumes after
// the GTIDs it has.
func (s *Server) StartReplication() error {
	return s.execAdmin(replications[s.flavor].start)
}

// Promote makes a replica a primary, as a failover does: replication stops and is
// forgotten (a restart does not resume it), and the server becomes writable. Its binlog
// goes on from the GTIDs it replicated, with its own server id (MariaDB) or server_uuid
// (MySQL) on what it writes from now on.
func (s *Server) Promote() error {
	sqls := replications[s.flavor]
	if err := s.execAdmin(sqls.stop, sqls.reset, "SET GLOBAL read_only = OFF"); err != nil {
		return err
	}
	s.mu.Lock()
	s.replica = false
	s.mu.Unlock()
	s.log.Info("testdb: replica promoted", "addr", s.Addr(), "server_id", s.serverID)
	return nil
}

// Demote makes a primary a replica of primary, as a switchover does to the old primary:
// the server turns read-only and replicates primary from the GTIDs it has, so that what
// the new primary writes reaches its binlog too (log_slave_updates / log_replica_updates).
// The test user, which has every privilege, still writes through read_only: tests must stop
// their writers on the server themselves.
func (s *Server) Demote(primary *Server) error {
	if err := s.execAdmin("SET GLOBAL read_only = ON"); err != nil {
		return err
	}
	pos, err := s.Position()
	if err != nil {
		return fmt.Errorf("testdb: demote %s: %w", s.Addr(), err)
	}
	if err := s.replicateFrom(primary, strings.TrimPrefix(pos, s.PositionFlavor()+"/")); err != nil {
		return err
	}
	s.mu.Lock()
	s.replica = true
	s.mu.Unlock()
	s.log.Info("testdb: primary demoted", "addr", s.Addr(), "new_primary", primary.Addr())
	return nil
}

// ServerID returns the server's @@server_id.
func (s *Server) ServerID() uint32 { return s.serverID }

// queryOne returns the one value q selects.
func queryOne(c *client.Conn, q string) (string, error) {
	r, err := c.Execute(q)
	if err != nil {
		return "", fmt.Errorf("testdb: %s: %w", abbrev(q), err)
	}
	defer r.Close()
	if r.RowNumber() != 1 {
		return "", fmt.Errorf("testdb: %s: %d rows, want 1", abbrev(q), r.RowNumber())
	}
	return resultString(r, 0, 0), nil
}
