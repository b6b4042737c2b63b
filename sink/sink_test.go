package sink_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/sink"
)

func TestTopicMap(t *testing.T) {
	m := sink.TopicMap{Names: map[string]string{"app.app.orders": "orders"}, Prefix: "cdc.", Default: "changes"}
	for _, tc := range []struct{ in, want, err string }{
		{"app.app.orders", "orders", ""},
		{"app.app.customers", "cdc.app.app.customers", ""},
		{"", "cdc.changes", ""},
	} {
		if got, err := m.Map(tc.in); got != tc.want || err != nil {
			t.Errorf("Map(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := (sink.TopicMap{}).Map(""); err == nil {
		t.Error("a message without a topic and no default topic: want an error")
	}
	if _, err := sink.ParseTopicMap("a=b, =c"); err == nil {
		t.Error("ParseTopicMap with an empty name: want an error")
	}
}

func TestPosition(t *testing.T) {
	pos := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "app", Shard: "0", Gtid: "MariaDB/0-1-7",
		TablePKs: []*binlogdata.TableLastPK{{TableName: "t"}}}}}
	if got := sink.PositionText(pos); got != "app/0/MariaDB/0-1-7" {
		t.Errorf("PositionText = %q", got)
	}
	b, err := sink.MarshalPosition(pos)
	if err != nil {
		t.Fatal(err)
	}
	back, err := sink.UnmarshalPosition(b)
	if err != nil || sink.PositionText(back) != sink.PositionText(pos) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	for _, bad := range []string{"", "{}", "not json"} {
		if _, err := sink.UnmarshalPosition([]byte(bad)); err == nil {
			t.Errorf("UnmarshalPosition(%q): want an error", bad)
		}
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("too large")
	err := fmt.Errorf("commit: %w", sink.Permanent(base))
	if !sink.IsPermanent(err) || !errors.Is(err, base) {
		t.Errorf("a wrapped permanent error: IsPermanent %v, Is %v", sink.IsPermanent(err), errors.Is(err, base))
	}
	if sink.IsPermanent(base) || sink.Permanent(nil) != nil {
		t.Error("a plain error is not permanent, and nil stays nil")
	}
}
