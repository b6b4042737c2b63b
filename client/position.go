package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/position"
)

const positionForms = `"current", "copy" (copy the tables, then stream), "MariaDB/<domain>-<server>-<seq>[,...]", "MySQL56/<uuid>:<from>-<to>[,...]", "FilePos/<binlog file>:<offset>", ` +
	`a VGtid as JSON ({"shardGtids":[...]}) or a VGTID event as JSON ({"type":"VGTID","vgtid":{...}})`

// ParsePosition turns a user-supplied start position into a VGtid.
//
// Accepted forms:
//   - "current": start at the server's current position;
//   - a flavor-prefixed GTID set, "MariaDB/0-1-100[,1-1-7]" or "MySQL56/<uuid>:1-5[,...]";
//   - a file position, "FilePos/mysql-bin.000003:1234", for a server run with
//     --positions filepos;
//   - a VGtid as protojson, as printed in a VGTID event's "vgtid" field;
//   - a whole VGTID event as protojson, whose vgtid is taken.
//
// keyspace and shard apply to the first two forms; an empty keyspace lets the
// server fill in its own. JSON forms carry their own and are kept as they are,
// including table positions, so they resume exactly where the event said.
func ParsePosition(s, keyspace, shard string) (*binlogdata.VGtid, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, fmt.Errorf("empty position; want %s", positionForms)
	case strings.HasPrefix(s, "{"):
		return parseJSONPosition(s)
	case strings.EqualFold(s, "current"):
		return single(keyspace, shard, "current"), nil
	case strings.EqualFold(s, "copy"):
		// An empty position: copy the selected tables, then stream from where the copy ended.
		return single(keyspace, shard, ""), nil
	}
	flavor, body, ok := position.Cut(s)
	switch {
	case !ok:
		return nil, fmt.Errorf("invalid position %q: want %s", s, positionForms)
	case flavor == position.FilePos:
		file, off, ok := strings.Cut(body, ":")
		if _, err := strconv.ParseUint(off, 10, 64); !ok || file == "" || err != nil || strings.ContainsAny(body, " \t\r\n") {
			return nil, fmt.Errorf("invalid position %q: want FilePos/<binlog file>:<offset>, e.g. FilePos/mysql-bin.000003:1234", s)
		}
	case body == "" || strings.ContainsAny(body, " \t\r\n"):
		return nil, fmt.Errorf("invalid position %q: no GTID set after %q, or it contains spaces", s, string(flavor)+"/")
	}
	// The server parses the set itself, and names what is wrong with it.
	return single(keyspace, shard, s), nil
}

func single(keyspace, shard, gtid string) *binlogdata.VGtid {
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: keyspace, Shard: shard, Gtid: gtid}}}
}

func parseJSONPosition(s string) (*binlogdata.VGtid, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &keys); err != nil {
		return nil, fmt.Errorf("invalid JSON position: %w", err)
	}
	_, hasType := keys["type"]
	_, hasVgtid := keys["vgtid"]
	var vg *binlogdata.VGtid
	if hasType || hasVgtid {
		var ev binlogdata.VEvent
		if err := protojson.Unmarshal([]byte(s), &ev); err != nil {
			return nil, fmt.Errorf("invalid VGTID event JSON: %w", err)
		}
		if ev.GetVgtid() == nil {
			return nil, fmt.Errorf("event JSON of type %s has no vgtid", ev.GetType())
		}
		vg = ev.GetVgtid()
	} else {
		vg = &binlogdata.VGtid{}
		if err := protojson.Unmarshal([]byte(s), vg); err != nil {
			return nil, fmt.Errorf("invalid VGtid JSON: %w", err)
		}
	}
	if len(vg.GetShardGtids()) == 0 {
		return nil, errors.New("VGtid JSON has no shardGtids")
	}
	for i, sg := range vg.GetShardGtids() {
		if sg.GetGtid() == "" {
			return nil, fmt.Errorf("VGtid JSON: shardGtids[%d] has no gtid", i)
		}
	}
	return vg, nil
}

// ParseTables turns comma-separated table rules into a Filter: each rule is a
// table name or "/regex" (unanchored). Blank rules are skipped; no rules at all
// gives nil, which streams every table. A regex containing a comma cannot be
// written this way; build the Filter directly instead.
func ParseTables(s string) *binlogdata.Filter {
	var rules []*binlogdata.Rule
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			rules = append(rules, &binlogdata.Rule{Match: part})
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return &binlogdata.Filter{Rules: rules}
}
