package canalproto

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	canalpb "github.com/vstream-cdc/vstream/gen/canal"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// clockMs is the encode time tests give encoders.
const clockMs = 1700000000123

func newEncoder(t testing.TB, opts map[string]string) *Encoder {
	t.Helper()
	o := encoder.NewOptions(opts)
	e, err := New(encoder.Params{Options: o, Database: "shop", Flavor: "mariadb", Clock: func() time.Time { return time.UnixMilli(clockMs) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Unknown(); err != nil {
		t.Fatal(err)
	}
	return e
}

func row(vals ...any) *query.Row {
	r := &query.Row{}
	for _, v := range vals {
		if v == nil {
			r.Lengths = append(r.Lengths, -1)
			continue
		}
		s := v.(string)
		r.Lengths = append(r.Lengths, int64(len(s)))
		r.Values = append(r.Values, s...)
	}
	return r
}

func encode(t testing.TB, e *Encoder, evs ...*binlogdata.VEvent) []*vstreamv1.EncodedMessage {
	t.Helper()
	var out []*vstreamv1.EncodedMessage
	for _, ev := range evs {
		var err error
		if out, err = e.Encode(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	return out
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
