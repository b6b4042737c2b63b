package vstreamer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// packetStream collects a stream's batches as they are sent, for tests of how events are
// grouped into packets and batches.
type packetStream struct {
	t          testing.TB
	batches    chan []*binlogdata.VEvent
	errc       chan error
	cancel     context.CancelFunc
	heartbeats bool // keep HEARTBEAT events (else they are dropped, and so are batches of only them)
}

// startBatches runs a stream whose batches, heartbeats left out, are read with expect.
func startBatches(t testing.TB, e *Engine, req Request) *packetStream {
	t.Helper()
	return collectBatches(t, e, req, false)
}

// batchStream runs a stream and hands out each batch it sends, heartbeats included, as one
// line of short forms joined by " | ".
func batchStream(t *testing.T, e *Engine, req Request) (next func() string) {
	t.Helper()
	bs := collectBatches(t, e, req, true)
	return func() string {
		t.Helper()
		parts := []string{}
		for _, ev := range bs.nextBatch(nil) {
			parts = append(parts, evtext.Short(ev))
		}
		return strings.Join(parts, " | ")
	}
}

func collectBatches(t testing.TB, e *Engine, req Request, heartbeats bool) *packetStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	bs := &packetStream{t: t, batches: make(chan []*binlogdata.VEvent, 1000), errc: make(chan error, 1), cancel: cancel, heartbeats: heartbeats}
	go func() {
		bs.errc <- e.Stream(ctx, req, func(evs []*binlogdata.VEvent) error {
			var kept []*binlogdata.VEvent
			for _, ev := range evs {
				if bs.heartbeats || ev.Type != binlogdata.VEventType_HEARTBEAT {
					kept = append(kept, ev)
				}
			}
			if len(kept) > 0 {
				bs.batches <- kept
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-bs.errc:
			if err != nil {
				t.Errorf("stream ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("stream did not stop")
		}
	})
	return bs
}

// nextBatch waits for the next batch; got (the batches read so far) goes into failure messages.
func (bs *packetStream) nextBatch(got []string) []*binlogdata.VEvent {
	bs.t.Helper()
	select {
	case b := <-bs.batches:
		return b
	case err := <-bs.errc:
		bs.errc <- err
		bs.t.Fatalf("stream ended early: %v; batches so far:\n  %s", err, strings.Join(got, "\n  "))
	case <-time.After(15 * time.Second):
		bs.t.Fatalf("timed out waiting for a batch; batches so far:\n  %s", strings.Join(got, "\n  "))
	}
	return nil
}

// expect reads one batch per want (events in vitessShort form, joined by ", ").
func (bs *packetStream) expect(want ...string) [][]*binlogdata.VEvent {
	bs.t.Helper()
	var got []string
	var out [][]*binlogdata.VEvent
	for range want {
		b := bs.nextBatch(got)
		out = append(out, b)
		var parts []string
		for _, ev := range b {
			parts = append(parts, vitessShort(ev))
		}
		got = append(got, strings.Join(parts, ", "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		bs.t.Fatalf("batches differ\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	return out
}

// vitessShort is short with the copy state spelled out: LASTPK's key and completion, and the
// table_p_ks of a VGTID.
func vitessShort(ev *binlogdata.VEvent) string {
	switch ev.Type {
	case binlogdata.VEventType_LASTPK:
		return "LASTPK " + tablePKString(ev.LastPKEvent.TableLastPK, ev.LastPKEvent.Completed)
	case binlogdata.VEventType_VGTID:
		var parts []string
		for _, tp := range ev.Vgtid.ShardGtids[0].TablePKs {
			parts = append(parts, tablePKString(tp, tp.Completed))
		}
		return "VGTID{" + strings.Join(parts, " ") + "}"
	case binlogdata.VEventType_COPY_COMPLETED:
		return fmt.Sprintf("COPY_COMPLETED %s/%s", ev.Keyspace, ev.Shard)
	}
	return evtext.Short(ev)
}

func tablePKString(tp *binlogdata.TableLastPK, completed bool) string {
	s := tp.TableName
	if rows := tp.GetLastpk().GetRows(); len(rows) == 1 {
		s += evtext.Row(rows[0])
	}
	if completed {
		s += " completed"
	}
	return s
}

// TestVitessCopyPackets: a Vitess-shaped copy sends rows as Vitess's uvstreamer does, one ROW
// event a row, packed by the bytes of their values (rowstreamer's TestStreamRowsMultiPacket
// with a packet of 10 bytes; uvstreamer's TestVStreamCopyCompleteFlow for the shape).
func TestVitessCopyPackets(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vp_t1 (id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"INSERT INTO vp_t1 VALUES (1, '234'), (2, '6789'), (3, '1'), (4, '2345678901'), (5, '2')")
	e := newEngine(t)
	bs := startBatches(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "vp_t1"}), VitessCopy: true, MaxBatchBytes: 10})
	got := bs.expect(
		"BEGIN, FIELD vp_t1 id:INT32 val:VARBINARY",
		"GTID, VGTID{vp_t1}",
		"ROW vp_t1 +[1 234], ROW vp_t1 +[2 6789], ROW vp_t1 +[3 1], LASTPK vp_t1[3], VGTID{vp_t1[3]}, COMMIT",
		"BEGIN, ROW vp_t1 +[4 2345678901], LASTPK vp_t1[4], VGTID{vp_t1[4]}, COMMIT",
		"BEGIN, ROW vp_t1 +[5 2], LASTPK vp_t1[5], VGTID{vp_t1[5]}, COMMIT",
		"BEGIN, LASTPK vp_t1 completed, VGTID{}, COMMIT", "COPY_COMPLETED ks/0",
	)
	// The copy tells the client its position: the GTID and its VGTID name the snapshot.
	if g, vg := got[1][0].Gtid, got[1][1].Vgtid.ShardGtids[0].Gtid; g == "" || g != vg {
		t.Errorf("GTID %q, VGTID %q: want the snapshot's position in both", g, vg)
	}
	// LASTPK's key fields are name, type, character set and flags, as Vitess writes them.
	id := got[0][1].FieldEvent.Fields[0]
	want := &query.Field{Name: "id", Type: query.Type_INT32, Charset: id.Charset, Flags: id.Flags}
	if lp := got[2][3].LastPKEvent.TableLastPK.Lastpk; len(lp.Fields) != 1 || !proto.Equal(lp.Fields[0], want) {
		t.Errorf("LASTPK fields %v, want %v", lp.GetFields(), want)
	}
	if !got[0][1].FieldEvent.EnumSetStringValues {
		t.Error("the copy's FIELD does not declare ENUM and SET values as strings")
	}
}

// TestVitessCopyEmptyAndKeylessTables: an empty table's FIELD group is closed before its
// completion; a table without a key is copied ordered by all its columns, which its LASTPK
// carries (rowstreamer's t3 case in TestStreamRowsScan).
func TestVitessCopyEmptyAndKeylessTables(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vk_a (id INT PRIMARY KEY)",
		"CREATE TABLE vk_b (id INT, val VARBINARY(128))",
		"INSERT INTO vk_b VALUES (2, 'bbb'), (1, 'aaa')")
	e := newEngine(t)
	bs := startBatches(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "/^vk_"}), VitessCopy: true})
	got := bs.expect(
		"BEGIN, FIELD vk_a id:INT32",
		"GTID, VGTID{vk_a vk_b}",
		"VGTID{vk_a vk_b}, COMMIT",
		"BEGIN, LASTPK vk_a completed, VGTID{vk_b}, COMMIT",
		"BEGIN, FIELD vk_b id:INT32 val:VARBINARY",
		"ROW vk_b +[1 aaa], ROW vk_b +[2 bbb], LASTPK vk_b[2 bbb], VGTID{vk_b[2 bbb]}, COMMIT",
		"BEGIN, LASTPK vk_b completed, VGTID{}, COMMIT", "COPY_COMPLETED ks/0",
	)
	var names []string
	for _, f := range got[5][2].LastPKEvent.TableLastPK.Lastpk.Fields {
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "id val" {
		t.Errorf("LASTPK of a keyless table is over %v, want all its columns", names)
	}
	// Replication after the copy describes a table again before its first row.
	testkit.MustExec(t, db, "INSERT INTO vk_a VALUES (1)")
	bs.expect("BEGIN, FIELD vk_a id:INT32, ROW vk_a +[1], GTID, COMMIT, VGTID{}")
}

