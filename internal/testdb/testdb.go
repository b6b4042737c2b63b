// Package testdb runs a throwaway MariaDB or MySQL server for tests and
// development tools. The server is configured the way the CDC service expects a
// source database to be configured (row-based binlog with full images and
// metadata, GTIDs on and strict), listens on 127.0.0.1 only, and keeps all of its
// files in one temporary directory that Close removes.
//
// The flavor is Options.Flavor, or the environment variable VSTREAM_TEST_FLAVOR
// (mariadb or mysql) when that is empty, so that one test suite runs against
// either server: `make test` runs the database suites once per flavor. MariaDB is
// Debian's package; MySQL is unpacked into a private prefix by
// scripts/install-mysql.sh.
package testdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

const (
	// DefaultDatabase is created when Options.Database is empty.
	DefaultDatabase = "test"

	// KeepEnv names the environment variable that, when set to 1, makes Close
	// leave the server directory (data, binlogs, log) behind for inspection.
	KeepEnv = "VSTREAM_KEEP_TESTDB"

	user     = "vstream"
	password = "vstream"
	host     = "127.0.0.1"

	// A cold start on a loaded CI machine can take tens of seconds, most of
	// it in InnoDB initialisation.
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second

	// The session collation must be one MariaDB knows: go-mysql's default
	// (utf8mb4_0900_ai_ci) only exists in MySQL 8. MySQL sessions keep that
	// default, which is also the server's.
	sessionCollation = "utf8mb4_general_ci"
)

// ErrNotInstalled is returned (wrapped) by Start when the server binaries of
// the flavor cannot be found, so tests can skip instead of fail if they want.
var ErrNotInstalled = errors.New("the database server is not installed (run scripts/install-deps.sh)")

// Options configures Start. The zero value is usable.
type Options struct {
	// Flavor is the server to run. Default: FlavorFromEnv().
	Flavor Flavor
	// Database is created after startup and used by Exec. Default "test".
	Database string
	// Dir is the parent of the server's temporary directory. Default os.TempDir().
	Dir string
	// ExtraArgs are appended to the server's command line, so they override
	// the defaults. They are not passed to the data directory's initialisation.
	// Options that only one flavor knows belong in MariaDBArgs or MySQLArgs.
	ExtraArgs []string
	// MariaDBArgs and MySQLArgs are appended after ExtraArgs on that flavor only.
	MariaDBArgs, MySQLArgs []string
	// Port to listen on; 0 picks a free one.
	Port int
	// ServerID is the server's @@server_id. Default 1; replicas started by StartReplica
	// get ids of their own.
	ServerID uint32
	// Logger receives lifecycle messages. Default: discard.
	Logger *slog.Logger
}

