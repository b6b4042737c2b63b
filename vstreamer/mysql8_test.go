package vstreamer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/position"
)

// The captured compressed transaction (testdata/mysql8/payload_insert.hex) was written by
// MySQL 8.0 for
//
//	insert into customer values (1, "mlord@planetscale.com"), (2, "sup@planetscale.com")
//
// on vt_commerce.customer. Its GTID event was not captured; a MySQL 8.0.19 GTID event body
// (gtid_body_8019.hex) stands in for it, numbering the transaction 5ccc1033-...:119.
const (
	payloadUUID  = "5ccc1033-44a8-11ea-bd59-0242ac190003"
	payloadStart = 20538 - 219 // the payload event's end minus its size
)

func createCustomer(t *testing.T) {
	t.Helper()
	testkit.MustExec(t, db, "CREATE DATABASE IF NOT EXISTS vt_commerce",
		"CREATE TABLE IF NOT EXISTS vt_commerce.customer (customer_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, email VARBINARY(128))")
}

// gtidEvent is the captured 8.0.19 GTID event body in an event ending at logPos.
func gtidEvent(t testing.TB, logPos uint32) []byte {
	return makeEvent(replication.GTID_EVENT, 1, logPos, fixture(t, "gtid_body_8019.hex"))
}

// unpacked returns the events of a compressed transaction as MySQL logs them without
// compression: one after the other from start, each with its checksum.
func unpacked(t testing.TB, payload []byte, start uint32) [][]byte {
	t.Helper()
	evs := parseBinlog(t, formatEvent(), payload)
	pos := start
	var out [][]byte
	for _, inner := range evs[1].Event.(*replication.TransactionPayloadEvent).Events {
		raw := append([]byte(nil), inner.RawData...)
		size := uint32(len(raw) + 4)
		pos += size
		binary.LittleEndian.PutUint32(raw[9:], size)
		binary.LittleEndian.PutUint32(raw[13:], pos)
		out = append(out, binary.LittleEndian.AppendUint32(raw, crc32IEEE(raw)))
	}
	return out
}

// TestMySQL8CompressedTransaction streams a compressed transaction and the same transaction
// logged uncompressed: the events are the same, sources included, except where in the file
// they are (the compressed ones all point at their payload event).
func TestMySQL8CompressedTransaction(t *testing.T) {
	createCustomer(t)
	payload := withChecksum(t, fixture(t, "payload_insert.hex"))
	gtid := gtidEvent(t, payloadStart)

	start := "MySQL56/" + payloadUUID + ":1-118"
	want := []string{
		"BEGIN",
		"FIELD customer customer_id:INT64 email:VARBINARY",
		"ROW customer +[1 mlord@planetscale.com] +[2 sup@planetscale.com]",
		"GTID", "COMMIT", "VGTID",
	}
	run := func(raws ...[]byte) []*binlogdata.VEvent {
		t.Helper()
		src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: parseBinlog(t, raws...)}
		evs, err := collect(t, replayEngine(t, "vt_commerce", src), Request{Position: start, WithSource: true}, len(want))
		if err != nil {
			t.Fatal(err)
		}
		if got := evtext.Shorts(evs); !slices.Equal(got, want) {
			t.Fatalf("events\n got %q\nwant %q", got, want)
		}
		return evs
	}
	compressed := run(formatEvent(), gtid, payload)
	plain := run(append([][]byte{formatEvent(), gtid}, unpacked(t, payload, payloadStart)...)...)

	if g := compressed[5].Vgtid.ShardGtids[0].Gtid; g != "MySQL56/"+payloadUUID+":1-119" {
		t.Errorf("VGTID after the transaction = %s, want %s", g, "MySQL56/"+payloadUUID+":1-119")
	}
	for i := range compressed {
		c, p := proto.Clone(compressed[i]).(*binlogdata.VEvent), proto.Clone(plain[i]).(*binlogdata.VEvent)
		c.CurrentTime, p.CurrentTime = 0, 0
		if src := c.Source; src != nil {
			if src.StartPos != payloadStart || src.EndPos != 20538 {
				t.Errorf("%s: source at %d-%d, want the payload event's %d-20538", evtext.Short(c), src.StartPos, src.EndPos, payloadStart)
			}
			if p.Source == nil || p.Source.EndPos <= payloadStart || p.Source.EndPos > 20538+100 {
				t.Errorf("%s: uncompressed source %v is not inside the transaction", evtext.Short(p), p.Source)
			}
			src.StartPos, src.EndPos = 0, 0
			p.Source.StartPos, p.Source.EndPos = 0, 0
		}
		if !proto.Equal(c, p) {
			t.Errorf("event %d differs\ncompressed:   %v\nuncompressed: %v", i, c, p)
		}
	}
	if c := compressed[4]; c.Source.GetXid() != 556 || c.EventGtid != payloadUUID+":119" {
		t.Errorf("COMMIT = %v, want xid 556 and event_gtid %s:119", c, payloadUUID)
	}
}