// TestVitessCopyResume: a Vitess-shaped VGtid names only the tables still to copy, with no
// completed flag (Vitess's protos do not know it), and resuming from it copies exactly those.
func TestVitessCopyResume(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vr_a (id INT PRIMARY KEY)", "INSERT INTO vr_a VALUES (1), (2)",
		"CREATE TABLE vr_b (id INT PRIMARY KEY)", "INSERT INTO vr_b VALUES (7)")
	e := newEngine(t)
	flt := rules(&binlogdata.Rule{Match: "/^vr_"})
	bs := startBatches(t, e, Request{Filter: flt, VitessCopy: true})
	got := bs.expect(
		"BEGIN, FIELD vr_a id:INT32",
		"GTID, VGTID{vr_a vr_b}",
		"ROW vr_a +[1], ROW vr_a +[2], LASTPK vr_a[2], VGTID{vr_a[2] vr_b}, COMMIT",
		"BEGIN, LASTPK vr_a completed, VGTID{vr_b}, COMMIT",
	)
	between := got[3][2].Vgtid.ShardGtids[0]
	mid := got[2][3].Vgtid.ShardGtids[0]
	bs.cancel()

	// From between the tables: vr_a is not copied again.
	testkit.MustExec(t, db, "INSERT INTO vr_a VALUES (3)")
	r := startBatches(t, e, Request{Position: between.Gtid, TableLastPKs: between.TablePKs, Filter: flt, VitessCopy: true})
	r.expect(
		"BEGIN, FIELD vr_a id:INT32, ROW vr_a +[3], GTID, COMMIT, VGTID{vr_b}",
		"BEGIN, FIELD vr_b id:INT32",
		"ROW vr_b +[7], LASTPK vr_b[7], VGTID{vr_b[7]}, COMMIT",
		"BEGIN, LASTPK vr_b completed, VGTID{}, COMMIT", "COPY_COMPLETED ks/0",
	)
	r.cancel()

	// From within vr_a: it goes on after its last key, then vr_b.
	m := startBatches(t, e, Request{Position: mid.Gtid, TableLastPKs: mid.TablePKs, Filter: flt, VitessCopy: true})
	// The catch-up leaves out the change to a row the client does not hold yet; the copy
	// brings it.
	m.expect(
		"BEGIN, FIELD vr_a id:INT32, GTID, COMMIT, VGTID{vr_a[2] vr_b}",
		"BEGIN, FIELD vr_a id:INT32",
		"ROW vr_a +[3], LASTPK vr_a[3], VGTID{vr_a[3] vr_b}, COMMIT",
		"BEGIN, LASTPK vr_a completed, VGTID{vr_b}, COMMIT",
	)
}

