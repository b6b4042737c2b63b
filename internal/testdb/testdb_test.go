package testdb

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

func queryString(t *testing.T, c *client.Conn, q string) string {
	t.Helper()
	r, err := c.Execute(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if r.RowNumber() != 1 {
		t.Fatalf("%s: got %d rows, want 1", q, r.RowNumber())
	}
	v, err := r.GetString(0, 0)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func got(t *testing.T, c *client.Conn, q string) string { return queryString(t, c, q) }

func TestServer(t *testing.T) {
	begin := time.Now()
	srv, err := Start(Options{
		Database: "vs_test",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Logf("Start took %s", time.Since(begin))

	if srv.Host() != "127.0.0.1" || srv.Port() == 0 {
		t.Fatalf("Host/Port = %s/%d", srv.Host(), srv.Port())
	}
	wantDSN := "vstream:vstream@tcp(" + srv.Addr() + ")/vs_test"
	if got := srv.DSN("vs_test"); got != wantDSN {
		t.Fatalf("DSN = %q, want %q", got, wantDSN)
	}

	c, err := srv.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"SELECT @@log_bin":              "1",
		"SELECT @@binlog_format":        "ROW",
		"SELECT @@binlog_row_image":     "FULL",
		"SELECT @@binlog_row_metadata":  "FULL",
		"SELECT @@character_set_server": "utf8mb4",
		"SELECT @@time_zone":            "SYSTEM",
		"SELECT CURRENT_USER()":         "vstream@%",
		srv.GTIDQuery():                 "",
	}
	switch srv.Flavor() {
	case MariaDB:
		settings["SELECT @@gtid_strict_mode"] = "1"
		settings["SELECT @@log_slave_updates"] = "1"
		settings["SELECT @@collation_connection"] = "utf8mb4_general_ci"
	case MySQL:
		settings["SELECT @@gtid_mode"] = "ON"
		settings["SELECT @@enforce_gtid_consistency"] = "ON"
		settings["SELECT @@log_replica_updates"] = "1"
		settings["SELECT @@collation_connection"] = "utf8mb4_0900_ai_ci"
	}
	for q, want := range settings {
		if got := queryString(t, c, q); got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
	hangUp(c)

	if err := srv.Exec(
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32))",
		"BEGIN",
		"INSERT INTO t VALUES (1, 'one'), (2, 'two')",
		"COMMIT",
	); err != nil {
		t.Fatal(err)
	}
	err = srv.Exec("INSERT INTO t VALUES (1, 'dup')")
	if err == nil || !strings.Contains(err.Error(), "INSERT INTO t VALUES (1, 'dup')") {
		t.Fatalf("Exec error should name the statement, got %v", err)
	}

	c, err = srv.Conn("vs_test")
	if err != nil {
		t.Fatal(err)
	}
	pos := queryString(t, c, srv.GTIDQuery())
	if pos == "" {
		t.Fatalf("%s is empty after writes", srv.GTIDQuery())
	}
	hangUp(c)

	port := srv.Port()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Port() != port {
		t.Fatalf("port changed across Restart: %d -> %d", port, srv.Port())
	}
	if err := srv.Exec("INSERT INTO t VALUES (3, 'three')"); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	if err := srv.Exec("SELECT 1"); err == nil {
		t.Fatal("Exec succeeded on a killed server")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	c, err = srv.Conn("vs_test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := queryString(t, c, "SELECT GROUP_CONCAT(v ORDER BY id) FROM t"); got != "one,two,three" {
		t.Fatalf("rows after restarts = %q", got)
	}
	if got := queryString(t, c, srv.GTIDQuery()); got == pos || got == "" {
		t.Fatalf("%s after restarts = %q, before = %q", srv.GTIDQuery(), got, pos)
	}
	if tail := srv.LogTail(5); !strings.Contains(tail, "ready for connections") && !strings.Contains(tail, "port:") {
		t.Errorf("LogTail(5) does not look like a server log:\n%s", tail)
	}
	if p, err := srv.Position(); err != nil || !strings.HasSuffix(p, "/"+got(t, c, srv.GTIDQuery())) {
		t.Errorf("Position() = %q, %v", p, err)
	}

	dir := srv.Dir()
	srv.Close()
	if os.Getenv(KeepEnv) != "1" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("Close left %s behind (stat err %v)", dir, err)
		}
	}
}

func TestLongDirUsesShortSocketPath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	parent := t.TempDir() + "/" + strings.Repeat("d", 90)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// Root-run tests need the data directory to be reachable; t.TempDir is.
	srv, err := Start(Options{Dir: parent})
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Exec("CREATE TABLE x (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
}

func TestStartFailureReportsLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	_, err := Start(Options{ExtraArgs: []string{"--no-such-option-for-testdb"}})
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err == nil || !strings.Contains(err.Error(), "no-such-option-for-testdb") {
		t.Fatalf("want an error quoting the server log, got %v", err)
	}
	t.Logf("Start error: %v", err)
}

func TestMissingBinaryMentionsInstall(t *testing.T) {
	_, err := findBinary("no-such-mariadbd-binary")
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "scripts/install-deps.sh") {
		t.Fatalf("got %v", err)
	}
	t.Setenv(MySQLPrefixEnv, t.TempDir())
	_, err = findServer(MySQL)
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "scripts/install-mysql.sh") {
		t.Fatalf("got %v", err)
	}
}

func TestFlavorFromEnv(t *testing.T) {
	for env, want := range map[string]Flavor{"": MariaDB, "mariadb": MariaDB, "mysql": MySQL} {
		t.Setenv(FlavorEnv, env)
		if got, err := FlavorFromEnv(); err != nil || got != want {
			t.Errorf("%s=%q: got %q, %v; want %q", FlavorEnv, env, got, err, want)
		}
	}
	t.Setenv(FlavorEnv, "postgres")
	if _, err := FlavorFromEnv(); err == nil || !strings.Contains(err.Error(), FlavorEnv) {
		t.Errorf("%s=postgres: got %v, want an error naming the variable", FlavorEnv, err)
	}
}
