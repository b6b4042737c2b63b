package client_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

func shardGtid(keyspace, shard, gtid string) *binlogdata.VGtid {
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: keyspace, Shard: shard, Gtid: gtid}}}
}

func TestParsePosition(t *testing.T) {
	withPKs := shardGtid("demo", "0", "MariaDB/0-1-5")
	withPKs.ShardGtids[0].TablePKs = []*binlogdata.TableLastPK{{TableName: "t1", Lastpk: &query.QueryResult{
		Rows: []*query.Row{{Lengths: []int64{1}, Values: []byte("9")}},
	}}}
	withPKsJSON, err := protojson.Marshal(withPKs)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		in              string
		keyspace, shard string
		want            *binlogdata.VGtid
		wantErr         string
	}{
		{in: "current", want: shardGtid("", "", "current")},
		{in: " CURRENT ", keyspace: "demo", shard: "0", want: shardGtid("demo", "0", "current")},
		{in: "MariaDB/0-1-100", keyspace: "demo", shard: "0", want: shardGtid("demo", "0", "MariaDB/0-1-100")},
		{in: "MariaDB/0-1-100,1-1-7", want: shardGtid("", "", "MariaDB/0-1-100,1-1-7")},
		{
			in:   "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4a6d2b9c-71ca-11e1-9e33-c80aa9429562:1-3",
			want: shardGtid("", "", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4a6d2b9c-71ca-11e1-9e33-c80aa9429562:1-3"),
		},
		{
			in:       `{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-5"}]}`,
			keyspace: "ignored",
			want:     shardGtid("demo", "0", "MariaDB/0-1-5"),
		},
		{in: `{"shard_gtids":[{"gtid":"MariaDB/0-1-5"}]}`, want: shardGtid("", "", "MariaDB/0-1-5")},
		{
			in:   `{"type":"VGTID","vgtid":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-5"}]},"keyspace":"demo","shard":"0"}`,
			want: shardGtid("demo", "0", "MariaDB/0-1-5"),
		},
		{in: string(withPKsJSON), want: withPKs},
		{in: `{"type":"VGTID", "vgtid":` + string(withPKsJSON) + `}`, want: withPKs},
		{in: "", wantErr: "empty position"},
		{in: "0-1-100", wantErr: `"MariaDB/`},
		{in: "mariadb/0-1-100", wantErr: `want "current"`},
		{in: "FilePos/binlog.000001:4", keyspace: "demo", shard: "0", want: shardGtid("demo", "0", "FilePos/binlog.000001:4")},
		{in: "filepos/binlog.000001:4", wantErr: `"FilePos/<binlog file>:<offset>"`},
		{in: "FilePos/binlog.000001", wantErr: "want FilePos/<binlog file>:<offset>"},
		{in: "FilePos/:4", wantErr: "want FilePos/<binlog file>:<offset>"},
		{in: "FilePos/binlog.000001:x", wantErr: "want FilePos/<binlog file>:<offset>"},
		{in: "FilePos/bin log.1:4", wantErr: "want FilePos/<binlog file>:<offset>"},
		{in: `{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"FilePos/binlog.000001:4"}]}`, want: shardGtid("demo", "0", "FilePos/binlog.000001:4")},
		{in: "MariaDB/", wantErr: "no GTID set"},
		{in: "MySQL56/ab :1", wantErr: "contains spaces"},
		{in: `{"shardGtids":`, wantErr: "invalid JSON"},
		{in: `{"shardGtids":[]}`, wantErr: "no shardGtids"},
		{in: `{"shardGtids":[{"keyspace":"demo"}]}`, wantErr: "no gtid"},
		{in: `{"nope":1}`, wantErr: "invalid VGtid JSON"},
		{in: `{"type":"HEARTBEAT"}`, wantErr: "has no vgtid"},
		{in: `{"type":"VGTID","vgtid":{"bad":1}}`, wantErr: "invalid VGTID event JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := client.ParsePosition(tt.in, tt.keyspace, tt.shard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePosition(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePosition(%q): %v", tt.in, err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("ParsePosition(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseTables(t *testing.T) {
	rules := func(matches ...string) *binlogdata.Filter {
		f := &binlogdata.Filter{}
		for _, m := range matches {
			f.Rules = append(f.Rules, &binlogdata.Rule{Match: m})
		}
		return f
	}
	tests := []struct {
		in   string
		want *binlogdata.Filter
	}{
		{"", nil},
		{" , ,", nil},
		{"t1", rules("t1")},
		{"t1,t2", rules("t1", "t2")},
		{" t1 , /^orders_\\d+$ ,, ", rules("t1", `/^orders_\d+$`)},
		{"/.*", rules("/.*")},
	}
	for _, tt := range tests {
		got := client.ParseTables(tt.in)
		if tt.want == nil {
			if got != nil {
				t.Errorf("ParseTables(%q) = %v, want nil", tt.in, got)
			}
			continue
		}
		if !proto.Equal(got, tt.want) {
			t.Errorf("ParseTables(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParsePositionCopy(t *testing.T) {
	v, err := client.ParsePosition("copy", "ks", "0")
	if err != nil {
		t.Fatal(err)
	}
	if g := v.GetShardGtids(); len(g) != 1 || g[0].GetGtid() != "" || g[0].GetKeyspace() != "ks" {
		t.Errorf("copy = %v, want one ShardGtid with an empty gtid", v)
	}
}
