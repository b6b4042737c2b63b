package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// sentFrames records what a client connection writes.
type sentFrames struct {
	net.Conn
	mu  *sync.Mutex
	out *bytes.Buffer
}

func (c sentFrames) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// TestFixedWindowSendsNoPings streams transactions one message at a time, as a stream at a
// source's pace does, and counts the HTTP/2 frames the client sent: with the default fixed
// window none are PINGs, which grpc-go's estimated window sends after data arrives (and the
// server must answer), and WINDOW_UPDATEs are rare.
func TestFixedWindowSendsNoPings(t *testing.T) {
	const txns = 20
	for _, tc := range []struct {
		name      string
		window    int32
		wantPings bool
	}{
		{"default fixed window", 0, false},
		{"grpc-go's estimated window", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var out bytes.Buffer
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			fs := &fakeServer{play: func(_ int, st serverStream) error {
				for i := range txns {
					if err := send(st, txn(fmt.Sprint(i), vgtid(fmt.Sprintf("0-1-%d", i+1)))...); err != nil {
						return err
					}
					time.Sleep(2 * time.Millisecond)
				}
				return idle(st)
			}, acks: make(chan *binlogdata.VGtid, 100)}
			vstreamv1.RegisterVStreamServiceServer(srv, fs)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = srv.Serve(lis)
			}()
			defer func() {
				srv.Stop()
				<-done
			}()
			c, err := client.Dial(lis.Addr().String(), client.Options{WindowSize: tc.window, AckInterval: -1,
				DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
					conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
					if err != nil {
						return nil, err
					}
					return sentFrames{Conn: conn, mu: &mu, out: &out}, nil
				})}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			rec := &recorder{stopAfter: isVGTID(fmt.Sprintf("0-1-%d", txns)), cancel: cancel}
			if err := c.Stream(ctx, client.Request{Position: vgtid("0-1-0")}, rec.handle); !errors.Is(err, context.Canceled) {
				t.Fatalf("stream ended with %v", err)
			}

			mu.Lock()
			b := bytes.TrimPrefix(out.Bytes(), []byte(http2.ClientPreface))
			mu.Unlock()
			fr := http2.NewFramer(io.Discard, bytes.NewReader(b))
			pings, updates := 0, 0
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					break
				}
				switch f := f.(type) {
				case *http2.PingFrame:
					if !f.IsAck() {
						pings++
					}
				case *http2.WindowUpdateFrame:
					updates++
				}
			}
			t.Logf("%d transactions: the client sent %d PINGs and %d WINDOW_UPDATEs", txns, pings, updates)
			if got := pings > 0; got != tc.wantPings {
				t.Errorf("client sent %d PINGs, want some: %v", pings, tc.wantPings)
			}
			if !tc.wantPings && updates > 2 {
				t.Errorf("client sent %d WINDOW_UPDATEs for %d small messages in a fixed window", updates, txns)
			}
		})
	}
}
