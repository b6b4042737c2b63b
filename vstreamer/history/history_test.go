package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

func pos(t *testing.T, s string) position.Position {
	t.Helper()
	p, err := position.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func cols(types ...string) []schema.ColumnInfo {
	out := make([]schema.ColumnInfo, len(types))
	for i, ct := range types {
		dt, _, _ := strings.Cut(ct, "(")
		out[i] = schema.ColumnInfo{Name: "c" + string(rune('a'+i)), DataType: dt, ColumnType: ct,
			Result: &rowcodec.ResultField{Type: 3, Flags: 32769, Length: 11}}
	}
	return out
}

func open(t *testing.T, dir string) *History {
	t.Helper()
	h, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// fill records t1 at 0-1-10, its ALTER at 0-1-20, its DROP at 0-1-30, and t2 at 0-1-10.
func fill(t *testing.T, h *History) {
	t.Helper()
	for _, r := range []struct {
		pos, table string
		cols       []schema.ColumnInfo
	}{
		{"MariaDB/0-1-10", "t1", cols("bigint(20)", "int(11)")},
		{"MariaDB/0-1-10", "t2", cols("varchar(50)")},
		{"MariaDB/0-1-20", "t1", cols("bigint(20)", "int(11)", "varchar(50)")},
		{"MariaDB/0-1-30", "t1", nil},
	} {
		if err := h.Record(pos(t, r.pos), "db", r.table, r.cols); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Advance(pos(t, "MariaDB/0-1-40"), true); err != nil {
		t.Fatal(err)
	}
}

func checkLookups(t *testing.T, h *History) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		pos, table string
		want       []schema.ColumnInfo
	}{
		{"MariaDB/0-1-9", "t1", nil}, // before the history
		{"MariaDB/0-1-10", "t1", cols("bigint(20)", "int(11)")},
		{"MariaDB/0-1-19", "t1", cols("bigint(20)", "int(11)")},
		{"MariaDB/0-1-20", "t1", cols("bigint(20)", "int(11)", "varchar(50)")},
		{"MariaDB/0-1-29", "t1", cols("bigint(20)", "int(11)", "varchar(50)")},
		{"MariaDB/0-1-30", "t1", nil}, // dropped
		{"MariaDB/0-1-35", "t2", cols("varchar(50)")},
		{"MariaDB/0-1-35", "t3", nil}, // never known
	} {
		got, ok, err := h.Lookup(ctx, "db", c.table, pos(t, c.pos))
		if err != nil {
			t.Fatalf("%s at %s: %v", c.table, c.pos, err)
		}
		if ok != (c.want != nil) {
			t.Errorf("%s at %s: ok = %v", c.table, c.pos, ok)
		}
		if !reflect.DeepEqual(c.want, got) {
			t.Errorf("%s at %s:\n got %+v\nwant %+v", c.table, c.pos, got, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	h := open(t, t.TempDir())
	fill(t, h)
	checkLookups(t, h)
	if _, ok, err := h.Lookup(context.Background(), "other", "t2", pos(t, "MariaDB/0-1-35")); ok || err != nil {
		t.Errorf("another database's table: ok %v, err %v", ok, err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	h := open(t, dir)
	if _, ok := h.Checkpoint(); ok {
		t.Fatal("a new history has a checkpoint")
	}
	fill(t, h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = open(t, dir)
	cp, ok := h.Checkpoint()
	if !ok || cp.String() != "MariaDB/0-1-40" {
		t.Fatalf("checkpoint after reopen: %v %v", cp, ok)
	}
	checkLookups(t, h)
	if got := h.Tables("db"); len(got) != 1 || got[0] != "t2" {
		t.Errorf("Tables = %v, want [t2] (t1 dropped)", got)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	h := open(t, dir)
	_, err := Open(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "--schema-history-dir") || !strings.Contains(err.Error(), "process") {
		t.Errorf("message does not say what to do: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir) // released by Close
}

func TestCutShort(t *testing.T) {
	dir := t.TempDir()
	h := open(t, dir)
	fill(t, h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, EntriesFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of appending an entry.
	cut := `{"position":"MariaDB/0-1-35","database":"db","table":"t2","columns":[{"Na`
	if err := os.WriteFile(path, append(data, cut...), 0o644); err != nil {
		t.Fatal(err)
	}
	h = open(t, dir)
	checkLookups(t, h)
	// The next entry starts on a line of its own.
	if err := h.Record(pos(t, "MariaDB/0-1-50"), "db", "t2", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = open(t, dir)
	checkLookups(t, h)
	if got := h.Tables("db"); len(got) != 0 {
		t.Errorf("Tables = %v after dropping t2", got)
	}

	// A bad line with more after it is not a crash but damage: Open says where.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("{bad\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("damaged entries: %v", err)
	}
}

func TestLookupWaits(t *testing.T) {
	h := open(t, t.TempDir())
	fill(t, h)
	at := pos(t, "MariaDB/0-1-45")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := h.Lookup(ctx, "db", "t2", at); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lookup ahead of the history: %v, want a deadline", err)
	}

	type result struct {
		cols []schema.ColumnInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, _, err := h.Lookup(context.Background(), "db", "t2", at)
		done <- result{c, err}
	}()
	if err := h.Advance(pos(t, "MariaDB/0-1-42"), false); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("lookup returned before the history reached it: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	// A DDL between the two: the lookup must see it.
	if err := h.Record(pos(t, "MariaDB/0-1-44"), "db", "t2", cols("varchar(60)")); err != nil {
		t.Fatal(err)
	}
	if err := h.Advance(pos(t, "MariaDB/0-1-45"), false); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if want := cols("varchar(60)"); !reflect.DeepEqual(want, r.cols) {
			t.Errorf("got %+v, want %+v", r.cols, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lookup did not wake up")
	}

	go func() {
		_, _, err := h.Lookup(context.Background(), "db", "t2", pos(t, "MariaDB/0-1-99"))
		done <- result{err: err}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !errors.Is(r.err, ErrClosed) {
		t.Errorf("lookup waiting at close: %v, want ErrClosed", r.err)
	}
}