// TestVitessTablesToCopyWithPosition: with a position and no table_p_ks, tables_to_copy
// copies nothing (Vitess's TestUVStreamerNoCopyWithGTID); the stream starts at the position.
func TestVitessTablesToCopyWithPosition(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vn_t1 (id INT PRIMARY KEY, val VARCHAR(128))", "INSERT INTO vn_t1 VALUES (1, 'val1')")
	pos := headPos(t)
	e := newEngine(t)
	bs := startBatches(t, e, Request{Position: pos, Filter: rules(&binlogdata.Rule{Match: "vn_t1"}),
		TablesToCopy: []string{"vn_t1"}, VitessCopy: true})
	testkit.MustExec(t, db, "INSERT INTO vn_t1 VALUES (2, 'val2')")
	bs.expect("BEGIN, FIELD vn_t1 id:INT32 val:VARCHAR, ROW vn_t1 +[2 val2], GTID, COMMIT, VGTID{}")
}

// TestVitessCopyKeylessResume: a table without a key, NULLs included, is copied in the order
// ORDER BY gives (NULLs first); its LASTPK writes a NULL as NULL, and a resume from it goes on
// after that row.
func TestVitessCopyKeylessResume(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vkr (id INT, val VARCHAR(10))",
		"INSERT INTO vkr VALUES (2, 'b'), (1, 'a'), (1, NULL), (NULL, 'x'), (1, '')")
	e := newEngine(t)
	flt := rules(&binlogdata.Rule{Match: "vkr"})
	bs := startBatches(t, e, Request{Filter: flt, VitessCopy: true, MaxBatchBytes: 1})
	got := bs.expect(
		"BEGIN, FIELD vkr id:INT32 val:VARCHAR",
		"GTID, VGTID{vkr}",
		"ROW vkr +[NULL x], LASTPK vkr[NULL x], VGTID{vkr[NULL x]}, COMMIT",
		"BEGIN, ROW vkr +[1 NULL], LASTPK vkr[1 NULL], VGTID{vkr[1 NULL]}, COMMIT",
	)
	sg := got[3][3].Vgtid.ShardGtids[0]
	if l := sg.TablePKs[0].Lastpk.Rows[0].Lengths; l[1] != -1 {
		t.Errorf("LASTPK lengths %v, want -1 for the NULL", l)
	}
	bs.cancel()
	r := startBatches(t, e, Request{Position: sg.Gtid, TableLastPKs: sg.TablePKs, Filter: flt, VitessCopy: true, MaxBatchBytes: 1})
	r.expect(
		"BEGIN, FIELD vkr id:INT32 val:VARCHAR",
		"ROW vkr +[1 ], LASTPK vkr[1 ], VGTID{vkr[1 ]}, COMMIT",
		"BEGIN, ROW vkr +[1 a], LASTPK vkr[1 a], VGTID{vkr[1 a]}, COMMIT",
		"BEGIN, ROW vkr +[2 b], LASTPK vkr[2 b], VGTID{vkr[2 b]}, COMMIT",
		"BEGIN, LASTPK vkr completed, VGTID{}, COMMIT",
		"COPY_COMPLETED ks/0",
	)
}

