package sink

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// PositionText is a position in one line: keyspace/shard/gtid of each shard, joined by
// commas. It is what record IDs are made of, so it depends on nothing but the shards'
// positions (not on table positions nor on how the VGtid was encoded).
func PositionText(pos *binlogdata.VGtid) string {
	var b strings.Builder
	for i, sg := range pos.GetShardGtids() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(sg.GetKeyspace())
		b.WriteByte('/')
		b.WriteString(sg.GetShard())
		b.WriteByte('/')
		b.WriteString(sg.GetGtid())
	}
	return b.String()
}

// MarshalPosition is the form a Publisher saves a position in: the VGtid as protojson,
// which client.ParsePosition and vstream --position read back.
func MarshalPosition(pos *binlogdata.VGtid) ([]byte, error) {
	b, err := protojson.Marshal(pos)
	if err != nil {
		return nil, fmt.Errorf("marshal position: %w", err)
	}
	return b, nil
}

// UnmarshalPosition reads what MarshalPosition wrote.
func UnmarshalPosition(b []byte) (*binlogdata.VGtid, error) {
	pos := &binlogdata.VGtid{}
	if err := protojson.Unmarshal(b, pos); err != nil {
		return nil, fmt.Errorf("saved position %q: %w", b, err)
	}
	if len(pos.GetShardGtids()) == 0 {
		return nil, fmt.Errorf("saved position %q has no shard positions", b)
	}
	return pos, nil
}
