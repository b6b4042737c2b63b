package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestProgressTerminal: with stderr a terminal, the copy's progress is drawn there, a line
// for the table with its rows, redrawn in place until it is done.
func TestProgressTerminal(t *testing.T) {
	term, reader := openPTY(t)
	// A narrow terminal: the bar's lines are cut to fit it.
	ws := struct{ rows, cols, x, y uint16 }{rows: 24, cols: 60}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, term.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Fatalf("set the terminal's size: %v", e)
	}
	var stdout bytes.Buffer
	got := readUntil(reader, "done\r\n")
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
	for _, l := range strings.Split(out, "\r\n") {
		if l = l[strings.LastIndex(l, "\x1b[2K")+1:]; len(l) >= 60+len("[2K") {
			t.Errorf("line %q does not fit the terminal's 60 columns", l)
		}
	}
	if !strings.Contains(stdout.String(), `"table":"t1"`) {
		t.Errorf("stdout %q, want the copied rows", stdout.String())
	}
}

// TestProgressTerminalRealCopy: a copy from vstreamd on the test database draws the table's
// bar on a terminal stderr, complete with its row count, while stdout gets the rows.
func TestProgressTerminalRealCopy(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS progress_cli", "CREATE TABLE progress_cli (id INT PRIMARY KEY)",
		"INSERT INTO progress_cli VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12)")
	term, reader := openPTY(t)
	got := readUntil(reader, "done\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &untilWriter{marker: `"id":12}`, cancel: cancel}
	if code := run(ctx, []string{"--server", addr, "--position", "copy", "--tables", "progress_cli"}, w, term); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no complete progress bar on the terminal")
	}
	if !strings.Contains(out, "progress_cli ") || !strings.Contains(out, "12/12 rows") || !strings.Contains(out, "100%") {
		t.Errorf("terminal shows %q, want the bar of progress_cli complete with 12 rows", out)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.Contains(w.buf.String(), `"id":12}`) {
		t.Errorf("stdout %q, want the copied rows", w.buf.String())
	}
}

// readUntil reads r in the background until what it read holds marker, or r fails (the
// terminal closes with the test), and then hands over what it read.
func readUntil(r io.Reader, marker string) <-chan string {
	got := make(chan string, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for !strings.Contains(string(b), marker) {
			n, err := r.Read(buf)
			if err != nil {
				break
			}
			b = append(b, buf[:n]...)
		}
		got <- string(b)
	}()
	return got
}
