package sink

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// PositionText is a position in one line: keyspace/shard/gtid of each shard, joined by
// commas, and during a table copy each table's copy state after the GTID ("|t1=done",
// "|t2:1.3:0a6b2c" for a last primary key of lengths 1 and 3, in hex, "|t3" for a table
// not started). It is what record IDs are made of, so it depends on nothing but the
// positions (not on how the VGtid was encoded): two chunks of one copy read at the same
// GTID are two places.
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
		for _, tp := range sg.GetTablePKs() {
			b.WriteByte('|')
			b.WriteString(tp.GetTableName())
			if tp.GetCompleted() {
				b.WriteString("=done")
				continue
			}
			for _, row := range tp.GetLastpk().GetRows() {
				for j, n := range row.GetLengths() {
					if j == 0 {
						b.WriteByte(':')
					} else {
						b.WriteByte('.')
					}
					b.WriteString(strconv.FormatInt(n, 10))
				}
				b.WriteByte(':')
				b.WriteString(hex.EncodeToString(row.GetValues()))
			}
		}
	}
	return b.String()
}

// InCopy reports whether a stream at pos is copying tables: pos is a copy's start (no
// GTID) or carries table copy state. What such a stream sends after pos depends on when it
// is read, not only on pos: the rows of a chunk are read again, at a later snapshot, when
// the stream resumes from pos.
func InCopy(pos *binlogdata.VGtid) bool {
	for _, sg := range pos.GetShardGtids() {
		if sg.GetGtid() == "" || len(sg.GetTablePKs()) > 0 {
			return true
		}
	}
	return false
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
