package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// copyResponses is a copy of t1 in two chunks, each response with the progress after it.
func copyResponses() []*vstreamv1.StreamResponse {
	e := func(typ binlogdata.VEventType) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: typ, Timestamp: 1700000000, Keyspace: "demo", Shard: "0"}
	}
	chunk := func(id string, last bool) []*binlogdata.VEvent {
		field := e(binlogdata.VEventType_FIELD)
		field.FieldEvent = &binlogdata.FieldEvent{TableName: "t1", Keyspace: "demo", Shard: "0", Fields: []*query.Field{{Name: "id", Type: query.Type_INT64}}}
		row := e(binlogdata.VEventType_ROW)
		row.RowEvent = &binlogdata.RowEvent{TableName: "t1", Keyspace: "demo", Shard: "0", RowChanges: []*binlogdata.RowChange{{
			After: &query.Row{Lengths: []int64{int64(len(id))}, Values: []byte(id)},
		}}}
		lastpk := e(binlogdata.VEventType_LASTPK)
		lastpk.LastPKEvent = &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "t1"}, Completed: last}
		vgtid := e(binlogdata.VEventType_VGTID)
		vgtid.Vgtid = &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MariaDB/0-1-5"}}}
		evs := []*binlogdata.VEvent{e(binlogdata.VEventType_BEGIN), field, row, lastpk, e(binlogdata.VEventType_COMMIT), vgtid}
		if last {
			done := e(binlogdata.VEventType_COPY_COMPLETED)
			done.LastPKEvent = &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "t1"}}
			evs = append(evs, done, &binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
		}
		return evs
	}
	progress := func(copied int64) []*vstreamv1.CopyProgress {
		return []*vstreamv1.CopyProgress{{Table: "t1", RowsCopied: copied, RowsEstimated: 25}}
	}
	return []*vstreamv1.StreamResponse{
		{Events: chunk("10", false), CopyProgress: progress(10)},
		{Events: chunk("25", true), CopyProgress: progress(25)},
	}
}

// runCopy runs vstream against a server that copies t1, until --timeout ends it.
func runCopy(t *testing.T, stdout, stderr io.Writer) {
	t.Helper()
	addr := serve(t, &fakeServer{responses: copyResponses()})
	if code := run(context.Background(), []string{"--server", addr, "--output", "json", "--timeout", "1s"}, stdout, stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestProgressNotATerminal: with stderr a pipe, the copy's progress prints nothing.
func TestProgressNotATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stdout bytes.Buffer
	runCopy(t, &stdout, w)
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("stderr %q, want nothing when it is not a terminal", got)
	}
	if !strings.Contains(stdout.String(), `"table":"t1"`) {
		t.Errorf("stdout %q, want the copied rows", stdout.String())
	}
}

// TestProgressLine: a table's line shows its rows, the share of the estimate, the rate and the
// time left; an estimate passed is not 100% until the copy says the table is done.
func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		t    tableProgress
		at   time.Duration
		want string
	}{
		{"first report", tableProgress{name: "orders", copied: 0, estimated: 100}, 0,
			"orders               [------------------------]   0%  0/100 rows"},
		{"running", tableProgress{name: "orders", copied: 250, estimated: 1000}, 5 * time.Second,
			"orders               [######------------------]  25%  250/1000 rows  50 rows/s  ETA 15s"},
		{"estimate passed", tableProgress{name: "orders", copied: 1200, estimated: 1200}, 10 * time.Second,
			"orders               [#######################-]  99%  1200/1200 rows  120 rows/s"},
		{"done", tableProgress{name: "orders", copied: 1200, estimated: 1200, done: true}, 10 * time.Second,
			"orders               [########################] 100%  1200/1200 rows  done"},
		{"long name", tableProgress{name: "a_table_name_of_thirty_chars", copied: 1, estimated: 2, done: true}, time.Second,
			"a_table_name_of_thi~ [########################] 100%  1/2 rows  done"},
		{"narrow terminal", tableProgress{name: "orders", copied: 250, estimated: 1000}, 5 * time.Second,
			"orders               [##------]  25%  250/1000 rows  50 rows/s  ETA 15s"},
		{"too narrow", tableProgress{name: "orders", copied: 250, estimated: 1000}, 5 * time.Second,
			"orders               [#----]  25%  250/1000 rows  50 ro"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.t.since = start
			cols := map[string]int{"narrow terminal": 72, "too narrow": 56}[c.name]
			if got := c.t.line(start.Add(c.at), cols); got != c.want {
				t.Errorf("line\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestProgressBarSharedScreen: when the changes are printed on the same screen, the bar is
// taken off before them and drawn again below them, and left in place once the copy is done.
func TestProgressBarSharedScreen(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newProgressBar(&out, true, func() time.Time { return now }, func() int { return 0 })
	ctx := context.Background()
	step := func(what string, f func() error, want string) {
		t.Helper()
		out.Reset()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); !strings.Contains(got, want) || want == "" && got != "" {
			t.Errorf("%s wrote %q, want %q in it", what, got, want)
		}
	}
	now = now.Add(time.Second)
	step("the first report", func() error {
		return b.update(ctx, []*vstreamv1.CopyProgress{{Table: "a", RowsCopied: 10, RowsEstimated: 20}})
	}, "\x1b[2Ka                    [############------------]  50%  10/20 rows  10 rows/s  ETA 1s\n")
	step("hide", b.hide, "\x1b[1F\x1b[J")
	step("show", b.show, "\x1b[2Ka ")
	now = now.Add(time.Second)
	step("a second table", func() error {
		return b.update(ctx, []*vstreamv1.CopyProgress{{Table: "b", RowsCopied: 5, RowsEstimated: 5}})
	}, "\x1b[1F\x1b[2Ka ")
	if b.drawn != 2 {
		t.Errorf("%d lines drawn, want 2", b.drawn)
	}
	b.copyDone([]*binlogdata.VEvent{{Type: binlogdata.VEventType_COPY_COMPLETED}})
	step("show after the copy", b.show, "5/5 rows  done\n")
	if len(b.tables) != 0 {
		t.Error("the bar is still kept after the copy")
	}
	step("the next batch", b.hide, "")
	step("show after that", b.show, "")
}

// TestFit: a line is cut short of the terminal's last column, by characters, not bytes.
func TestFit(t *testing.T) {
	for _, c := range []struct {
		s    string
		cols int
		want string
	}{
		{"abcdef", 0, "abcdef"},
		{"abcdef", 7, "abcdef"},
		{"abcdef", 6, "abcde"},
		{"abcdef", 3, "ab"},
		{"ééééé", 4, "ééé"},
	} {
		if got := fit(c.s, c.cols); got != c.want {
			t.Errorf("fit(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
	}
}

// TestProgressBarLog: a log line goes where the bar was, and the bar below it.
func TestProgressBarLog(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newProgressBar(&out, false, func() time.Time { return now }, func() int { return 0 })
	log := b.logWriter()
	if _, err := log.Write([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.update(context.Background(), []*vstreamv1.CopyProgress{{Table: "a", RowsCopied: 1, RowsEstimated: 2}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := log.Write([]byte("reconnecting\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "\x1b[1F\x1b[Jreconnecting\n\x1b[2Ka "; !strings.HasPrefix(got, want) {
		t.Errorf("log line written as %q, want %q first", got, want)
	}
}
