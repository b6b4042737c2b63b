package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// flagSources streams table from "current" on both servers, each shard's engine sending
// heartbeats after beats[i] idle (zero: none).
func flagSources(t *testing.T, table string, beats [2]time.Duration) []Source {
	t.Helper()
	var sources []Source
	for i, e := range engines(t) {
		sources = append(sources, Source{Members: []Member{{Engine: e, TabletType: "primary"}}, Request: vstreamer.Request{Position: "current",
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}}, HeartbeatInterval: beats[i]}})
	}
	return sources
}

// heardFrom reports whether events have a heartbeat of every shard.
func heardFrom(events []*binlogdata.VEvent) bool {
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.GetType() == binlogdata.VEventType_HEARTBEAT {
			seen[ev.GetShard()] = true
		}
	}
	return seen["-80"] && seen["80-"]
}

// Vitess's TestVStreamSkew, on real servers: shard -80 replays transactions stamped a
// minute in the past (SET TIMESTAMP) while 80- commits one of now. Without minimize_skew the
// transactions go out as they are read; with it, 80-'s waits until -80 has caught up (its
// heartbeat, once idle, says it has), so -80's later old transaction overtakes it. A shard
// that never catches up (no heartbeats) ends the stream after the skew timeout.
func TestMergedSkew(t *testing.T) {
	cases := []struct {
		name    string
		opts    Options
		beats   [2]time.Duration
		want    []string
		wantErr string
	}{
		{name: "off", beats: [2]time.Duration{2500 * time.Millisecond, 300 * time.Millisecond},
			want: []string{"-80/1=old", "80-/2=now", "-80/3=old"}},
		{name: "minimize_skew", opts: Options{MinimizeSkew: true}, beats: [2]time.Duration{2500 * time.Millisecond, 300 * time.Millisecond},
			want: []string{"-80/1=old", "-80/3=old", "80-/2=now"}},
		{name: "laggard never catches up", opts: Options{MinimizeSkew: true, SkewTimeout: 1500 * time.Millisecond},
			beats: [2]time.Duration{0, 300 * time.Millisecond}, want: []string{"-80/1=old", "-80/3=old"}, wantErr: "held back 1.5s by minimize_skew"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range servers {
				if err := s.Exec("DROP TABLE IF EXISTS skewed", "CREATE TABLE skewed (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
					t.Fatal(err)
				}
			}
			col := &collector{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- StreamWith(ctx, flagSources(t, "skewed", c.beats), c.opts, col.send) }()
			if c.beats[0] > 0 {
				testkit.WaitFor(t, 30*time.Second, "a heartbeat of each shard", func() bool { return heardFrom(col.snapshot()) })
			} else {
				testkit.WaitFor(t, 30*time.Second, "a heartbeat of 80-", func() bool {
					return slices.ContainsFunc(col.snapshot(), func(ev *binlogdata.VEvent) bool {
						return ev.GetType() == binlogdata.VEventType_HEARTBEAT && ev.GetShard() == "80-"
					})
				})
			}
			old := func(id int) {
				t.Helper()
				if err := servers[0].Exec(fmt.Sprintf("SET TIMESTAMP = UNIX_TIMESTAMP() - %d", 61-id),
					fmt.Sprintf("INSERT INTO skewed VALUES (%d, 'old')", id), "SET TIMESTAMP = DEFAULT"); err != nil {
					t.Fatal(err)
				}
			}
			old(1)
			testkit.WaitFor(t, 30*time.Second, "the first old row", func() bool { return len(rows(col.snapshot())) == 1 })
			if err := servers[1].Exec("INSERT INTO skewed VALUES (2, 'now')"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			old(3)
			if c.wantErr != "" {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("stream ended with %v, want an error with %q", err, c.wantErr)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the stream did not end")
				}
			} else {
				testkit.WaitFor(t, 30*time.Second, "the three rows", func() bool { return len(rows(col.snapshot())) == 3 })
				cancel()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
			}
			events := col.snapshot()
			checkMerged(t, events)
			if got := rows(events); !slices.Equal(got, c.want) {
				t.Fatalf("rows in order %v, want %v", got, c.want)
			}
		})
	}
}

// Vitess's TestVStreamIdleHeartbeat: with heartbeat_interval the merge sends a HEARTBEAT
// with no keyspace or shard once per interval while nothing else goes out, none while
// transactions do, and the shards' own heartbeats (sent four times as often here) never
// reach the client; without it, an idle stream is silent.
func TestMergedHeartbeat(t *testing.T) {
	cases := []struct {
		name           string
		interval       time.Duration
		minIdle, maxIn int
	}{
		{name: "off", interval: 0, minIdle: 0, maxIn: 0},
		{name: "one second", interval: time.Second, minIdle: 2, maxIn: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range servers {
				if err := s.Exec("DROP TABLE IF EXISTS beat", "CREATE TABLE beat (id INT PRIMARY KEY)"); err != nil {
					t.Fatal(err)
				}
			}
			col := &collector{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			opts := Options{Heartbeat: c.interval, DropShardHeartbeats: true}
			go func() {
				done <- StreamWith(ctx, flagSources(t, "beat", [2]time.Duration{250 * time.Millisecond, 250 * time.Millisecond}), opts, col.send)
			}()
			col.waitPositioned(t, 2)
			beats := func(events []*binlogdata.VEvent) int {
				n := 0
				for _, ev := range events {
					if ev.GetType() == binlogdata.VEventType_HEARTBEAT {
						if ev.GetKeyspace() != "" || ev.GetShard() != "" || ev.GetTimestamp() == 0 {
							t.Fatalf("heartbeat %v: want the merge's, with a time and no keyspace or shard", ev)
						}
						n++
					}
				}
				return n
			}
			from := len(col.snapshot())
			time.Sleep(3500 * time.Millisecond)
			idle := beats(col.snapshot()[from:])
			if idle < c.minIdle || idle > c.maxIn {
				t.Fatalf("%d heartbeats in 3.5 s idle, want %d to %d", idle, c.minIdle, c.maxIn)
			}
			// Busy: a transaction every 300 ms from one shard keeps the stream from idling.
			from = len(col.snapshot())
			for i := range 10 {
				if err := servers[i%2].Exec(fmt.Sprintf("INSERT INTO beat VALUES (%d)", i)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond)
			}
			if n := beats(col.snapshot()[from:]); n != 0 {
				t.Fatalf("%d heartbeats while transactions went out every 300 ms, want none", n)
			}
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		})
	}
}
