package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestOnPurged: a stream resumed from a position whose binlogs the server has purged either
// exits 1 naming the purge (--on-purged fail, the default), or warns, copies its tables again
// and streams on (--on-purged when_needed): it prints the table as the source has it now,
// then the changes after.
func TestOnPurged(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS purged_t", "CREATE TABLE purged_t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO purged_t VALUES (1, 'a'), (2, 'b')")
	old := strings.TrimSpace(vstream(t, "position", "--server", addr))
	testkit.MustExec(t, db, "INSERT INTO purged_t VALUES (3, 'c')", "FLUSH BINARY LOGS",
		"UPDATE purged_t SET v = 'a2' WHERE id = 1", "FLUSH BINARY LOGS",
		"DELETE FROM purged_t WHERE id = 2", "FLUSH BINARY LOGS")
	if err := db.PurgeBinaryLogs(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	base := []string{"--server", addr, "--position", old, "--tables", "purged_t", "--output", "json"}
	cases := []struct {
		name string
		args []string
		code int
		// stderr holds each of these.
		stderr []string
		// golden names the expected stdout under testdata/; the stream runs until it prints
		// the row inserted once the copy is out.
		golden string
	}{
		{name: "default", code: 1, stderr: []string{"FailedPrecondition", "position purged", "--on-purged when_needed"}},
		{name: "fail", args: []string{"--on-purged", "fail"}, code: 1, stderr: []string{"position purged", "--on-purged when_needed"}},
		{name: "when_needed", args: []string{"--on-purged", "when_needed"}, code: 0,
			stderr: []string{"level=WARN", "position purged from the server's binlogs: starting over with a table copy"}, golden: "purged_when_needed.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w := &untilWriter{marker: `"id":4,`, cancel: cancel}
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(ctx, append(append([]string{}, base...), c.args...), w, &stderr) }()
			if c.golden != "" {
				// The row inserted once the copy is printed comes from the binlog after it.
				testkit.WaitFor(t, 20*time.Second, "the copy", func() bool {
					w.mu.Lock()
					defer w.mu.Unlock()
					return strings.Contains(w.buf.String(), `"id":3,`)
				})
				testkit.MustExec(t, db, "INSERT INTO purged_t VALUES (4, 'd')")
			}
			code := <-done
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			for _, s := range c.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr.String())
				}
			}
			w.mu.Lock()
			out := w.buf.String()
			w.mu.Unlock()
			if c.golden == "" {
				if out != "" {
					t.Errorf("printed before failing:\n%s", out)
				}
				return
			}
			golden(t, c.golden, normalize(out))
		})
	}
}