// TestVitessCopyReusesMemory: with SendRetainsNothing a Vitess-shaped copy reuses the memory
// of packets already sent (their ROW events come back), and every row still reaches the
// send as it was read: no packet's memory is written over while it is being sent. Small
// packets and chunks make many of both.
func TestVitessCopyReusesMemory(t *testing.T) {
	const n = 3000
	testkit.MustExec(t, db, "CREATE TABLE vr_t (id INT PRIMARY KEY, val VARCHAR(64))")
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'row %d %s')", i, i, strings.Repeat("x", i%40)))
	}
	testkit.MustExec(t, db, "INSERT INTO vr_t VALUES "+strings.Join(vals, ", "))
	e := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := map[*binlogdata.VEvent]bool{}
	reused, next := 0, 1
	err := e.Stream(ctx, Request{Filter: rules(&binlogdata.Rule{Match: "vr_t"}), VitessCopy: true, SendRetainsNothing: true,
		MaxBatchBytes: 2000, CopyChunkRows: 700}, func(evs []*binlogdata.VEvent) error {
		for _, ev := range evs {
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				if seen[ev] {
					reused++
				}
				seen[ev] = true
				want := fmt.Sprintf("ROW vr_t +[%d \"row %d %s\"]", next, next, strings.Repeat("x", next%40))
				if got := evtext.Short(ev); got != want {
					return fmt.Errorf("row %d: got %s, want %s", next, got, want)
				}
				next++
			case binlogdata.VEventType_COPY_COMPLETED:
				cancel()
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if next != n+1 {
		t.Fatalf("%d rows sent, want %d", next-1, n)
	}
	if reused == 0 {
		t.Error("no ROW event's memory was reused")
	}
}

// TestCopyReusesMemory: with SendRetainsNothing the native copy builds its batches' rows in
// the memory of rows already sent (their RowChanges come back), and every row still reaches
// the send as it was read, whether its batch went out from the copy's sending goroutine (a
// full batch) or with its chunk's end. Small batches and chunks make many of both, and
// chunks of several tables pass memory from one table's chunks to the next's.
func TestCopyReusesMemory(t *testing.T) {
	const n = 3000
	for _, tbl := range []string{"cr_a", "cr_b"} {
		testkit.MustExec(t, db, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, val VARCHAR(64))")
		var vals []string
		for i := 1; i <= n; i++ {
			vals = append(vals, fmt.Sprintf("(%d, '%s %d %s')", i, tbl, i, strings.Repeat("x", i%40)))
		}
		testkit.MustExec(t, db, "INSERT INTO "+tbl+" VALUES "+strings.Join(vals, ", "))
	}
	e := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := map[*binlogdata.RowChange]bool{}
	reused := 0
	next := map[string]int{"cr_a": 1, "cr_b": 1}
	err := e.Stream(ctx, Request{Filter: rules(&binlogdata.Rule{Match: "/cr_.*"}), SendRetainsNothing: true,
		MaxBatchBytes: 2000, CopyChunkRows: 700}, func(evs []*binlogdata.VEvent) error {
		for _, ev := range evs {
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				tbl := ev.RowEvent.TableName
				for _, rc := range ev.RowEvent.RowChanges {
					if seen[rc] {
						reused++
					}
					seen[rc] = true
					i := next[tbl]
					want := fmt.Sprintf("ROW %s +[%d \"%s %d %s\"]", tbl, i, tbl, i, strings.Repeat("x", i%40))
					one := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{
						TableName: tbl, RowChanges: []*binlogdata.RowChange{rc}}}
					if got := evtext.Short(one); got != want {
						return fmt.Errorf("row %d of %s: got %s, want %s", i, tbl, got, want)
					}
					next[tbl] = i + 1
				}
			case binlogdata.VEventType_COPY_COMPLETED:
				if ev.LastPKEvent == nil {
					cancel()
				}
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	for tbl, i := range next {
		if i != n+1 {
			t.Errorf("%s: %d rows sent, want %d", tbl, i-1, n)
		}
	}
	if reused == 0 {
		t.Error("no RowChange's memory was reused")
	}
}
