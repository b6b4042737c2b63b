package vstreamer

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// tablePlan is how rows of one table id are turned into events.
type tablePlan struct {
	name string
	// selected is false for tables the filter leaves out (or of other databases).
	selected bool
	cols     []rowcodec.Column
	fields   []*query.Field
	// signature of the TABLE_MAP the plan was built from, to notice a reused table id.
	types []byte
	meta  []uint16
	names []string
	// arenaHint is the size of the last rows event's values, to size the next one's buffer.
	arenaHint int
}

func (p *tablePlan) fits(tm *replication.TableMapEvent) bool {
	return p.name == string(tm.Table) && bytes.Equal(p.types, tm.ColumnType) && slices.Equal(p.meta, tm.ColumnMeta) &&
		slices.Equal(p.names, tm.ColumnNameString())
}

func (s *stream) tableMap(ts uint32, tm *replication.TableMapEvent) error {
	p := s.plans[tm.TableID]
	if p == nil || !p.fits(tm) {
		var err error
		if p, err = s.buildPlan(tm); err != nil {
			return err
		}
		s.plans[tm.TableID] = p
	}
	if !p.selected {
		return nil
	}
	if prev := s.fieldsFor[p.name]; prev == p || prev != nil && sameFields(prev.fields, p.fields) {
		s.fieldsFor[p.name] = p
		return nil
	}
	s.fieldsFor[p.name] = p
	s.begin(ts)
	s.add(&binlogdata.VEvent{
		Type:      binlogdata.VEventType_FIELD,
		Timestamp: int64(ts),
		EventGtid: s.eventGTI,
		FieldEvent: &binlogdata.FieldEvent{
			TableName:           p.name,
			Fields:              p.fields,
			Keyspace:            s.cfg.Keyspace,
			Shard:               s.cfg.Shard,
			EnumSetStringValues: true,
		},
	})
	return nil
}

func sameFields(a, b []*query.Field) bool {
	return slices.EqualFunc(a, b, func(x, y *query.Field) bool { return proto.Equal(x, y) })
}

func (s *stream) buildPlan(tm *replication.TableMapEvent) (*tablePlan, error) {
	p := &tablePlan{
		name:  string(tm.Table),
		types: slices.Clone(tm.ColumnType),
		meta:  slices.Clone(tm.ColumnMeta),
		names: slices.Clone(tm.ColumnNameString()),
	}
	if string(tm.Schema) != s.cfg.Database || s.filter.Table(p.name) == nil {
		return p, nil
	}
	p.selected = true
	cols, hasNames := rowcodec.FromTableMap(tm)
	info, err := schema.Load(s.conn, s.cfg.Database, p.name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := schema.Reconcile(cols, hasNames, info); err != nil {
		if !errors.Is(err, schema.ErrMismatch) {
			return nil, err
		}
		if !s.filter.BestEffort() {
			return nil, fmt.Errorf("%w: table %s: %v; set binlog_row_metadata=FULL or use field_event_mode BEST_EFFORT", ErrSchema, p.name, err)
		}
		schema.NameByPosition(cols)
	}
	p.cols = cols
	p.fields = make([]*query.Field, len(cols))
	for i := range cols {
		p.fields[i] = cols[i].Field(s.cfg.Database, p.name)
	}
	return p, nil
}

func (s *stream) rows(ts uint32, _ replication.EventType, e *replication.RowsEvent) error {
	p := s.plans[e.TableID]
	if p == nil || !p.selected {
		return nil
	}
	if int(e.ColumnCount) != len(p.cols) {
		return fmt.Errorf("%w: table %s: rows event has %d columns, table map %d", ErrSchema, p.name, e.ColumnCount, len(p.cols))
	}
	update := e.Type() == replication.EnumRowsEventTypeUpdate
	insert := e.Type() == replication.EnumRowsEventTypeInsert
	n := len(e.Rows)
	if update {
		n /= 2
	}
	changes := make([]binlogdata.RowChange, n)
	ptrs := make([]*binlogdata.RowChange, n)
	images := 1
	if update {
		images = 2
	}
	qrows := make([]query.Row, n*images)
	lengths := make([]int64, n*images*len(p.cols))
	arena := make([]byte, 0, p.arenaHint+p.arenaHint/4)
	size := 0
	for i := 0; i < n; i++ {
		for img := 0; img < images; img++ {
			row := e.Rows[i*images+img]
			qr := &qrows[i*images+img]
			lens := lengths[(i*images+img)*len(p.cols) : (i*images+img+1)*len(p.cols)]
			start := len(arena)
			for c := range p.cols {
				if c >= len(row) {
					lens[c] = -1
					continue
				}
				before := len(arena)
				var null bool
				var err error
				arena, null, err = p.cols[c].Append(arena, row[c])
				if err != nil {
					return fmt.Errorf("table %s: %w", p.name, err)
				}
				if null {
					lens[c] = -1
				} else {
					lens[c] = int64(len(arena) - before)
				}
			}
			qr.Lengths = lens
			qr.Values = arena[start:len(arena):len(arena)]
			size += len(arena) - start + 2*len(lens)
			switch {
			case update && img == 0, !update && !insert:
				changes[i].Before = qr
			default:
				changes[i].After = qr
			}
		}
		ptrs[i] = &changes[i]
	}
	p.arenaHint = len(arena)
	s.begin(ts)
	s.add(&binlogdata.VEvent{
		Type:      binlogdata.VEventType_ROW,
		Timestamp: int64(ts),
		EventGtid: s.eventGTI,
		RowEvent: &binlogdata.RowEvent{
			TableName:  p.name,
			RowChanges: ptrs,
			Keyspace:   s.cfg.Keyspace,
			Shard:      s.cfg.Shard,
			Flags:      uint32(e.Flags),
		},
	})
	s.batchSize += size
	return nil
}
