package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/vstreamer"
	"github.com/vstream-cdc/vstream/vstreamer/history"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("mysql-dsn: u:p@tcp(h:1)/fromfile\nshard: s1\nlisten: 127.0.0.1:1\n"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("mysql-dns: x\n"), 0o600)
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	limitsFile := filepath.Join(dir, "limits.yaml")
	os.WriteFile(limitsFile, []byte("mysql-dsn: u@tcp(h:1)/d\nmax-streams: 5\nmax-starts-per-second: 2.5\n"), 0o600)
	vschemaFile := filepath.Join(dir, "vschema.json")
	os.WriteFile(vschemaFile, []byte(`{"sharded": true, "vindexes": {"hash": {"type": "hash"}},
		"tables": {"t1": {"column_vindexes": [{"column": "id", "name": "hash"}]}}}`), 0o600)
	positionsFile := filepath.Join(dir, "positions.yaml")
	os.WriteFile(positionsFile, []byte("mysql-dsn: u@tcp(h:1)/d\npositions: filepos\n"), 0o600)
	badVSchema := filepath.Join(dir, "bad-vschema.json")
	os.WriteFile(badVSchema, []byte(`{"sharded": true, "tables": {"t1": {}}}`), 0o600)
	databasesFile := filepath.Join(dir, "databases.yaml")
	os.WriteFile(databasesFile, []byte("mysql-dsn: u@tcp(h:1)/d\ndatabases: orders, billing\n"), 0o600)
	historyFile := filepath.Join(dir, "history.yaml")
	os.WriteFile(historyFile, []byte("mysql-dsn: u@tcp(h:1)/d\nschema-history-dir: /srv/history\n"), 0o600)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want func(*config) bool
		err  string
	}{
		{"flags", []string{"--mysql-dsn", "root:pw@tcp(127.0.0.1:3306)/app"}, nil,
			func(c *config) bool {
				return c.MySQLDSN == "root:pw@tcp(127.0.0.1:3306)/app" && c.Listen == "127.0.0.1:15991" && c.Shard == "0"
			}, ""},
		{"env fallback", nil, map[string]string{"VSTREAM_MYSQL_DSN": "u@tcp(h:1)/d", "VSTREAM_AUTH_TOKEN": "tok"},
			func(c *config) bool { return c.MySQLDSN == "u@tcp(h:1)/d" && c.AuthToken == "tok" }, ""},
		{"file, env over file, flag over env", []string{"--config", file, "--listen", "127.0.0.1:9"}, map[string]string{"VSTREAM_SHARD": "s2", "VSTREAM_LISTEN": "127.0.0.1:8"},
			func(c *config) bool {
				return c.MySQLDSN == "u:p@tcp(h:1)/fromfile" && c.Shard == "s2" && c.Listen == "127.0.0.1:9"
			}, ""},
		{"unknown key in file", []string{"--config", bad}, nil, nil, "mysql-dns"},
		{"missing dsn", nil, nil, nil, "mysql-dsn is required"},
		{"bad dsn", []string{"--mysql-dsn", "nonsense"}, nil, nil, "want user:pass@tcp(host:port)/db"},
		{"bad level", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--log-level", "loud"}, nil, nil, "log-level"},
		{"bad flavor", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--flavor", "oracle"}, nil, nil, "flavor"},
		{"positions default gtid", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool { return c.Positions == "gtid" }, ""},
		{"positions flag", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--positions", "filepos"}, nil,
			func(c *config) bool { return c.Positions == "filepos" }, ""},
		{"positions env", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, map[string]string{"VSTREAM_POSITIONS": "filepos"},
			func(c *config) bool { return c.Positions == "filepos" }, ""},
		{"positions file, flag over file", []string{"--config", positionsFile, "--positions", "gtid"}, nil,
			func(c *config) bool { return c.Positions == "gtid" }, ""},
		{"positions file", []string{"--config", positionsFile}, nil,
			func(c *config) bool { return c.Positions == "filepos" }, ""},
		{"bad positions", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--positions", "binlog"}, nil, nil, `positions "binlog": want gtid or filepos`},
		{"filepos with schema history", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--positions", "filepos", "--schema-history-dir", dir}, nil, nil, "cannot serve --positions filepos"},
		{"token from a file", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--auth-token-file", tokenFile}, nil,
			func(c *config) bool { return c.AuthToken == "s3cret" }, ""},
		{"token twice", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--auth-token-file", tokenFile, "--auth-token", "x"}, nil, nil, "give one of them"},
		{"bad max-streams", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--max-streams", "many"}, nil, nil, "max-streams"},
		{"bad start rate", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--max-starts-per-second", "-1"}, nil, nil, "max-starts-per-second"},
		{"vschema from a file", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--vschema-file", vschemaFile}, nil,
			func(c *config) bool { return c.parsed.vschema != nil }, ""},
		{"no vschema", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool { return c.parsed.vschema == nil }, ""},
		{"vschema file missing", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--vschema-file", filepath.Join(dir, "none.json")}, nil, nil, "vschema-file"},
		{"bad vschema", nil, map[string]string{"VSTREAM_MYSQL_DSN": "u@tcp(h:1)/d", "VSTREAM_VSCHEMA_FILE": badVSchema}, nil,
			"missing primary col vindex for table: t1"},
		{"schema history dir", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--schema-history-dir", filepath.Join(dir, "hist")}, nil,
			func(c *config) bool { return c.SchemaHistoryDir == filepath.Join(dir, "hist") }, ""},
		{"schema history dir from env", nil, map[string]string{"VSTREAM_MYSQL_DSN": "u@tcp(h:1)/d", "VSTREAM_SCHEMA_HISTORY_DIR": "/var/lib/vstream"}, func(c *config) bool { return c.SchemaHistoryDir == "/var/lib/vstream" }, ""},
		{"schema history dir from YAML", []string{"--config", historyFile}, nil,
			func(c *config) bool { return c.SchemaHistoryDir == "/srv/history" }, ""},
		{"schema history dir is a file", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--schema-history-dir", tokenFile}, nil, nil, "is not a directory"},
		{"shared reader by default", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool { return !c.parsed.ownReaders }, ""},
		{"shared reader off", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--shared-reader=false"}, nil,
			func(c *config) bool { return c.parsed.ownReaders }, ""},
		{"shared reader off from env", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, map[string]string{"VSTREAM_SHARED_READER": "false"},
			func(c *config) bool { return c.parsed.ownReaders }, ""},
		{"bad shared reader", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--shared-reader", "maybe"}, nil, nil, `shared-reader "maybe": want true or false`},
		{"databases default", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool { return c.parsed.databases == nil }, ""},
		{"databases flag", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--databases", "*"}, nil,
			func(c *config) bool { return slices.Equal(c.parsed.databases, []string{"*"}) }, ""},
		{"databases env", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, map[string]string{"VSTREAM_DATABASES": "a,b"},
			func(c *config) bool { return slices.Equal(c.parsed.databases, []string{"a", "b"}) }, ""},
		{"databases from YAML", []string{"--config", databasesFile}, nil,
			func(c *config) bool { return slices.Equal(c.parsed.databases, []string{"orders", "billing"}) }, ""},
		{"databases flag over YAML", []string{"--config", databasesFile, "--databases", "shop"}, nil,
			func(c *config) bool { return slices.Equal(c.parsed.databases, []string{"shop"}) }, ""},
		{"databases with an empty name", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--databases", "a,,b"}, nil, nil, "an empty name"},
		{"no cpu profile by default", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool { return c.CPUProfile == "" }, ""},
		{"cpu profile flag", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--cpuprofile", "/tmp/cpu.pprof"}, nil,
			func(c *config) bool { return c.CPUProfile == "/tmp/cpu.pprof" }, ""},
		{"cpu profile env", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, map[string]string{"VSTREAM_CPUPROFILE": "/tmp/e.pprof"},
			func(c *config) bool { return c.CPUProfile == "/tmp/e.pprof" }, ""},
		{"bad drain timeout", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--drain-timeout", "soon"}, nil, nil, "drain-timeout"},
		{"purge alarm defaults", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, nil,
			func(c *config) bool {
				return c.parsed.purgeWarn == server.PurgeWarn{Files: server.DefaultPurgeWarnFiles, Age: server.DefaultPurgeWarnAge, Interval: server.DefaultPurgeCheckInterval}
			}, ""},
		{"purge alarm flags", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--purge-warn-files", "-1", "--purge-warn-age", "90m", "--purge-check-interval", "5s"}, nil,
			func(c *config) bool {
				return c.parsed.purgeWarn == server.PurgeWarn{Files: -1, Age: 90 * time.Minute, Interval: 5 * time.Second}
			}, ""},
		{"purge alarm env", []string{"--mysql-dsn", "u@tcp(h:1)/d"}, map[string]string{"VSTREAM_PURGE_WARN_FILES": "3", "VSTREAM_PURGE_WARN_AGE": "0"},
			func(c *config) bool { return c.parsed.purgeWarn.Files == 3 && c.parsed.purgeWarn.Age == 0 }, ""},
		{"bad purge warn files", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--purge-warn-files", "-2"}, nil, nil, "purge-warn-files"},
		{"bad purge warn age", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--purge-warn-age", "a while"}, nil, nil, "purge-warn-age"},
		{"bad purge check interval", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--purge-check-interval", "0s"}, nil, nil, "purge-check-interval"},
		{"limits from YAML numbers", []string{"--config", limitsFile}, nil,
			func(c *config) bool {
				l, err := c.limits()
				return err == nil && l.MaxStreams == 5 && l.StartsPerSecond == 2.5
			}, ""},
		{"database client cert without key", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--mysql-tls-cert", "c.pem"}, nil, nil, "mysql-tls-cert and mysql-tls-key"},
		{"bad skip-verify", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--mysql-tls-skip-verify", "maybe"}, nil, nil, "mysql-tls-skip-verify"},
		{"tls cert without key", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--tls-cert", "c.pem"}, nil, nil, "go together"},
		{"client CA without server cert", []string{"--mysql-dsn", "u@tcp(h:1)/d", "--tls-client-ca", "ca.pem"}, nil, nil, "needs tls-cert"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(c.args, env(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(cfg) {
				t.Errorf("config = %+v", cfg)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	if got := redact("user:secret@tcp(h:1)/d"); strings.Contains(got, "secret") {
		t.Errorf("redact leaked the password: %s", got)
	}
}

func TestCheckConfig(t *testing.T) {
	var stderr strings.Builder
	env := func(string) string { return "" }
	// --check-config validates without connecting to the database (nothing listens on port 1).
	if code := run([]string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--check-config"}, env, &stderr); code != 0 {
		t.Fatalf("valid config: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--max-streams", "x", "--check-config"}, env, &stderr); code != 2 || !strings.Contains(stderr.String(), "max-streams") {
		t.Fatalf("bad config: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--databases", "shop,mysql", "--check-config"}, env, &stderr); code != 2 || !strings.Contains(stderr.String(), "mysql is a system schema") {
		t.Fatalf("system schema in databases: exit %d: %s", code, stderr.String())
	}
}

// TestSchemaHistoryDirLocked: a second vstreamd on a history directory in use stops at start
// and says why; a check beside the running server does not touch the directory.
func TestSchemaHistoryDirLocked(t *testing.T) {
	dir := t.TempDir()
	h, err := history.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := func(string) string { return "" }
	var stderr strings.Builder
	args := []string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--listen", "127.0.0.1:0", "--schema-history-dir", dir}
	if code := run(args, env, &stderr); code != 2 || !strings.Contains(stderr.String(), "in use") || !strings.Contains(stderr.String(), "--schema-history-dir") {
		t.Fatalf("second server on the directory: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run(append(args, "--check-config"), env, &stderr); code != 0 {
		t.Fatalf("check beside the server: exit %d: %s", code, stderr.String())
	}
}

// TestCheckConfigBindsNothing: a check beside a running server (which holds the port) passes
// and leaves the port to it.
func TestCheckConfigBindsNothing(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer metrics.Close()
	var stderr strings.Builder
	args := []string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--listen", lis.Addr().String(),
		"--metrics-listen", metrics.Addr().String(), "--check-config"}
	if code := run(args, func(string) string { return "" }, &stderr); code != 0 || !strings.Contains(stderr.String(), "configuration is valid") {
		t.Fatalf("check with the port taken: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	args = []string{"--mysql-dsn", "u:p@tcp(127.0.0.1:1)/d", "--listen", "no-such-host.invalid:1", "--check-config"}
	if code := run(args, func(string) string { return "" }, &stderr); code != 2 || !strings.Contains(stderr.String(), "listen") {
		t.Fatalf("unresolvable listen address: exit %d: %s", code, stderr.String())
	}
}

// TestParsedOnce: validate keeps what it parsed, and run uses that.
func TestParsedOnce(t *testing.T) {
	cfg, err := loadConfig([]string{"--mysql-dsn", "u:p@tcp(h:1)/d", "--log-level", "debug", "--max-streams", "7",
		"--drain-timeout", "3s", "--mysql-tls-skip-verify", "true"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.parsed
	if p.level != slog.LevelDebug || p.limits.MaxStreams != 7 || p.drain != 3*time.Second || !p.skipVerify ||
		p.dsn != (dsn{User: "u", Password: "p", Addr: "h:1", Database: "d"}) {
		t.Errorf("parsed = %+v", p)
	}
}

// TestMetricsServeErrorLogged: the metrics server failing is logged, not dropped; closing it
// on shutdown is not an error.
func TestMetricsServeErrorLogged(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis.Close() // Accept fails at once
	serveMetrics(&http.Server{ReadHeaderTimeout: time.Second}, lis, log)
	if !strings.Contains(logs.String(), "metrics server stopped") {
		t.Fatalf("log = %q", logs.String())
	}

	logs.Reset()
	lis, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: time.Second}
	done := make(chan struct{})
	go func() { serveMetrics(hs, lis, log); close(done) }()
	hs.Close()
	<-done
	if logs.Len() != 0 {
		t.Errorf("closing logged %q", logs.String())
	}
}

// TestMetricsAddressServesStatusPage: --metrics-listen serves the status page at / beside the
// metrics; with the database down the page still names it and says why it is not described.
func TestMetricsAddressServesStatusPage(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close() // nothing answers there
	engine, err := vstreamer.NewEngine(vstreamer.Config{Addr: addr, User: "u", Database: "d"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv := server.New(engine, server.Options{Registerer: reg})
	hs := httptest.NewServer(metricsHandler(reg, srv, slog.New(slog.DiscardHandler)))
	defer hs.Close()
	for path, want := range map[string]string{
		"/":            "<title>vstreamd status</title>",
		"/status.json": `"address": "` + addr + `"`,
		"/metrics":     "vstream_streams_open 0",
	} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, want %q in:\n%s", path, resp.Status, want, body)
		}
		if path == "/" && (!strings.Contains(string(body), addr) || !strings.Contains(string(body), `id="source-error"`)) {
			t.Errorf("the page does not name the unreachable source %s:\n%s", addr, body)
		}
	}
}

func TestCPUProfileWritten(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := startCPUProfile(file)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v, %v", file, fi, err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof")); err == nil || !strings.Contains(err.Error(), "cpuprofile") {
		t.Fatalf("err = %v, want a cpuprofile error", err)
	}
}
