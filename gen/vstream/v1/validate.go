package vstreamv1

import (
	"errors"
	"fmt"
	"strings"
)

// Validate checks what can be checked of a request without the server's state, so that a
// malformed request is refused with InvalidArgument before any work starts. The gRPC
// validator interceptor calls it on every message received.
func (r *StreamRequest) Validate() error {
	switch k := r.GetKind().(type) {
	case *StreamRequest_Start:
		return k.Start.Validate()
	case *StreamRequest_Ack:
		return k.Ack.Validate()
	case *StreamRequest_Snapshot:
		return k.Snapshot.Validate()
	}
	return errors.New("request is empty: the first message must be a start, later ones acks or snapshots")
}

// Validate checks a Snapshot: table names, no patterns.
func (s *Snapshot) Validate() error {
	if len(s.GetTables()) == 0 {
		return errors.New("snapshot: name at least one table")
	}
	for i, t := range s.GetTables() {
		if t == "" || strings.HasPrefix(t, "/") {
			return fmt.Errorf("snapshot.tables[%d] %q is not a table name: give the names, without patterns", i, t)
		}
	}
	return nil
}

// Validate checks a Start.
func (s *Start) Validate() error {
	if d := s.GetFlags().GetHeartbeatInterval(); d != nil {
		if err := d.CheckValid(); err != nil {
			return fmt.Errorf("start.flags.heartbeat_interval: %w", err)
		}
		if d.AsDuration() < 0 {
			return errors.New("start.flags.heartbeat_interval is negative")
		}
	}
	if s.GetFlags().GetMaxBatchBytes() < 0 {
		return errors.New("start.flags.max_batch_bytes is negative")
	}
	if s.GetFlags().GetCopyChunkRows() < 0 {
		return errors.New("start.flags.copy_chunk_rows is negative")
	}
	for i, m := range s.GetFlags().GetColumnMasks() {
		if m.GetTable() == "" || m.GetColumn() == "" || m.GetRule() == "" {
			return fmt.Errorf("start.flags.column_masks[%d] (table %q column %q rule %q): give a table (name or /regex), a column and a rule (mask.with.N.chars, mask.hash.ALGO.with.salt.SALT or truncate.to.N.chars)",
				i, m.GetTable(), m.GetColumn(), m.GetRule())
		}
	}
	for i, lp := range s.GetVgtid().GetShardGtids() {
		for j, t := range lp.GetTablePKs() {
			if t.GetTableName() == "" {
				return fmt.Errorf("start.vgtid.shard_gtids[%d].table_p_ks[%d].table_name is empty", i, j)
			}
		}
	}
	for i, r := range s.GetFilter().GetRules() {
		if r.GetMatch() == "" {
			return fmt.Errorf("start.filter.rules[%d].match is empty: give a table name or /regex", i)
		}
	}
	return nil
}

// Validate checks an Ack.
func (a *Ack) Validate() error {
	if len(a.GetVgtid().GetShardGtids()) == 0 {
		return errors.New("ack.vgtid is empty: acknowledge a VGtid the server sent")
	}
	return nil
}
