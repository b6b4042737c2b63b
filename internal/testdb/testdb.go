// Package testdb runs a throwaway MariaDB server for tests and development
// tools. The server is configured the way the CDC service expects a source
// database to be configured (row-based binlog with full images and metadata,
// strict GTIDs), listens on 127.0.0.1 only, and keeps all of its files in one
// temporary directory that Close removes.
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
	// (utf8mb4_0900_ai_ci) only exists in MySQL 8.
	sessionCollation = "utf8mb4_general_ci"
)

// ErrNotInstalled is returned (wrapped) by Start when the MariaDB server
// binaries cannot be found, so tests can skip instead of fail if they want.
var ErrNotInstalled = errors.New("MariaDB server is not installed (install it with: apt-get install -y mariadb-server)")

// Options configures Start. The zero value is usable.
type Options struct {
	// Database is created after startup and used by Exec. Default "test".
	Database string
	// Dir is the parent of the server's temporary directory. Default os.TempDir().
	Dir string
	// ExtraArgs are appended to the mariadbd command line, so they override
	// the defaults. They are not passed to mariadb-install-db.
	ExtraArgs []string
	// Port to listen on; 0 picks a free one.
	Port int
	// Logger receives lifecycle messages. Default: discard.
	Logger *slog.Logger
}

