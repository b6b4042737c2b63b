package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressTerminal: with stderr a terminal, the copy's progress is drawn there, a line
// for the table with its rows, redrawn in place until it is done.
func TestProgressTerminal(t *testing.T) {
	term, reader := openPTY(t)
	var stdout bytes.Buffer
	got := make(chan string, 1)
	go func() {
		// Read until the bar is complete or the terminal closes with the test.
		var b []byte
		buf := make([]byte, 4096)
		for !strings.Contains(string(b), "done\r\n") {
			n, err := reader.Read(buf)
			if err != nil {
				break
			}
			b = append(b, buf[:n]...)
		}
		got <- string(b)
	}()
	runCopy(t, &stdout, term)
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no complete progress bar on the terminal")
	}
	for _, want := range []string{"t1 ", "10/25 rows", "\x1b[1F", "25/25 rows", "100%", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal shows %q, want %q in it", out, want)
		}
	}
	if !strings.Contains(stdout.String(), `"table":"t1"`) {
		t.Errorf("stdout %q, want the copied rows", stdout.String())
	}
}
