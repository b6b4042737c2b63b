package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair through /dev/ptmx: the terminal side a program writes
// to, and the side that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var n, unlock uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// TestTerminalDefaults: on a terminal the output is text, coloured unless NO_COLOR is set.
func TestTerminalDefaults(t *testing.T) {
	for _, noColor := range []string{"", "1"} {
		t.Run("NO_COLOR="+noColor, func(t *testing.T) {
			t.Setenv("NO_COLOR", noColor)
			t.Setenv("TERM", "xterm")
			term, reader := openPTY(t)
			if !isTerminal(term) {
				t.Fatal("a pty is not a terminal")
			}
			addr := serve(t, &fakeServer{batches: transaction()})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stderr strings.Builder
			if code := run(ctx, []string{"--server", addr, "--max-events", "2"}, term, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			r := bufio.NewReader(reader)
			var lines []string
			for range 2 {
				l, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, strings.TrimRight(l, "\r\n"))
			}
			colored := strings.Contains(lines[0], "\x1b[")
			if colored != (noColor == "") {
				t.Errorf("coloured = %v with NO_COLOR=%q: %q", colored, noColor, lines)
			}
			plain := stripANSI(lines[0])
			if !strings.HasSuffix(plain, "demo.t1 insert id=7") {
				t.Errorf("first line %q, want the insert as text", plain)
			}
			if stripANSI(lines[1]) != "commit MariaDB/0-1-5" && !strings.HasSuffix(stripANSI(lines[1]), " commit MariaDB/0-1-5") {
				t.Errorf("second line %q, want the commit", lines[1])
			}
		})
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\x1b' {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
