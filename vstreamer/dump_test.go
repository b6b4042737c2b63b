package vstreamer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/client/binlogdump"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

// packet builds a MySQL packet.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// checkBatches fails when a packet header straddles two batches, or a batch is over size.
func checkBatches(t *testing.T, batches [][]byte, size int) {
	t.Helper()
	// Walk the packets of the joined stream, remembering in which batch each byte is.
	var joined []byte
	var batchOf []int
	for i, b := range batches {
		if len(b) > size {
			t.Errorf("batch %d has %d bytes, over %d", i, len(b), size)
		}
		joined = append(joined, b...)
		for range b {
			batchOf = append(batchOf, i)
		}
	}
	for off := 0; off < len(joined); {
		if off+packetHeader > len(joined) {
			t.Fatalf("a partial header ends the stream at %d", off)
		}
		if batchOf[off] != batchOf[off+packetHeader-1] {
			t.Errorf("the header at %d is split between batches %d and %d", off, batchOf[off], batchOf[off+packetHeader-1])
		}
		n := int(joined[off]) | int(joined[off+1])<<8 | int(joined[off+2])<<16
		off += packetHeader + n
	}
}

// TestRelayPackets follows Vitess's streamBinlogPackets tests: events and a final EOF or ERR
// relayed byte for byte, payloads split across batches but never a header, a payload of
// 2^24-1 bytes followed by its continuation packets, and nothing read after the end.
func TestRelayPackets(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, mysql.MaxPayloadLen)
	big[0] = 0 // an event packet starts with the OK byte
	cases := []struct {
		name string
		in   [][]byte
		size int
	}{
		{"eof", [][]byte{packet(1, []byte{mysql.EOF_HEADER, 0, 0, 2, 0})}, 64},
		{"events then eof", [][]byte{packet(1, []byte{0, 1, 2, 3}), packet(2, []byte{0, 5}), packet(3, []byte{mysql.EOF_HEADER, 0, 0, 2, 0})}, 64},
		{"events then err", [][]byte{packet(1, []byte{0, 1, 2, 3}), packet(2, append([]byte{mysql.ERR_HEADER, 0x7a, 0x05}, "#HY000gone"...))}, 64},
		{"split payloads, odd batch", [][]byte{packet(1, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), packet(2, []byte{0, 1, 2}), packet(3, []byte{0, 1, 2, 3, 4}), packet(4, []byte{mysql.EOF_HEADER, 0, 0})}, 7},
		{"headers at batch ends", [][]byte{packet(1, []byte{0, 1}), packet(2, []byte{0, 1}), packet(3, []byte{0}), packet(4, []byte{mysql.EOF_HEADER})}, 6},
		{"multi-packet payload", [][]byte{packet(1, big), packet(2, []byte{1, 2, 3}), packet(3, []byte{0, 9}), packet(4, []byte{mysql.EOF_HEADER, 0, 0, 2, 0})}, 256 << 10},
		{"multi-packet payload ending empty", [][]byte{packet(1, big), packet(2, nil), packet(3, []byte{mysql.EOF_HEADER})}, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := bytes.Join(c.in, nil)
			after := packet(9, []byte{0, 'n', 'o'})
			var batches [][]byte
			r := bufio.NewReader(bytes.NewReader(append(bytes.Clone(want), after...)))
			err := relayPackets(r, c.size, func(raw []byte) error {
				batches = append(batches, bytes.Clone(raw))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Join(batches, nil); !bytes.Equal(got, want) {
				t.Fatalf("relayed %d bytes, want the %d bytes read up to the end of the dump", len(got), len(want))
			}
			checkBatches(t, batches, c.size)
		})
	}
}

