package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Flavor names a database server.
type Flavor string

const (
	// MariaDB is Debian's mariadb-server.
	MariaDB Flavor = "mariadb"
	// MySQL is Oracle's MySQL, unpacked from Debian's mysql-server-core into a
	// private prefix by scripts/install-mysql.sh.
	MySQL Flavor = "mysql"
)

// FlavorEnv names the environment variable that picks the flavor of servers
// started without Options.Flavor: mariadb (the default) or mysql.
const FlavorEnv = "VSTREAM_TEST_FLAVOR"

// MySQLPrefixEnv names the environment variable that overrides where
// scripts/install-mysql.sh put MySQL; it is the same variable the script reads.
const MySQLPrefixEnv = "VSTREAM_MYSQL_PREFIX"

// FlavorFromEnv returns the flavor VSTREAM_TEST_FLAVOR names, MariaDB when it is
// unset.
func FlavorFromEnv() (Flavor, error) {
	switch v := os.Getenv(FlavorEnv); v {
	case "", string(MariaDB):
		return MariaDB, nil
	case string(MySQL):
		return MySQL, nil
	default:
		return "", fmt.Errorf("testdb: %s=%q: want %q or %q", FlavorEnv, v, MariaDB, MySQL)
	}
}

// binaries are the programs that initialise a data directory and serve it, and
// for an unpacked MySQL the root its share directory is under.
type binaries struct {
	server  string
	install string // MariaDB only: mariadb-install-db
	root    string // MySQL only: the prefix's unpacked file system, "" for a system install
}

func findServer(f Flavor) (binaries, error) {
	switch f {
	case MariaDB:
		server, err := findBinary("mariadbd")
		if err != nil {
			return binaries{}, err
		}
		install, err := findBinary("mariadb-install-db")
		if err != nil {
			return binaries{}, err
		}
		return binaries{server: server, install: install}, nil
	case MySQL:
		prefix := MySQLPrefix()
		server := filepath.Join(prefix, "bin", "mysqld")
		if isExecutable(server) {
			return binaries{server: server, root: filepath.Join(prefix, "root")}, nil
		}
		return binaries{}, fmt.Errorf("testdb: %s not found (run scripts/install-mysql.sh): %w", server, ErrNotInstalled)
	default:
		return binaries{}, fmt.Errorf("testdb: unknown flavor %q", f)
	}
}

// MySQLPrefix is where scripts/install-mysql.sh installs MySQL:
// $VSTREAM_MYSQL_PREFIX, else ${XDG_CACHE_HOME:-~/.cache}/vstream/mysql.
func MySQLPrefix() string {
	if p := os.Getenv(MySQLPrefixEnv); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "vstream", "mysql")
}

// findBinary also looks in the sbin directories because mariadbd lives in
// /usr/sbin, which is not on a regular user's PATH.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("testdb: %s not found in PATH, /usr/sbin or /usr/bin: %w", name, ErrNotInstalled)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// rootArgs lets the server run as root, which it otherwise refuses to do.
func rootArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// shareArgs point an unpacked MySQL at its own files: its compiled-in paths
// are the package's (/usr/...), which are not there.
func (s *Server) shareArgs() []string {
	if s.bin.root == "" {
		return nil
	}
	return []string{
		"--basedir=" + filepath.Join(s.bin.root, "usr"),
		"--lc-messages-dir=" + filepath.Join(s.bin.root, "usr", "share", "mysql"),
		"--plugin-dir=" + filepath.Join(s.bin.root, "usr", "lib", "mysql", "plugin"),
	}
}

// Both flavors size the redo log the same at initialisation and at every start,
// or the first start resizes the log it has just created.
const redoLog = "48M"

func (s *Server) install() error {
	if err := os.MkdirAll(s.tmpDir(), 0o700); err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	var cmd *exec.Cmd
	switch s.flavor {
	case MariaDB:
		args := []string{
			"--no-defaults",
			"--datadir=" + s.dataDir(),
			"--auth-root-authentication-method=normal",
			"--skip-test-db",
			"--innodb-log-file-size=" + redoLog,
			// Bootstraps running at once in the shared /tmp collide on temporary
			// table names ("Unknown table 'mysql.tmp_user_sys'").
			"--tmpdir=" + s.tmpDir(),
		}
		cmd = exec.Command(s.bin.install, append(args, rootArgs()...)...)
	case MySQL:
		args := []string{"--no-defaults"} // must come first
		args = append(args, rootArgs()...)
		args = append(args, s.shareArgs()...)
		args = append(args,
			"--initialize-insecure",
			"--datadir="+s.dataDir(),
			"--tmpdir="+s.tmpDir(),
			"--innodb-redo-log-capacity="+redoLog,
			"--log-error-verbosity=1",
		)
		cmd = exec.Command(s.bin.server, args...)
	}
	cmd.Dir = s.dir
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	logFile := filepath.Join(s.dir, "install.log")
	_ = os.WriteFile(logFile, out, 0o644)
	if err != nil {
		return fmt.Errorf("testdb: %s failed: %w; last output:\n%s", cmd.Path, err, tail(out, 20))
	}
	return nil
}

