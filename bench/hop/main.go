// Command hop is the floor under the latency benchmark's process boundary: it accepts one
// TCP connection on loopback and reads 8-byte messages, each the little-endian unix
// nanoseconds at which the other end wrote it, and prints for each "d <nanoseconds>", how long
// after its writing it was read. Waiting in the kernel for the next message between them, as
// a consumer waits for its next response, each read measures what one more process costs a
// row on its way: the kernel's hand-over and the reader's waking, and nothing of the work.
// BenchmarkProcess/latency writes to it at the writer's rate. It prints "listening <address>"
// first, and "done <messages>" when the connection closes, then exits.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hop:", err)
		os.Exit(1)
	}
}

func run() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	c, err := ln.Accept()
	// One connection is all it serves.
	if cerr := ln.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	out := bufio.NewWriter(os.Stdout)
	var msg [8]byte
	n := 0
	for {
		// Unbuffered: each message is read by a read of its own, as it arrives.
		if _, err := io.ReadFull(c, msg[:]); err != nil {
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(out, "done", n)
				return out.Flush()
			}
			return err
		}
		at := time.Now().UnixNano()
		fmt.Fprintln(out, "d", at-int64(binary.LittleEndian.Uint64(msg[:])))
		n++
	}
}