// The captured GTID_TAGGED_LOG_EVENT (testdata/mysql8/gtid_tagged.hex) numbers its
// transaction 896e7882-18fe-11ef-ab88-22222d34d411:foobaz:N; here it precedes the captured
// compressed transaction, as on a server with both tagged GTIDs and binlog compression.
func TestMySQL84TaggedGTID(t *testing.T) {
	createCustomer(t)
	tagged := fixture(t, "gtid_tagged.hex")
	events := parseBinlog(t, formatEvent(), tagged, withChecksum(t, fixture(t, "payload_insert.hex")))
	g, ok := events[1].Event.(*replication.GtidTaggedLogEvent)
	if !ok {
		t.Fatalf("captured event decodes to %T", events[1].Event)
	}
	set, err := g.GTIDNext()
	if err != nil {
		t.Fatal(err)
	}
	id := set.String()[:36]
	gno := set.String()[strings.LastIndexByte(set.String(), ':')+1:]
	if g.Tag.String() != "foobaz" {
		t.Fatalf("tag = %q, want foobaz", g.Tag.String())
	}

	start := "MySQL56/" + id + ":1-5"
	after := "MySQL56/" + id + ":1-5:foobaz:" + gno
	src := &replaySource{info: mysqlInfo(t, after), events: events}
	e := replayEngine(t, "vt_commerce", src)
	evs, err := collect(t, e, Request{Position: start}, 6)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"BEGIN", "FIELD customer customer_id:INT64 email:VARBINARY",
		"ROW customer +[1 mlord@planetscale.com] +[2 sup@planetscale.com]", "GTID", "COMMIT", "VGTID"}
	if got := evtext.Shorts(evs); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	if got := evs[5].Vgtid.ShardGtids[0].Gtid; got != after {
		t.Fatalf("VGTID = %s, want %s", got, after)
	}
	if got := evs[4].EventGtid; got != id+":foobaz:"+gno {
		t.Errorf("event_gtid = %s, want %s:foobaz:%s", got, id, gno)
	}

	// Resuming from that VGTID asks the server for everything after exactly that set, tag
	// included, in the tagged encoding MySQL 8.4 reads.
	if _, err := collect(t, e, Request{Position: after}, 1); err != nil {
		t.Fatal(err)
	}
	resumed := src.opened[len(src.opened)-1]
	if resumed.String() != after {
		t.Fatalf("resumed at %s, want %s", resumed, after)
	}
	decoded, err := mysql.DecodeMysqlGTIDSet(resumed.GTIDSet.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if f, _, _ := mysql.DecodeSid(resumed.GTIDSet.Encode()); f != mysql.GtidFormatTagged || !decoded.Equal(resumed.GTIDSet) {
		t.Fatalf("dump request encodes %v in format %v, want %s tagged", decoded, f, after)
	}
	want2, _ := position.Parse(after)
	if !resumed.Equal(want2) || !resumed.Contains(want2) {
		t.Fatalf("resumed position %s does not equal %s", resumed, after)
	}
}

// tableMapJSON is a TABLE_MAP_EVENT for the captured PARTIAL_UPDATE_ROWS_EVENTs' table (id
// 176): vt_commerce.customer_json (customer_id BIGINT NOT NULL, email VARBINARY(128), jd
// JSON), with column names as binlog_row_metadata=FULL logs them. The map itself was not
// captured; its columns are those the capture describes.
func tableMapJSON() []byte {
	b := []byte{176, 0, 0, 0, 0, 0, 1, 0}
	b = append(b, byte(len("vt_commerce")))
	b = append(b, "vt_commerce\x00"...)
	b = append(b, byte(len("customer_json")))
	b = append(b, "customer_json\x00"...)
	b = append(b, 3, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_JSON)
	b = append(b, 3, 128, 0, 4) // metadata: VARCHAR max length, JSON length bytes
	b = append(b, 0b110)        // nullable: email, jd
	names := []byte{}
	for _, n := range []string{"customer_id", "email", "jd"} {
		names = append(names, byte(len(n)))
		names = append(names, n...)
	}
	b = append(b, replication.TABLE_MAP_OPT_META_COLUMN_NAME, byte(len(names)))
	return append(b, names...)
}

