package testkit

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

// TestVstreamd: Build builds vstreamd from a package's directory; StartVstreamd returns a
// vstreamd that takes connections; Stop ends it cleanly (its log says it shuts down), Start
// runs it again on the same address, and Kill ends it so that the address is free.
func TestVstreamd(t *testing.T) {
	MustExec(t, db, "CREATE TABLE IF NOT EXISTS kit (id INT PRIMARY KEY)")
	dir := t.TempDir()
	if err := Build(dir, "./cmd/vstreamd"); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "vstreamd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logged := func() string {
		b, _ := os.ReadFile(logFile.Name())
		return string(b)
	}
	v, err := StartVstreamd(filepath.Join(dir, "vstreamd"), logFile, "--mysql-dsn", db.DSN("test"))
	if err != nil {
		t.Fatalf("%v\n%s", err, logged())
	}
	t.Cleanup(v.Kill)
	// It listens before it handles signals: a SIGTERM before it says it serves would kill it.
	WaitFor(t, 10*time.Second, "vstreamd to say it serves", func() bool { return strings.Contains(logged(), "vstreamd serving") })
	v.Stop(30 * time.Second)
	if _, err := net.Dial("tcp", v.Addr); err == nil {
		t.Fatalf("%s takes connections after Stop", v.Addr)
	}
	if !strings.Contains(logged(), "shutting down") {
		t.Errorf("log of a clean stop says nothing of shutting down:\n%s", logged())
	}
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	if err := v.WaitListening(10 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, logged())
	}
	v.Kill()
	if _, err := net.Dial("tcp", v.Addr); err == nil {
		t.Fatalf("%s takes connections after Kill", v.Addr)
	}
}
