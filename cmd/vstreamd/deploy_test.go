package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/cliconfig"
)

// The operations kit in deploy/ is checked here, against vstreamd's own configuration
// loader, so that it cannot drift from the flags and keys vstreamd accepts.
const deployDir = "../../deploy"

// envFile reads the KEY=VALUE lines of deploy/vstreamd.env, as systemd's EnvironmentFile does.
func envFile(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "vstreamd.env"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "VSTREAM_") {
			t.Fatalf("vstreamd.env: %q is not VSTREAM_KEY=value", line)
		}
		env[k] = v
	}
	return env
}

// TestDeployExampleConfig: deploy/vstreamd.yaml loads with vstreamd's loader (with the secrets
// of deploy/vstreamd.env, as the systemd unit runs it), names every key vstreamd accepts, set
// or commented out, and its commented-out keys are real keys too.
func TestDeployExampleConfig(t *testing.T) {
	file := filepath.Join(deployDir, "vstreamd.yaml")
	env := envFile(t)
	cfg, err := loadConfig([]string{"--config", file}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	if cfg.MySQLDSN != env["VSTREAM_MYSQL_DSN"] || cfg.MetricsListen == "" || cfg.SchemaHistoryDir == "" {
		t.Fatalf("loaded %+v", cfg)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cliconfig.ExampleKeys(data, &config{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, d := range flagDefs {
		if !keys[d.name] {
			t.Errorf("%s does not show the key %s (%s)", file, d.name, d.usage)
		}
	}
	if len(keys) != len(flagDefs) {
		t.Errorf("%s has %d keys, vstreamd accepts %d", file, len(keys), len(flagDefs))
	}
}

// TestDeploySystemdUnit: the unit's ExecStart runs vstreamd with flags it accepts, on the
// example configuration; the schema history lies in the one directory the unit lets the
// service write; and systemd itself finds nothing to object to in the unit.
func TestDeploySystemdUnit(t *testing.T) {
	unitFile := filepath.Join(deployDir, "vstreamd.service")
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	directives := map[string][]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			directives[k] = append(directives[k], v)
		}
	}
	for k, want := range map[string]string{
		"ExecStart": "", "EnvironmentFile": "/etc/vstreamd/vstreamd.env", "Restart": "on-failure",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "DynamicUser": "yes", "StateDirectory": "vstreamd",
	} {
		if len(directives[k]) != 1 || want != "" && directives[k][0] != want {
			t.Errorf("%s: %s=%q, want one, %q", unitFile, k, directives[k], want)
		}
	}
	// vstreamd does not handle SIGHUP (it would end the process): no ExecReload.
	if _, ok := directives["ExecReload"]; ok {
		t.Errorf("%s: ExecReload, but vstreamd does not reload", unitFile)
	}
	args := strings.Fields(directives["ExecStart"][0])
	if len(args) == 0 || filepath.Base(args[0]) != "vstreamd" {
		t.Fatalf("ExecStart %q does not run vstreamd", args)
	}
	args = args[1:]
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("ExecStart %q names no --config", args)
	}
	if args[i+1] != "/etc/vstreamd/vstreamd.yaml" {
		t.Fatalf("ExecStart's --config %s is not where deploy/README.md installs vstreamd.yaml", args[i+1])
	}
	args[i+1] = filepath.Join(deployDir, "vstreamd.yaml")
	env := envFile(t)
	cfg, err := loadConfig(args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("vstreamd %q: %v", args, err)
	}
	if state := "/var/lib/" + directives["StateDirectory"][0]; !strings.HasPrefix(cfg.SchemaHistoryDir, state+"/") {
		t.Errorf("schema-history-dir %s is outside the unit's state directory %s, read-only under ProtectSystem=strict",
			cfg.SchemaHistoryDir, state)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax is not verified")
	}
	// verify wants the ExecStart binary to exist; the test binary stands in for vstreamd.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "vstreamd.service")
	os.WriteFile(unit, bytes.ReplaceAll(data, []byte("/usr/local/bin/vstreamd"), []byte(self)), 0o600)
	out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput()
	// verify exits 0 on unknown keys and bad values, which it only warns about: any output fails.
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
