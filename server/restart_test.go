package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// applier applies a stream the way a consumer would: rows of a transaction count once its
// COMMIT arrives; a ROLLBACK from the client discards the unfinished transaction.
type applier struct {
	mu      sync.Mutex
	pending []string
	seen    map[string]int
}

func (a *applier) handle(_ context.Context, evs []*binlogdata.VEvent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range evs {
		switch ev.Type {
		case binlogdata.VEventType_BEGIN, binlogdata.VEventType_ROLLBACK:
			a.pending = a.pending[:0]
		case binlogdata.VEventType_ROW:
			for _, rc := range ev.RowEvent.RowChanges {
				if rc.After != nil {
					a.pending = append(a.pending, string(rc.After.Values[:rc.After.Lengths[0]]))
				}
			}
		case binlogdata.VEventType_COMMIT:
			for _, id := range a.pending {
				a.seen[id]++
			}
			a.pending = a.pending[:0]
		}
	}
	return nil
}

func (a *applier) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// TestDatabaseRestartMidStream restarts MariaDB while a writer commits and the Go client
// streams: the client resumes by itself and every committed row arrives exactly once.
func TestDatabaseRestartMidStream(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE rst (id INT PRIMARY KEY)")
	addr := serve(t, dbConfig(), Options{})
	c, err := client.Dial(addr, client.Options{
		Logger: slog.New(slog.DiscardHandler),
		Backoff: func() backoff.BackOff {
			return backoff.NewConstantBackOff(100 * time.Millisecond)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := &applier{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.Stream(ctx, client.Request{Filter: client.ParseTables("rst")}, a.handle)
	}()
	testkit.WaitFor(t, 20*time.Second, "stream start", func() bool { return c.LastPosition() != nil })

	const n = 300
	for i := 1; i <= n; i++ {
		if i == n/2 {
			if err := db.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		q := fmt.Sprintf("INSERT INTO rst VALUES (%d)", i)
		for {
			err := db.Exec(q)
			if err == nil || strings.Contains(err.Error(), "Duplicate entry") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "every row", func() bool { return a.count() == n })
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatalf("stream: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, k := range a.seen {
		if k != 1 {
			t.Errorf("row %s arrived %d times", id, k)
		}
	}
}