// Server is a running (or stopped) throwaway MariaDB or MySQL instance.
type Server struct {
	opts   Options
	log    *slog.Logger
	flavor Flavor
	bin    binaries
	dir    string
	// sockDir holds the unix socket when dir is too long for one; it is
	// removed together with dir.
	sockDir string
	port    int
	// serverID is @@server_id: Options.ServerID, or the one StartReplica picked.
	serverID uint32

	mu     sync.Mutex // guards proc, closed and replica
	proc   *process
	closed bool
	// replica makes the server start read-only and with a relay log of its own: it is a
	// replica started by StartReplica that Promote has not made a primary.
	replica bool

	connMu sync.Mutex // guards conn
	conn   *client.Conn
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start initialises a fresh data directory, starts the server on it, waits
// until it accepts connections, and creates the vstream user and
// Options.Database. The caller must Close the returned server.
func Start(opts Options) (*Server, error) {
	return start(opts, false)
}

// start is Start, for a replica too: a replica's settings are in its arguments from its
// first start, as a real replica's are in its configuration file.
func start(opts Options, replica bool) (*Server, error) {
	begin := time.Now()
	if opts.Database == "" {
		opts.Database = DefaultDatabase
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	flavor := opts.Flavor
	if flavor == "" {
		var err error
		if flavor, err = FlavorFromEnv(); err != nil {
			return nil, err
		}
	}
	bin, err := findServer(flavor)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, "vstream-testdb-")
	if err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	if opts.ServerID == 0 {
		opts.ServerID = 1
	}
	s := &Server{opts: opts, log: logger, flavor: flavor, bin: bin, dir: dir, port: opts.Port, serverID: opts.ServerID, replica: replica}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	// Unix socket paths are limited to ~108 bytes; deep temp dirs (t.TempDir,
	// macOS $TMPDIR) exceed that and the server refuses to start.
	if len(filepath.Join(dir, "server.sock")) > 100 {
		if s.sockDir, err = os.MkdirTemp("/tmp", "vsdb"); err != nil {
			return nil, fmt.Errorf("testdb: %w", err)
		}
	}
	if err = os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	if err = s.install(); err != nil {
		return nil, err
	}

	// A port picked by listening on :0 can be taken by someone else before
	// the server binds it, which happens when many test packages start servers
	// in parallel; retry with a new port instead of failing the test.
	for attempt := 1; ; attempt++ {
		if opts.Port == 0 {
			if s.port, err = freePort(); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		err = s.startLocked()
		s.mu.Unlock()
		if err == nil {
			break
		}
		if opts.Port != 0 || attempt == 3 || !s.bindFailed() {
			return nil, err
		}
		s.log.Warn("testdb: port taken, retrying", "port", s.port)
	}

	if err := s.bootstrap(); err != nil {
		return nil, err
	}
	ok = true
	s.log.Info("testdb: "+string(flavor)+" ready", "addr", s.Addr(), "dir", dir, "elapsed", time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// Flavor returns which server this is.
func (s *Server) Flavor() Flavor { return s.flavor }

// Host returns the address the server listens on (always 127.0.0.1).
func (s *Server) Host() string { return host }

// Port returns the TCP port; it stays the same across Restart.
func (s *Server) Port() int { return s.port }

// User returns the name of the all-privileges account created by Start.
func (s *Server) User() string { return user }

// Password returns the password of User.
func (s *Server) Password() string { return password }

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort(host, strconv.Itoa(s.port)) }

// Dir returns the server's temporary directory (data, binlogs, logs).
func (s *Server) Dir() string { return s.dir }

// DSN returns a go-sql-driver style DSN, user:pass@tcp(127.0.0.1:port)/db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", user, password, s.Addr(), db)
}

// Conn opens a new connection as User to db (may be empty). The caller
// closes it.
func (s *Server) Conn(db string) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, s.Addr(), user, password, db, 10*time.Second, s.withCollation)
	if err != nil {
		return nil, fmt.Errorf("testdb: connect to %s: %w", s.Addr(), err)
	}
	return c, nil
}

// Exec runs the statements in order on one connection to Options.Database,
// so a BEGIN ... COMMIT sequence forms one transaction. The connection is
// kept between calls; after an error it is closed, which rolls back any
// transaction left open, and the next call reconnects.
func (s *Server) Exec(sqls ...string) error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for _, q := range sqls {
		if s.conn == nil {
			c, err := s.Conn(s.opts.Database)
			if err != nil {
				return fmt.Errorf("testdb: exec %s: %w", abbrev(q), err)
			}
			s.conn = c
		}
		if _, err := s.conn.Execute(q); err != nil {
			hangUp(s.conn)
			s.conn = nil
			return fmt.Errorf("testdb: exec %s: %w", abbrev(q), err)
		}
	}
	return nil
}

// Stop shuts the server down cleanly (SIGTERM), falling back to SIGKILL after
// 30 s. It does nothing if the server is not running.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Kill terminates the server with SIGKILL and waits for it to exit, leaving
// the data directory as a crash would. Restart recovers it.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	s.proc = nil
	s.dropConn()
	s.log.Info("testdb: server killed", "flavor", s.flavor, "addr", s.Addr())
}

// Restart stops the server if it is running and starts it again on the same
// port and data directory, waiting until it accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("testdb: restart after Close")
	}
	if err := s.stopLocked(); err != nil {
		return err
	}
	return s.startLocked()
}