// Server is a running (or stopped) throwaway MariaDB instance.
type Server struct {
	opts     Options
	log      *slog.Logger
	mariadbd string
	dir      string
	// sockDir holds the unix socket when dir is too long for one; it is
	// removed together with dir.
	sockDir string
	port    int

	mu     sync.Mutex // guards proc and closed
	proc   *process
	closed bool

	connMu sync.Mutex // guards conn
	conn   *client.Conn
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start initialises a fresh data directory, starts mariadbd on it, waits
// until it accepts connections, and creates the vstream user and
// Options.Database. The caller must Close the returned server.
func Start(opts Options) (*Server, error) {
	begin := time.Now()
	if opts.Database == "" {
		opts.Database = DefaultDatabase
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mariadbd, err := findBinary("mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := findBinary("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, "vstream-testdb-")
	if err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	s := &Server{opts: opts, log: logger, mariadbd: mariadbd, dir: dir, port: opts.Port}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	// Unix socket paths are limited to ~108 bytes; deep temp dirs (t.TempDir,
	// macOS $TMPDIR) exceed that and mariadbd refuses to start.
	if len(filepath.Join(dir, "mariadbd.sock")) > 100 {
		if s.sockDir, err = os.MkdirTemp("/tmp", "vsdb"); err != nil {
			return nil, fmt.Errorf("testdb: %w", err)
		}
	}
	if err = os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	if err = s.install(installDB); err != nil {
		return nil, err
	}

	// A port picked by listening on :0 can be taken by someone else before
	// mariadbd binds it, which happens when many test packages start servers
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
	s.log.Info("testdb: mariadb ready", "addr", s.Addr(), "dir", dir, "elapsed", time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// Host returns the address mariadbd listens on (always 127.0.0.1).
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
	c, err := client.ConnectWithContext(ctx, s.Addr(), user, password, db, 10*time.Second, withCollation)
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

// Stop shuts mariadbd down cleanly (SIGTERM), falling back to SIGKILL after
// 30 s. It does nothing if the server is not running.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Kill terminates mariadbd with SIGKILL and waits for it to exit, leaving
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
	s.log.Info("testdb: mariadbd killed", "addr", s.Addr())
}

// Restart stops mariadbd if it is running and starts it again on the same
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

// LogTail returns the last n lines of mariadbd's error log (its stderr,
// accumulated across restarts).
func (s *Server) LogTail(n int) string {
	return fileTail(s.logPath(), n)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "mariadbd.log") }

func (s *Server) socketPath() string {
	if s.sockDir != "" {
		return filepath.Join(s.sockDir, "mariadbd.sock")
	}
	return filepath.Join(s.dir, "mariadbd.sock")
}

// rootArgs lets both tools run as root, which they otherwise refuse to do.
func rootArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// tmpDir keeps the server's temporary files apart from other servers'.
func (s *Server) tmpDir() string { return filepath.Join(s.dir, "tmp") }

func (s *Server) install(installDB string) error {
	args := []string{
		"--no-defaults",
		"--datadir=" + s.dataDir(),
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		// Must match mariadbd's setting, or the first start resizes the
		// redo log it has just created.
		"--innodb-log-file-size=48M",
		// Bootstraps running at once in the shared /tmp collide on temporary
		// table names ("Unknown table 'mysql.tmp_user_sys'").
		"--tmpdir=" + s.tmpDir(),
	}
	args = append(args, rootArgs()...)
	if err := os.MkdirAll(s.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	cmd := exec.Command(installDB, args...)
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	logFile := filepath.Join(s.dir, "install.log")
	_ = os.WriteFile(logFile, out, 0o644)
	if err != nil {
		return fmt.Errorf("testdb: %s failed: %w; last output:\n%s", installDB, err, tail(out, 20))
	}
	return nil
}

func (s *Server) serverArgs() []string {
	args := []string{"--no-defaults"} // must come first
	args = append(args, rootArgs()...)
	args = append(args,
		"--datadir="+s.dataDir(),
		"--tmpdir="+filepath.Join(s.dir, "tmp"),
		"--bind-address="+host,
		"--port="+strconv.Itoa(s.port),
		"--socket="+s.socketPath(),
		"--pid-file="+filepath.Join(s.dir, "mariadbd.pid"),
		"--tmpdir="+s.tmpDir(),
		"--log-bin="+filepath.Join(s.dir, "binlog"),
		"--server-id=1",
		"--binlog-format=ROW",
		"--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL",
		"--gtid-strict-mode=1",
		"--log-slave-updates",
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=48M",
		// Commits still reach the OS on every transaction, so a killed
		// mariadbd (Kill) loses nothing; only the fsync is skipped.
		"--innodb-flush-log-at-trx-commit=2",
		"--max-allowed-packet=64M",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
	)
	return append(args, s.opts.ExtraArgs...)
}

// startLocked starts mariadbd and waits until it accepts connections.
// s.mu must be held.
func (s *Server) startLocked() error {
	if s.proc != nil {
		return errors.New("testdb: mariadbd is already running")
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	fmt.Fprintf(logf, "----- %s testdb: starting mariadbd on port %d\n", time.Now().Format(time.RFC3339), s.port)
	cmd := exec.Command(s.mariadbd, s.serverArgs()...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("testdb: start %s: %w", s.mariadbd, err)
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
	s.log.Debug("testdb: mariadbd started", "addr", s.Addr(), "pid", cmd.Process.Pid, "elapsed", time.Since(begin).Round(time.Millisecond))
	return nil
}

func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("testdb: mariadbd exited during startup (%v); last log lines:\n%s", p.err, s.LogTail(30))
		default:
		}
		c, err := s.connectRoot(2 * time.Second)
		if err == nil {
			hangUp(c)
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("testdb: mariadbd not ready after %s (last error: %v); last log lines:\n%s", startTimeout, lastErr, s.LogTail(30))
		}
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// connectRoot uses the passwordless root@127.0.0.1 account that
// mariadb-install-db creates.
func (s *Server) connectRoot(timeout time.Duration) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return client.ConnectWithContext(ctx, s.Addr(), "root", "", "", timeout, withCollation,
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
		return fmt.Errorf("testdb: mariadbd did not shut down within %s and was killed; last log lines:\n%s", stopTimeout, s.LogTail(20))
	}
	if p.err != nil {
		return fmt.Errorf("testdb: mariadbd shutdown: %w; last log lines:\n%s", p.err, s.LogTail(20))
	}
	s.log.Debug("testdb: mariadbd stopped", "addr", s.Addr(), "elapsed", time.Since(begin).Round(time.Millisecond))
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
	return strings.Contains(t, "Address already in use") || strings.Contains(t, "Bind on TCP/IP port")
}

// hangUp sends COM_QUIT first so that mariadbd does not log an "Aborted
// connection" warning, which would clutter LogTail output.
func hangUp(c *client.Conn) {
	if c.Quit() != nil {
		_ = c.Close() // nothing more can be done for a connection that would not quit
	}
}

func withCollation(c *client.Conn) error { return c.SetCollation(sessionCollation) }

// findBinary also looks in the sbin directories because mariadbd lives in
// /usr/sbin, which is not on a regular user's PATH.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("testdb: %s not found in PATH, /usr/sbin or /usr/bin: %w", name, ErrNotInstalled)
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
