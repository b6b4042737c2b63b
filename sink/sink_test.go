package sink_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
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
	lastpk := func(lengths []int64, values string) *query.QueryResult {
		return &query.QueryResult{Rows: []*query.Row{{Lengths: lengths, Values: []byte(values)}}}
	}
	shard := func(gtid string, pks ...*binlogdata.TableLastPK) *binlogdata.VGtid {
		return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "app", Shard: "0", Gtid: gtid, TablePKs: pks}}}
	}
	for _, tc := range []struct {
		name   string
		pos    *binlogdata.VGtid
		text   string
		inCopy bool
	}{
		{"binlog", shard("MariaDB/0-1-7"), "app/0/MariaDB/0-1-7", false},
		{"copy start", shard(""), "app/0/", true},
		{"table not started", shard("MariaDB/0-1-7", &binlogdata.TableLastPK{TableName: "t"}), "app/0/MariaDB/0-1-7|t", true},
		{"chunk", shard("MariaDB/0-1-7", &binlogdata.TableLastPK{TableName: "t", Lastpk: lastpk([]int64{2}, "42")}), "app/0/MariaDB/0-1-7|t:2:3432", true},
		{"composite key with a null", shard("MariaDB/0-1-7", &binlogdata.TableLastPK{TableName: "t", Lastpk: lastpk([]int64{1, -1}, "a")}), "app/0/MariaDB/0-1-7|t:1.-1:61", true},
		{"tables done and going", shard("MariaDB/0-1-9", &binlogdata.TableLastPK{TableName: "a", Completed: true},
			&binlogdata.TableLastPK{TableName: "b", Lastpk: lastpk([]int64{1}, "7")}), "app/0/MariaDB/0-1-9|a=done|b:1:37", true},
		{"two shards", &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "a", Shard: "-80", Gtid: "g1"}, {Keyspace: "a", Shard: "80-", Gtid: "g2"}}},
			"a/-80/g1,a/80-/g2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sink.PositionText(tc.pos); got != tc.text {
				t.Errorf("PositionText = %q, want %q", got, tc.text)
			}
			if got := sink.InCopy(tc.pos); got != tc.inCopy {
				t.Errorf("InCopy = %v, want %v", got, tc.inCopy)
			}
		})
	}
	pos := shard("MariaDB/0-1-7", &binlogdata.TableLastPK{TableName: "t"})
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