func (s *Server) serverArgs() []string {
	args := []string{"--no-defaults"} // must come first
	args = append(args, rootArgs()...)
	args = append(args, s.shareArgs()...)
	args = append(args,
		"--datadir="+s.dataDir(),
		"--tmpdir="+s.tmpDir(),
		"--bind-address="+host,
		"--port="+strconv.Itoa(s.port),
		"--socket="+s.socketPath(),
		"--pid-file="+filepath.Join(s.dir, "server.pid"),
		"--log-bin="+filepath.Join(s.dir, "binlog"),
		"--server-id="+strconv.FormatUint(uint64(s.serverID), 10),
		"--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL",
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=64M",
		// Commits still reach the OS on every transaction, so a killed
		// server (Kill) loses nothing; only the fsync is skipped.
		"--innodb-flush-log-at-trx-commit=2",
		"--max-allowed-packet=64M",
		"--character-set-server=utf8mb4",
	)
	if s.replica {
		args = append(args, replicaArgs(s.dir)...)
	}
	switch s.flavor {
	case MariaDB:
		args = append(args,
			"--binlog-format=ROW",
			"--gtid-strict-mode=1",
			"--log-slave-updates",
			"--innodb-log-file-size="+redoLog,
			"--collation-server=utf8mb4_general_ci",
		)
		args = append(args, s.opts.ExtraArgs...)
		return append(args, s.opts.MariaDBArgs...)
	case MySQL:
		args = append(args,
			// ROW is MySQL's default (and setting it is deprecated); the
			// collation stays MySQL's default, utf8mb4_0900_ai_ci, as users have it.
			"--gtid-mode=ON",
			"--enforce-gtid-consistency=ON",
			"--log-replica-updates=ON",
			"--innodb-redo-log-capacity="+redoLog,
			// The X protocol listens on 33060 by default, where a second server
			// would collide; the tests only speak the classic protocol.
			"--mysqlx=OFF",
			// SELECT ... INTO OUTFILE is allowed below the server's own directory
			// (the default, /var/lib/mysql-files, is not there).
			"--secure-file-priv="+s.tmpDir(),
			// Saves memory and start time; nothing here reads it.
			"--performance-schema=OFF",
			// Seq's recursive expressions count as far as the tests' tables go.
			"--cte-max-recursion-depth=100000000",
		)
		args = append(args, s.opts.ExtraArgs...)
		return append(args, s.opts.MySQLArgs...)
	}
	return append(args, s.opts.ExtraArgs...)
}

// GTIDQuery is the statement that reads the server's executed GTID set: MariaDB's
// @@gtid_binlog_pos (one GTID per domain) or MySQL's @@gtid_executed.
func (s *Server) GTIDQuery() string {
	if s.flavor == MySQL {
		return "SELECT @@GLOBAL.gtid_executed"
	}
	return "SELECT @@GLOBAL.gtid_binlog_pos"
}

// PositionFlavor is the flavor prefix of this server's positions as the stream
// writes them: "MariaDB" or "MySQL56".
func (s *Server) PositionFlavor() string {
	if s.flavor == MySQL {
		return "MySQL56"
	}
	return "MariaDB"
}

// Position returns the server's current executed GTID set as a stream position,
// "MariaDB/0-1-5" or "MySQL56/<uuid>:1-5".
func (s *Server) Position() (string, error) {
	c, err := s.Conn("")
	if err != nil {
		return "", err
	}
	defer hangUp(c)
	r, err := c.Execute(s.GTIDQuery())
	if err != nil {
		return "", fmt.Errorf("testdb: %s: %w", s.GTIDQuery(), err)
	}
	defer r.Close()
	// MySQL breaks a long set over lines; a position is one line.
	set := strings.ReplaceAll(resultString(r, 0, 0), "\n", "")
	return s.PositionFlavor() + "/" + set, nil
}

// BinlogEnd returns the server's current binlog file and the offset of its end: SHOW MASTER
// STATUS on MariaDB, SHOW BINARY LOG STATUS on MySQL (which removed the older name in 8.4).
func (s *Server) BinlogEnd() (string, uint32, error) {
	q := "SHOW MASTER STATUS"
	if s.flavor == MySQL {
		q = "SHOW BINARY LOG STATUS"
	}
	c, err := s.Conn("")
	if err != nil {
		return "", 0, err
	}
	defer hangUp(c)
	r, err := c.Execute(q)
	if err != nil {
		return "", 0, fmt.Errorf("testdb: %s: %w", q, err)
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		return "", 0, fmt.Errorf("testdb: %s returned no row: is log_bin on?", q)
	}
	off, err := r.GetUint(0, 1)
	if err != nil {
		return "", 0, fmt.Errorf("testdb: %s: %w", q, err)
	}
	return resultString(r, 0, 0), uint32(off), nil
}

// Seq returns a table expression for the integers 1..n in a column named seq,
// for INSERT ... SELECT ... FROM: MariaDB's sequence engine table seq_1_to_n, or
// on MySQL a recursive common table expression under the same alias.
func (s *Server) Seq(n int) string {
	name := fmt.Sprintf("seq_1_to_%d", n)
	if s.flavor == MySQL {
		return fmt.Sprintf("(WITH RECURSIVE s (seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < %d) SELECT seq FROM s) AS %s", n, name)
	}
	return name
}

// FileDir is a directory the server reads files from (LOAD DATA INFILE) and writes them to
// (SELECT ... INTO OUTFILE): MySQL's secure_file_priv is the server's own tmp directory,
// which MariaDB, which has no such limit here, reads and writes as well.
func (s *Server) FileDir() string { return s.tmpDir() }