// Close stops the server and removes its directory, unless the environment
// variable VSTREAM_KEEP_TESTDB is 1. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if err := s.stopLocked(); err != nil {
		s.log.Warn("testdb: stop", "err", err)
	}
	s.dropConn()
	if os.Getenv(KeepEnv) == "1" {
		s.log.Info("testdb: keeping server directory", "dir", s.dir, "env", KeepEnv)
		return
	}
	for _, d := range []string{s.dir, s.sockDir} {
		if d == "" {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			s.log.Warn("testdb: remove directory", "dir", d, "err", err)
		}
	}
}

// LogTail returns the last n lines of the server's error log (its stderr,
// accumulated across restarts).
func (s *Server) LogTail(n int) string {
	return fileTail(s.logPath(), n)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

func (s *Server) socketPath() string {
	if s.sockDir != "" {
		return filepath.Join(s.sockDir, "server.sock")
	}
	return filepath.Join(s.dir, "server.sock")
}

// tmpDir keeps the server's temporary files apart from other servers'.
func (s *Server) tmpDir() string { return filepath.Join(s.dir, "tmp") }

// startLocked starts the server and waits until it accepts connections.
// s.mu must be held.
func (s *Server) startLocked() error {
	if s.proc != nil {
		return errors.New("testdb: the server is already running")
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	fmt.Fprintf(logf, "----- %s testdb: starting %s on port %d\n", time.Now().Format(time.RFC3339), s.bin.server, s.port)
	cmd := exec.Command(s.bin.server, s.serverArgs()...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("testdb: start %s: %w", s.bin.server, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.proc = p
	begin := time.Now()
	if err := s.waitReady(p); err != nil {
		_ = p.cmd.Process.Kill() // harmless if it already exited
		<-p.done
		s.proc = nil
		return err
	}
	s.log.Debug("testdb: server started", "addr", s.Addr(), "pid", cmd.Process.Pid, "elapsed", time.Since(begin).Round(time.Millisecond))
	return nil
}

func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("testdb: %s exited during startup (%v); last log lines:\n%s", s.flavor, p.err, s.LogTail(30))
		default:
		}
		c, err := s.connectRoot(2 * time.Second)
		if err == nil {
			hangUp(c)
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("testdb: %s not ready after %s (last error: %v); last log lines:\n%s", s.flavor, startTimeout, lastErr, s.LogTail(30))
		}
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// connectRoot uses the passwordless root account that the data directory's
// initialisation creates: root@127.0.0.1 over TCP on MariaDB; on MySQL only
// root@localhost exists, which --skip-name-resolve leaves to the unix socket.
func (s *Server) connectRoot(timeout time.Duration) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	addr := s.Addr()
	if s.flavor == MySQL {
		addr = s.socketPath()
	}
	return client.ConnectWithContext(ctx, addr, "root", "", "", timeout, s.withCollation,
		func(c *client.Conn) error {
			// The handshake itself has no deadline otherwise, and a server
			// that is still initialising may accept but not answer.
			c.ReadTimeout = timeout
			c.WriteTimeout = timeout
			return nil
		})
}

func (s *Server) bootstrap() error {
	c, err := s.connectRoot(30 * time.Second)
	if err != nil {
		return fmt.Errorf("testdb: connect as root: %w", err)
	}
	defer hangUp(c)
	db := "`" + strings.ReplaceAll(s.opts.Database, "`", "``") + "`"
	stmts := []string{
		// Keeps the binlog to what the caller does, so a stream read from
		// the very beginning holds no setup noise.
		"SET SESSION sql_log_bin = 0",
	}
	for _, h := range []string{"%", "localhost"} {
		acct := fmt.Sprintf("'%s'@'%s'", user, h)
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS %s IDENTIFIED BY '%s'", acct, password),
			fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO %s WITH GRANT OPTION", acct),
		)
	}
	stmts = append(stmts, "CREATE DATABASE IF NOT EXISTS "+db)
	if s.flavor == MariaDB {
		// mariadb-install-db also creates root@<hostname>, which
		// --skip-name-resolve makes mariadbd warn about on every start.
		r, err := c.Execute("SELECT user, host FROM mysql.global_priv WHERE host NOT IN ('localhost', '127.0.0.1', '::1', '%')")
		if err != nil {
			return fmt.Errorf("testdb: bootstrap: list accounts: %w", err)
		}
		for i := range r.RowNumber() {
			u := resultString(r, i, 0)
			h := resultString(r, i, 1)
			stmts = append(stmts, fmt.Sprintf("DROP USER IF EXISTS %s@%s", quoteString(u), quoteString(h)))
		}
	}
	for _, q := range stmts {
		if _, err := c.Execute(q); err != nil {
			return fmt.Errorf("testdb: bootstrap %s: %w", abbrev(q), err)
		}
	}
	return nil
}

func quoteString(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(v) + "'"
}

// stopLocked requires s.mu.
func (s *Server) stopLocked() error {
	p := s.proc
	if p == nil {
		return nil
	}
	defer s.dropConn()
	defer func() { s.proc = nil }()
	select {
	case <-p.done:
		// Already gone (crashed or killed from outside); nothing to stop.
		return nil
	default:
	}
	begin := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("testdb: %s did not shut down within %s and was killed; last log lines:\n%s", s.flavor, stopTimeout, s.LogTail(20))
	}
	if p.err != nil {
		return fmt.Errorf("testdb: %s shutdown: %w; last log lines:\n%s", s.flavor, p.err, s.LogTail(20))
	}
	s.log.Debug("testdb: server stopped", "addr", s.Addr(), "elapsed", time.Since(begin).Round(time.Millisecond))
	return nil
}

