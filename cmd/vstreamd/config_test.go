package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("mysql-dsn: u:p@tcp(h:1)/fromfile\nshard: s1\nlisten: 127.0.0.1:1\n"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("mysql-dns: x\n"), 0o600)
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