// TestMySQL8PartialJSONUpdate: MySQL 8.0's PARTIAL_UPDATE_ROWS_EVENTs
// (binlog_row_value_options=PARTIAL_JSON) carry JSON diffs, not values; the stream applies
// them to the before image and sends the whole value after the update. The third event holds
// two diffs a value (JSON_REPLACE of $.day, JSON_REMOVE of $.favorite_color), of which
// go-mysql decodes only the first (TestGoMySQLDecodesOneJSONDiff).
func TestMySQL8PartialJSONUpdate(t *testing.T) {
	testkit.MustExec(t, db, "CREATE DATABASE IF NOT EXISTS vt_commerce",
		"CREATE TABLE IF NOT EXISTS vt_commerce.customer_json (customer_id BIGINT NOT NULL PRIMARY KEY, email VARBINARY(128), jd JSON)")
	rows := func(pairs ...string) string {
		var b strings.Builder
		b.WriteString("ROW customer_json")
		for i, email := range []string{"alice", "bob", "charlie", "dan", "eve"} {
			if 2*i >= len(pairs) {
				break
			}
			fmt.Fprintf(&b, " [%d %s@domain.com %s]>[%d %s@domain.com %s]", i+1, email, pairs[2*i], i+1, email, pairs[2*i+1])
		}
		return b.String()
	}
	// Whole values print as SELECT prints them: MySQL's spacing, keys by length, then bytes.
	const friday, monday = `"{\"day\": \"friday\", \"role\": \"manager\", \"color\": \"red\", \"salary\": %d, \"favorite_color\": \"black\"}"`,
		`"{\"day\": \"monday\", \"role\": \"manager\", \"color\": \"red\", \"salary\": %d}"`
	const salary, manager, ic = `"{\"salary\": %d}"`, `"{\"role\": \"manager\", \"salary\": %d}"`, `"{\"role\": \"IC\", \"salary\": %d}"`
	f := fmt.Sprintf
	for _, c := range []struct{ name, want string }{
		{"partial_update_json_insert.hex", rows(
			f(salary, 100), f(manager, 100), f(salary, 99), f(manager, 99), f(salary, 99), f(manager, 99),
			f(salary, 99), f(manager, 99), f(salary, 100), f(manager, 100))},
		{"partial_update_json_replace.hex", rows(f(manager, 100), f(ic, 100))},
		{"partial_update_json_remove_and_replace.hex", rows(
			f(friday, 100), f(monday, 100), f(friday, 99), f(monday, 99), f(friday, 99), f(monday, 99),
			f(friday, 99), f(monday, 99), f(friday, 100), f(monday, 100))},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: parseBinlog(t,
				formatEvent(),
				gtidEvent(t, 1000),
				makeEvent(replication.TABLE_MAP_EVENT, 1, 1100, tableMapJSON()),
				withChecksum(t, fixture(t, c.name)),
				makeEvent(replication.XID_EVENT, 1, 30000, binary.LittleEndian.AppendUint64(nil, 7)),
			)}
			evs, err := collect(t, replayEngine(t, "vt_commerce", src), Request{Position: "MySQL56/" + payloadUUID + ":1-118"}, 6)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"BEGIN", "FIELD customer_json customer_id:INT64 email:VARBINARY jd:JSON", c.want, "GTID", "COMMIT", "VGTID"}
			if got := evtext.Shorts(evs); !slices.Equal(got, want) {
				t.Fatalf("events\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// TestGoMySQLDecodesOneJSONDiff shows why the diff vectors of partial JSON updates are read
// from the event's bytes rather than taken from go-mysql: MySQL logs a vector of diffs per
// value (here JSON_REPLACE of $.day, then JSON_REMOVE of $.favorite_color), and go-mysql
// v1.16.0 decodes only the first.
func TestGoMySQLDecodesOneJSONDiff(t *testing.T) {
	p := replication.NewBinlogParser()
	var evs []*replication.BinlogEvent
	for _, raw := range [][]byte{formatEvent(), makeEvent(replication.TABLE_MAP_EVENT, 1, 1100, tableMapJSON()),
		withChecksum(t, fixture(t, "partial_update_json_remove_and_replace.hex"))} {
		ev, err := p.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	rows := evs[2].Event.(*replication.RowsEvent).Rows
	if len(rows) != 10 {
		t.Fatalf("%d row images, want 5 updates", len(rows))
	}
	diff, ok := rows[1][2].(*replication.JsonDiff)
	if !ok {
		t.Fatalf("after image of jd is %T, want a JSON diff", rows[1][2])
	}
	if diff.Op != replication.JsonDiffOperationReplace || diff.Path != "$.day" {
		t.Fatalf("diff = %v, want the REPLACE of $.day", diff)
	}
	// The REMOVE of $.favorite_color is in the event but nowhere in what go-mysql returns.
	if strings.Contains(fmt.Sprint(rows[1]), "favorite_color") {
		t.Fatalf("go-mysql now decodes the second diff (%v): the vectors could be taken from it", rows[1])
	}
	if !bytes.Contains(fixture(t, "partial_update_json_remove_and_replace.hex"), []byte("$.favorite_color")) {
		t.Fatal("the captured event does not hold the second diff")
	}
}

// TestUnknownBinlogEventEndsStream: events known to carry nothing are skipped; an event type
// the engine does not know ends the stream, after what came before it, naming the type.
func TestUnknownBinlogEventEndsStream(t *testing.T) {
	createCustomer(t)
	src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-119"), events: parseBinlog(t,
		formatEvent(),
		makeEvent(replication.PREVIOUS_GTIDS_EVENT, 1, 200, make([]byte, 8)),
		gtidEvent(t, payloadStart),
		withChecksum(t, fixture(t, "payload_insert.hex")),
		// 43 is no event type MySQL 8.4 or go-mysql v1.16.0 knows.
		makeEvent(43, 1, 30000, []byte{1, 2, 3}),
	)}
	evs, err := collect(t, replayEngine(t, "vt_commerce", src), Request{Position: "MySQL56/" + payloadUUID + ":1-118"}, 100)
	if !errors.Is(err, ErrUnsupportedEvent) || !strings.Contains(err.Error(), "type 43") {
		t.Fatalf("err = %v, want ErrUnsupportedEvent naming type 43", err)
	}
	if got := evtext.Shorts(evs); len(got) != 6 || got[4] != "COMMIT" {
		t.Fatalf("events before the unknown one = %q, want the whole transaction", got)
	}
}

// TestSkippableEvents guards the list of events skipped without a case in handle(): no event
// that carries or frames changes is on it.
func TestSkippableEvents(t *testing.T) {
	for _, typ := range []replication.EventType{
		replication.QUERY_EVENT, replication.XID_EVENT, replication.TABLE_MAP_EVENT,
		replication.WRITE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv0,
		replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT, replication.TRANSACTION_PAYLOAD_EVENT,
		replication.GTID_EVENT, replication.ANONYMOUS_GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT,
		replication.XA_PREPARE_LOG_EVENT, replication.INCIDENT_EVENT,
		// The file bytes of LOAD DATA (Begin_load_query, Append_block) may be skipped: the
		// Execute_load_query event that applies them is not (TestLoadDataStatement).
		replication.EXECUTE_LOAD_QUERY_EVENT,
		replication.LOAD_EVENT, replication.NEW_LOAD_EVENT, replication.CREATE_FILE_EVENT, replication.EXEC_LOAD_EVENT,
		replication.MARIADB_GTID_EVENT, replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.MARIADB_QUERY_COMPRESSED_EVENT,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1,
	} {
		if skippable[typ] {
			t.Errorf("%s is listed as skippable", typ)
		}
	}
	for typ := 43; typ < 160; typ++ {
		if skippable[typ] {
			t.Errorf("unknown type %d is listed as skippable", typ)
		}
	}
	for typ := 169; typ < 256; typ++ {
		if skippable[typ] {
			t.Errorf("unknown type %d is listed as skippable", typ)
		}
	}
}

// TestMySQLAnonymousTransactionEndsStream: after gtid_mode leaves ON, transactions are
// logged with an ANONYMOUS_GTID_LOG_EVENT and have no GTID to resume from; the stream ends
// naming gtid_mode. The event is the captured 8.0.19 GTID event body with the uuid and
// number cleared, as MySQL writes an anonymous one.
func TestMySQLAnonymousTransactionEndsStream(t *testing.T) {
	createCustomer(t)
	body := fixture(t, "gtid_body_8019.hex")
	clear(body[1:25])
	src := &replaySource{info: mysqlInfo(t, "MySQL56/"+payloadUUID+":1-118"), events: parseBinlog(t,
		formatEvent(),
		makeEvent(replication.ANONYMOUS_GTID_EVENT, 1, payloadStart, body),
		withChecksum(t, fixture(t, "payload_insert.hex")),
	)}
	evs, err := collect(t, replayEngine(t, "vt_commerce", src), Request{Position: "MySQL56/" + payloadUUID + ":1-118"}, 100)
	if !errors.Is(err, ErrServerConfig) || !strings.Contains(err.Error(), "gtid_mode=ON") {
		t.Fatalf("err = %v, want ErrServerConfig naming gtid_mode", err)
	}
	if len(evs) != 0 {
		t.Fatalf("events = %q, want none", evtext.Shorts(evs))
	}
}
