package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"

	"github.com/vstream-cdc/vstream/client/binlogdump"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// dumpEvents runs BinlogDumpGTID with Vitess's tablet client and reads the relayed packets
// with client/binlogdump and go-mysql's parser: a go-mysql replica behind a small adapter.
func dumpEvents(t *testing.T, req *binlogdatapb.BinlogDumpGTIDRequest) ([]*replication.BinlogEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raws := make(chan []byte, 16)
	done := make(chan error, 1)
	req.Target = target
	go func() {
		done <- tablet(t).BinlogDumpGTID(ctx, req, func(r *binlogdatapb.BinlogDumpResponse) error {
			// The client reuses r after the callback.
			raws <- bytes.Clone(r.Raw)
			return nil
		})
		close(raws)
	}()
	p := replication.NewBinlogParser()
	p.SetFlavor(goMySQLFlavor())
	p.SetVerifyChecksum(true)
	r := binlogdump.NewReader(func() ([]byte, error) {
		b, ok := <-raws
		if !ok {
			if err := <-done; err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		return b, nil
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

// eventText is what a replica reads from an event: its header (but the size, which counts
// the checksum) and its body as go-mysql dumps it, without the running GTID set go-mysql's
// syncer stamps on XID and query events.
func eventText(ev *replication.BinlogEvent) string {
	h := ev.Header
	s := fmt.Sprintf("%s pos=%d ts=%d server=%d flags=%d", h.EventType, h.LogPos, h.Timestamp, h.ServerID, h.Flags)
	if h.EventType == replication.FORMAT_DESCRIPTION_EVENT {
		// It names the checksum the events carry: the server's in the relay, none for
		// go-mysql's syncer, which asks for none.
		return s
	}
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

// goMySQLFlavor is go-mysql's name of the server's flavor.
func goMySQLFlavor() string { return byFlavor(mysql.MariaDBFlavor, mysql.MySQLFlavor) }

// TestBinlogDumpGTID: the binlog relayed through Vitess's tablet client, read by go-mysql's
// parser behind client/binlogdump, holds the same events as go-mysql's own replica reads
// from the server, from the same GTID set.
func TestBinlogDumpGTID(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_dump", "CREATE TABLE it_dump (id INT PRIMARY KEY, v VARCHAR(10), b MEDIUMBLOB)")
	conn, err := db.Conn("ks")
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.Execute(db.GTIDQuery())
	if err != nil {
		t.Fatal(err)
	}
	start, _ := r.GetString(0, 0)
	// MySQL breaks a long set over lines.
	start = strings.ReplaceAll(start, "\n", "")
	conn.Close()
	testkit.MustExec(t, db, "INSERT INTO it_dump VALUES (1, 'a', NULL), (2, 'b', REPEAT('x', 600000))",
		"UPDATE it_dump SET v = 'c' WHERE id = 1", "DELETE FROM it_dump WHERE id = 2")

	relayed, err := dumpEvents(t, &binlogdatapb.BinlogDumpGTIDRequest{GtidSet: db.PositionFlavor() + "/" + start, Flags: uint32(replication.BINLOG_DUMP_NON_BLOCK)})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, ev := range relayed {
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			rows++
		}
	}
	// The two-row insert may take two rows events (binlog_row_event_max_size).
	if rows < 3 {
		t.Errorf("%d rows events relayed, want the 3 statements' rows", rows)
	}

	set, err := mysql.ParseGTIDSet(goMySQLFlavor(), start)
	if err != nil {
		t.Fatal(err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 4242, Flavor: goMySQLFlavor(), Host: db.Host(), Port: uint16(db.Port()),
		User: db.User(), Password: db.Password(), DisableRetrySync: true,
	})
	defer syncer.Close()
	st, err := syncer.StartSyncGTID(set)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, ev := range relayed {
		d, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("direct event %d: %v", i, err)
		}
		if got, want := eventText(ev), eventText(d); got != want {
			t.Fatalf("event %d differs:\nrelayed: %s\ndirect:  %s", i, got, want)
		}
	}

	// A set the server cannot serve: its own error, relayed.
	_, err = dumpEvents(t, &binlogdatapb.BinlogDumpGTIDRequest{GtidSet: positionAt(t, "999999999", "1-999999999"), Flags: uint32(replication.BINLOG_DUMP_NON_BLOCK)})
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		t.Errorf("got %v, want the server's error %d", err, mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG)
	}
}
