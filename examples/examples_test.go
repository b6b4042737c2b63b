// Package examples runs the client examples in other languages against a real vstreamd on a
// real database (MariaDB or MySQL, as testdb picks): each starts a stream, saves the resume
// position, and resumes from it.
package examples

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "ex"}, &db))
}

func serve(t *testing.T) string {
	t.Helper()
	return testserver.Serve(t, db, "ex")
}

// output collects a process's stdout and signals when a line contains a marker.
type output struct {
	mu    sync.Mutex
	lines []string
}

func (o *output) has(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

func start(t *testing.T, name string, args ...string) (*exec.Cmd, *output, chan error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &output{}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			out.mu.Lock()
			out.lines = append(out.lines, sc.Text())
			out.mu.Unlock()
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out, done
}

func wait(t *testing.T, done chan error, out *output) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("example failed: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("example did not finish:\n%s", out)
	}
}

// waitStarted waits for an example started at "current" to print its first resume point,
// which comes before any row: a row written before it would fall before the stream's start.
func waitStarted(t *testing.T, out *output, done chan error) {
	t.Helper()
	testkit.WaitFor(t, 60*time.Second, "the stream to start", func() bool {
		select {
		case err := <-done:
			t.Fatalf("example exited before streaming: %v\n%s", err, out)
		default:
		}
		return out.has("VGTID")
	})
}

// runResumable checks an example that takes --server, --position-file, --table, --max-rows.
func runResumable(t *testing.T, table string, command ...string) {
	addr := serve(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v VARCHAR(10))")
	pos := filepath.Join(t.TempDir(), "pos.json")
	args := append(command[1:], "--server", addr, "--position-file", pos, "--table", table, "--max-rows", "1")

	_, out, done := start(t, command[0], args...)
	waitStarted(t, out, done)
	testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (1, 'one')")
	wait(t, done, out)
	if !out.has("ROW " + table + " 1,one") {
		t.Fatalf("first run did not print the row:\n%s", out)
	}
	if _, err := os.Stat(pos); err != nil {
		t.Fatalf("no resume position saved: %v", err)
	}

	testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (2, 'two')")
	_, out, done = start(t, command[0], args...)
	wait(t, done, out)
	if !out.has("ROW "+table+" 2,two") || out.has("1,one") {
		t.Fatalf("resumed run should print exactly the second row:\n%s", out)
	}
}

func TestPython(t *testing.T) {
	runResumable(t, "ex_python", "/usr/bin/python3", "python/stream.py")
}

func TestNode(t *testing.T) {
	if _, err := os.Stat("node/node_modules"); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = "node"
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	runResumable(t, "ex_node", "node", "node/stream.js")
}

func TestGrpcurl(t *testing.T) {
	addr := serve(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ex_grpcurl", "CREATE TABLE ex_grpcurl (id INT PRIMARY KEY, v VARCHAR(10))")
	pos := filepath.Join(t.TempDir(), "pos.json")
	// Build grpcurl first so the timed runs below measure streaming, not compiling.
	if out, err := exec.Command("go", "build", "-o", os.DevNull, "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3").CombinedOutput(); err != nil {
		if out2, err2 := exec.Command("go", "run", "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3", "-version").CombinedOutput(); err2 != nil {
			t.Fatalf("grpcurl: %v %s %s", err, out, out2)
		}
	}
	_, out, done := start(t, "./grpcurl/stream.sh", addr, pos, "8")
	waitStarted(t, out, done)
	testkit.MustExec(t, db, "INSERT INTO ex_grpcurl VALUES (1, 'one')")
	wait(t, done, out)
	// Row values are base64 in grpcurl's JSON: "1one" and "2two".
	if !out.has("MW9uZQ==") {
		t.Fatalf("first run did not print the row:\n%s", out)
	}
	testkit.MustExec(t, db, "INSERT INTO ex_grpcurl VALUES (2, 'two')")
	_, out, done = start(t, "./grpcurl/stream.sh", addr, pos, "8")
	wait(t, done, out)
	if !out.has("MnR3bw==") || out.has("MW9uZQ==") {
		t.Fatalf("resumed run should print exactly the second row:\n%s", out)
	}
}
