package encoder

import (
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// echo is a format that makes one message of every event, so what passes the guard shows.
type echo struct{ recycled int }

func (e *echo) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	return append(out, &vstreamv1.EncodedMessage{Value: []byte(ev.GetType().String())}), nil
}

func (e *echo) Recycle() { e.recycled++ }

func guard(t *testing.T, opts map[string]string) (*Statements, *echo) {
	t.Helper()
	inner := &echo{}
	p := Params{Options: NewOptions(opts), Database: "shop"}
	g, err := GuardStatements(inner, "echo", p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Options.Unknown(); err != nil {
		t.Fatal(err)
	}
	return g, inner
}

func TestStatementsFail(t *testing.T) {
	g, inner := guard(t, nil)
	out, err := g.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW})
	if err != nil || len(out) != 1 {
		t.Fatalf("a row event: %v %v", out, err)
	}
	for _, c := range []struct {
		ev    *binlogdata.VEvent
		table string
	}{
		{&binlogdata.VEvent{Type: binlogdata.VEventType_UPDATE, EventGtid: "0-1-7", Dml: "UPDATE orders SET a = 1"}, "table shop.orders"},
		{&binlogdata.VEvent{Type: binlogdata.VEventType_DELETE, EventGtid: "0-1-8", Dml: "DELETE FROM orders",
			Source: &binlogdata.EventSource{Database: "other"}}, "table other.orders"},
		{&binlogdata.VEvent{Type: binlogdata.VEventType_REPLACE, EventGtid: "0-1-9", Dml: "REPLACE INTO `b`.`t` VALUES (1)"}, "table b.t"},
		{&binlogdata.VEvent{Type: binlogdata.VEventType_INSERT, EventGtid: "0-1-10", Dml: "INSERT INTO"}, "(not read from the statement)"},
	} {
		out, err := g.Encode(out[:0], c.ev)
		if !errors.Is(err, ErrStatementDML) || len(out) != 0 || !strings.Contains(err.Error(), "transaction "+c.ev.EventGtid+" ") ||
			!strings.Contains(err.Error(), c.table) || !strings.Contains(err.Error(), "format echo") {
			t.Errorf("%v: %v %v, want ErrStatementDML naming %s and %s", c.ev, out, err, c.ev.EventGtid, c.table)
		}
	}
	g.Recycle()
	if inner.recycled != 1 {
		t.Error("Recycle did not reach the format's encoder")
	}
}

func TestStatementsSkip(t *testing.T) {
	g, _ := guard(t, map[string]string{StatementDMLOption: "skip"})
	var skipped []Skipped
	g.OnSkip = func(s Skipped) { skipped = append(skipped, s) }
	var out []*vstreamv1.EncodedMessage
	var err error
	for _, ev := range []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN},
		{Type: binlogdata.VEventType_INSERT, EventGtid: "0-1-3", Dml: "insert into t values (1)"},
		{Type: binlogdata.VEventType_COMMIT},
	} {
		if out, err = g.Encode(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != 2 || string(out[0].Value) != "BEGIN" || string(out[1].Value) != "COMMIT" {
		t.Errorf("messages %v, want BEGIN and COMMIT only", out)
	}
	want := Skipped{GTID: "0-1-3", Table: "shop.t", Statement: "insert into t values (1)"}
	if len(skipped) != 1 || skipped[0] != want {
		t.Errorf("skipped %+v, want %+v", skipped, want)
	}
}

func TestStatementsOption(t *testing.T) {
	_, err := GuardStatements(&echo{}, "echo", Params{Options: NewOptions(map[string]string{StatementDMLOption: "drop"})})
	if err == nil || !strings.Contains(err.Error(), "want one of fail, skip") {
		t.Errorf("statement_dml=drop: %v", err)
	}
}
