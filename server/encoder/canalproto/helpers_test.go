package canalproto

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	canalpb "github.com/vstream-cdc/vstream/gen/canal"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// Shared test helpers.
var (
	row    = encodertest.Row
	encode = encodertest.Encode
)

// clockMs is the encode time tests give encoders.
const clockMs = 1700000000123

func newEncoder(t testing.TB, opts map[string]string) *Encoder {
	t.Helper()
	return encodertest.New(t, New, encoder.Params{Database: "shop", Flavor: "mariadb", Clock: func() time.Time { return time.UnixMilli(clockMs) }}, opts)
}

// decoded is one entry read back with the generated types.
type decoded struct {
	entry *canalpb.Entry
	// store is the storeValue parsed by entryType.
	store proto.Message
}

func (d decoded) rowChange() *canalpb.RowChange {
	rc, _ := d.store.(*canalpb.RowChange)
	return rc
}

// decodeEntry parses a serialized Entry and its storeValue.
func decodeEntry(t testing.TB, b []byte) decoded {
	t.Helper()
	d := decoded{entry: &canalpb.Entry{}}
	if err := proto.Unmarshal(b, d.entry); err != nil {
		t.Fatalf("entry: %v", err)
	}
	switch d.entry.GetEntryType() {
	case canalpb.EntryType_TRANSACTIONBEGIN:
		d.store = &canalpb.TransactionBegin{}
	case canalpb.EntryType_TRANSACTIONEND:
		d.store = &canalpb.TransactionEnd{}
	case canalpb.EntryType_ROWDATA:
		d.store = &canalpb.RowChange{}
	case canalpb.EntryType_GTIDLOG:
		d.store = &canalpb.Pair{}
	default:
		t.Fatalf("entry type %v", d.entry.GetEntryType())
	}
	if err := proto.Unmarshal(d.entry.GetStoreValue(), d.store); err != nil {
		t.Fatalf("storeValue of %v: %v", d.entry.GetEntryType(), err)
	}
	return d
}

// decodePacket parses a Packet value down to its entries.
func decodePacket(t testing.TB, b []byte) (*canalpb.Packet, *canalpb.Messages, []decoded) {
	t.Helper()
	p := &canalpb.Packet{}
	if err := proto.Unmarshal(b, p); err != nil {
		t.Fatalf("packet: %v", err)
	}
	m := &canalpb.Messages{}
	if err := proto.Unmarshal(p.GetBody(), m); err != nil {
		t.Fatalf("messages: %v", err)
	}
	var out []decoded
	for _, e := range m.GetMessages() {
		out = append(out, decodeEntry(t, e))
	}
	return p, m, out
}