// TestRelayPacketsFlushesBeforeWaiting: packets already read go out before the relay waits
// on the server for more.
func TestRelayPacketsFlushesBeforeWaiting(t *testing.T) {
	pr, pw := io.Pipe()
	sent := make(chan []byte, 10)
	done := make(chan error, 1)
	go func() {
		done <- relayPackets(bufio.NewReader(pr), 1<<10, func(raw []byte) error {
			sent <- bytes.Clone(raw)
			return nil
		})
	}()
	first := append(packet(1, []byte{0, 1}), packet(2, []byte{0, 2})...)
	pw.Write(first)
	select {
	case got := <-sent:
		if !bytes.Equal(got, first) {
			t.Errorf("sent %x, want %x", got, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the packets read were held while the relay waited for more")
	}
	pw.Write(packet(3, []byte{mysql.EOF_HEADER}))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pr.Close()
	// A connection that breaks mid-packet is an error.
	pr, pw = io.Pipe()
	go func() { pw.Write([]byte{9, 0, 0, 1, 0, 1}); pw.CloseWithError(errors.New("connection reset")) }()
	if err := relayPackets(bufio.NewReader(pr), 1<<10, func([]byte) error { return nil }); !errors.Is(err, ErrUnavailable) {
		t.Errorf("got %v, want ErrUnavailable", err)
	}
}

// relayedEvents reads a relayed dump with the client's adapter (client/binlogdump) and
// go-mysql's BinlogParser, as a go-mysql replica would. It returns the events before the EOF,
// or the server's ERR as an error.
func relayedEvents(t *testing.T, raw []byte) ([]*replication.BinlogEvent, error) {
	t.Helper()
	p := replication.NewBinlogParser()
	p.SetFlavor(goMySQLFlavor())
	p.SetVerifyChecksum(true)
	sent := false
	r := binlogdump.NewReader(func() ([]byte, error) {
		if sent {
			return nil, io.EOF
		}
		sent = true
		return raw, nil
	}, p)
	var out []*replication.BinlogEvent
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// eventString renders what a replica reads from an event: its header (but the size, which
// counts the checksum) and its body as go-mysql dumps it.
func eventString(ev *replication.BinlogEvent) string {
	h := ev.Header
	s := fmt.Sprintf("%s pos=%d ts=%d server=%d flags=%d", h.EventType, h.LogPos, h.Timestamp, h.ServerID, h.Flags)
	if h.EventType == replication.FORMAT_DESCRIPTION_EVENT {
		// Says which checksum the events carry: the server's here, none for go-mysql's own
		// syncer, which asks for none.
		return s
	}
	// The syncer stamps its running GTID set on XID and query events; it is not in the event.
	switch e := ev.Event.(type) {
	case *replication.XIDEvent:
		e.GSet = nil
	case *replication.QueryEvent:
		e.GSet = nil
	}
	var b bytes.Buffer
	ev.Event.Dump(&b)
	return s + "\n" + b.String()
}

func TestStreamDumpMatchesDirectRead(t *testing.T) {
	testkit.MustExec(t, db, "drop table if exists dump1", "create table dump1(id int primary key, v varchar(300), b mediumblob)")
	startPos := headPos(t)
	testkit.MustExec(t, db,
		"insert into dump1 values (1, 'a', null), (2, 'b', repeat('z', 1000))",
		"update dump1 set v = repeat('y', 300) where id = 1",
		// A row event larger than a batch, so payloads continue in the next one.
		"insert into dump1 values (3, 'c', repeat('q', 700000))",
		"delete from dump1 where id = 2",
		"alter table dump1 add column n int",
	)
	e := newEngine(t)
	var raw []byte
	batches := 0
	err := e.StreamDump(context.Background(), DumpRequest{GTIDSet: startPos, Flags: replication.BINLOG_DUMP_NON_BLOCK},
		func(b []byte) error {
			if len(b) > e.cfg.MaxBatchBytes {
				return fmt.Errorf("a batch of %d bytes", len(b))
			}
			raw = append(raw, b...)
			batches++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	relayed, err := relayedEvents(t, raw)
	if err != nil {
		t.Fatal(err)
	}
	if batches < 3 {
		t.Errorf("%d batches for %d bytes: the large row should span batches", batches, len(raw))
	}

	// The same events read directly from the server by go-mysql's own replica.
	start, err := position.Parse(startPos)
	if err != nil {
		t.Fatal(err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: randomServerID(), Flavor: goMySQLFlavor(), Host: db.Host(), Port: uint16(db.Port()),
		User: db.User(), Password: db.Password(), DisableRetrySync: true,
	})
	defer syncer.Close()
	st, err := syncer.StartSyncGTID(start.GTIDSet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var direct []string
	for len(direct) < len(relayed) {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("after %d direct events: %v", len(direct), err)
		}
		direct = append(direct, eventString(ev))
	}
	var got []string
	rows := 0
	for _, ev := range relayed {
		got = append(got, eventString(ev))
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			rows++
		}
	}
	if rows < 4 {
		t.Errorf("%d rows events relayed, want the 4 written", rows)
	}
	for i := range got {
		if got[i] != direct[i] {
			t.Fatalf("event %d differs:\nrelayed: %s\ndirect:  %s", i, got[i], direct[i])
		}
	}
}

func TestStreamDumpErrors(t *testing.T) {
	e := newEngine(t)
	nop := func([]byte) error { return nil }
	if err := e.StreamDump(context.Background(), DumpRequest{GTIDSet: byFlavor("MariaDB/x-y", "MySQL56/x-y")}, nop); !errors.Is(err, position.ErrBadPosition) {
		t.Errorf("malformed set: got %v, want ErrBadPosition", err)
	}
	other := byFlavor("MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "MariaDB/0-1-5")
	if err := e.StreamDump(context.Background(), DumpRequest{GTIDSet: other}, nop); !errors.Is(err, ErrFlavor) {
		t.Errorf("%s on %s: got %v, want ErrFlavor", other, db.Flavor(), err)
	}
	// A set the server does not have: the server's own ERR packet is relayed and ends the dump.
	ahead := "0-1-999999999"
	if onMySQL() {
		p, err := position.Parse(headPos(t))
		if err != nil {
			t.Fatal(err)
		}
		ahead = strings.SplitN(p.GTIDSet.String(), ":", 2)[0] + ":1-999999999"
	}
	var raw []byte
	err := e.StreamDump(context.Background(), DumpRequest{GTIDSet: ahead, Flags: 1}, func(b []byte) error {
		raw = append(raw, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relayedEvents(t, raw); err == nil || !strings.Contains(err.Error(), byFlavor(ahead, "more GTIDs")) {
		t.Errorf("got %v, want the server's error naming the GTID", err)
	}
}

// TestStreamDumpCancel: a dump waiting on the server ends when its context does.
func TestStreamDumpCancel(t *testing.T) {
	// The set without its flavor, which the dump reads in the server's.
	_, cur, _ := strings.Cut(headPos(t), "/")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- newEngine(t).StreamDump(ctx, DumpRequest{GTIDSet: cur}, func([]byte) error {
			cancel()
			return nil
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dump did not end with its context")
	}
}

// TestDumpCommand checks the dump commands byte by byte against the protocol's layout:
// COM_BINLOG_DUMP_GTID (MySQL) with its SID block, COM_BINLOG_DUMP (MariaDB).
func TestDumpCommand(t *testing.T) {
	le := binary.LittleEndian
	p, err := position.Parse("MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7")
	if err != nil {
		t.Fatal(err)
	}
	got := dumpCommand(position.MySQL56, p, DumpRequest{BinlogFile: "binlog.000003", BinlogPos: 4, Flags: 1}, 77)
	want := []byte{0, 0, 0, 0, 0x1e}
	want = le.AppendUint16(want, 1)
	want = le.AppendUint32(want, 77)
	want = le.AppendUint32(want, 13)
	want = append(want, "binlog.000003"...)
	want = le.AppendUint64(want, 4)
	sids := le.AppendUint64(nil, 1) // one source
	sids = append(sids, 0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62)
	sids = le.AppendUint64(sids, 2) // two intervals, end exclusive
	sids = le.AppendUint64(le.AppendUint64(sids, 1), 6)
	sids = le.AppendUint64(le.AppendUint64(sids, 7), 8)
	want = le.AppendUint32(want, uint32(len(sids)))
	want = append(want, sids...)
	if !bytes.Equal(got, want) {
		t.Errorf("COM_BINLOG_DUMP_GTID\n got %x\nwant %x", got, want)
	}

	got = dumpCommand(position.MariaDB, position.Position{Flavor: position.MariaDB}, DumpRequest{BinlogFile: "binlog.000002", BinlogPos: 330, Flags: 1}, 77)
	want = []byte{0, 0, 0, 0, 0x12}
	want = le.AppendUint32(want, 330)
	want = le.AppendUint16(want, 1)
	want = le.AppendUint32(want, 77)
	want = append(want, "binlog.000002"...)
	if !bytes.Equal(got, want) {
		t.Errorf("COM_BINLOG_DUMP\n got %x\nwant %x", got, want)
	}
}

// FuzzRelayPackets: whatever the server sends, the relay never panics, relays a prefix of it,
// never more than a batch at once, and never splits a header.
func FuzzRelayPackets(f *testing.F) {
	f.Add(append(packet(1, []byte{0, 1, 2}), packet(2, []byte{mysql.EOF_HEADER})...), 5)
	f.Add(packet(1, []byte{mysql.ERR_HEADER, 1, 2}), 4)
	f.Add([]byte{0, 0, 0, 1}, 8)
	f.Add([]byte{3, 0, 0, 1, 0}, 64)
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		size = packetHeader + max(size, 0)%300
		var batches [][]byte
		err := relayPackets(bufio.NewReader(bytes.NewReader(in)), size, func(raw []byte) error {
			batches = append(batches, bytes.Clone(raw))
			return nil
		})
		got := bytes.Join(batches, nil)
		if !bytes.HasPrefix(in, got) {
			t.Fatalf("relayed bytes that were not sent")
		}
		if err == nil {
			checkBatches(t, batches, size)
		}
	})
}

// TestStreamDumpDrain follows Vitess's BinlogDumpEngine: draining the engine ends open dumps
// at once (they have no transaction boundary to wait for), and new ones do not start.
func TestStreamDumpDrain(t *testing.T) {
	e := newEngine(t)
	done := make(chan error, 1)
	started := make(chan struct{}, 1)
	// From the server's position: another test may have purged the binlogs a dump from
	// nothing would start in, and the server would end that dump at once.
	pos := headPos(t)
	go func() {
		done <- e.StreamDump(context.Background(), DumpRequest{GTIDSet: pos}, func([]byte) error {
			select {
			case started <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the dump ended before draining: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no packet relayed")
	}
	e.Drain()
	select {
	case err := <-done:
		if !errors.Is(err, ErrShuttingDown) {
			t.Errorf("got %v, want ErrShuttingDown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dump did not end when the engine drained")
	}
	if err := e.StreamDump(context.Background(), DumpRequest{}, func([]byte) error { return nil }); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("a dump after draining: got %v, want ErrShuttingDown", err)
	}
}