func (s *Server) dropConn() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conn != nil {
		_ = s.conn.Close() // the server is gone by now; no point saying goodbye
		s.conn = nil
	}
}

func (s *Server) bindFailed() bool {
	t := s.LogTail(20)
	return strings.Contains(t, "Address already in use") || strings.Contains(t, "Bind on TCP/IP port") ||
		strings.Contains(t, "Do you already have another mysqld server running")
}

// hangUp sends COM_QUIT first so that the server does not log an "Aborted
// connection" warning, which would clutter LogTail output.
func hangUp(c *client.Conn) {
	if c.Quit() != nil {
		_ = c.Close() // nothing more can be done for a connection that would not quit
	}
}

func (s *Server) withCollation(c *client.Conn) error {
	if s.flavor == MySQL {
		return nil
	}
	return c.SetCollation(sessionCollation)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("testdb: pick a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("testdb: free port %d: %w", port, err)
	}
	return port, nil
}

// fileTail reads at most the last 256 KiB, which is plenty for n error-log
// lines and keeps a long-running server's log from being read whole.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return tail(b, n)
}

func tail(b []byte, n int) string {
	if n <= 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func abbrev(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 200 {
		q = q[:200] + "..."
	}
	return strconv.Quote(q)
}

// resultString reads a cell as a string the caller may keep: go-mysql's strings alias the
// result's buffer, which goes back to a pool when the result is closed.
func resultString(r *mysql.Result, row, col int) string {
	s, _ := r.GetString(row, col)
	return strings.Clone(s)
}

// PurgeBinaryLogs purges every binlog file but the one being written. A binlog dump thread
// that is still closing holds its file open, so it purges again until only that file is
// left, or reports the files left after timeout.
func (s *Server) PurgeBinaryLogs(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := s.Exec("PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY"); err != nil {
			return err
		}
		files, err := s.binaryLogs()
		if err != nil {
			return err
		}
		if len(files) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testdb: binlogs not purged after %v: %d files remain (%s)", timeout, len(files), strings.Join(files, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// binaryLogs lists the server's binlog files, oldest first.
func (s *Server) binaryLogs() ([]string, error) {
	c, err := s.Conn("")
	if err != nil {
		return nil, err
	}
	defer hangUp(c)
	r, err := c.Execute("SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("testdb: SHOW BINARY LOGS: %w", err)
	}
	defer r.Close()
	files := make([]string, 0, r.RowNumber())
	for i := range r.RowNumber() {
		files = append(files, resultString(r, i, 0))
	}
	return files, nil
}
