package encoder

import (
	"errors"
	"fmt"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/sqltext"
)

// ErrStatementDML: a change logged as a statement (an INSERT, UPDATE, DELETE or REPLACE event
// carrying SQL in dml instead of row images) reached a format that has no form for it.
var ErrStatementDML = errors.New("format cannot carry a statement-based change")

// StatementDMLOption names the format option that says what a stream does with
// statement-based changes: "fail" (the default) ends the stream with ErrStatementDML, "skip"
// drops them and reports each one.
const StatementDMLOption = "statement_dml"

// IsStatementDML reports the event types of statement-based changes.
func IsStatementDML(t binlogdata.VEventType) bool {
	switch t {
	case binlogdata.VEventType_INSERT, binlogdata.VEventType_UPDATE, binlogdata.VEventType_DELETE, binlogdata.VEventType_REPLACE:
		return true
	default:
		// The other events are not statement-based DML.
	}
	return false
}

// Skipped describes a statement-based change a stream dropped.
type Skipped struct {
	// GTID is the transaction's own GTID; Table is database.table, or "" when the statement
	// could not be read.
	GTID, Table, Statement string
}

// Statements stands before a format's encoder and stops statement-based changes, which none
// of the formats can carry: each of them describes a change by its row images (canal's
// data/old, Debezium's before/after, ...), and a statement has none. A consumer given an
// INSERT with no rows would apply nothing and lose the change without knowing it, so the
// default ends the stream instead; a client that accepts the loss asks for "skip".
type Statements struct {
	Encoder
	format   string
	database string
	skip     bool
	// OnSkip, when set, is told of each change skipped (the server logs and counts them).
	OnSkip func(Skipped)
}

// GuardStatements wraps a format's encoder, reading the statement_dml option from p.
func GuardStatements(enc Encoder, format string, p Params) (*Statements, error) {
	mode, err := p.Options.String(StatementDMLOption, "fail", "fail", "skip")
	if err != nil {
		return nil, err
	}
	return &Statements{Encoder: enc, format: format, database: p.Database, skip: mode == "skip"}, nil
}

// Encode implements Encoder.
func (s *Statements) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	if !IsStatementDML(ev.GetType()) {
		return s.Encoder.Encode(out, ev)
	}
	sk := Skipped{GTID: ev.GetEventGtid(), Table: s.table(ev), Statement: ev.GetDml()}
	if s.skip {
		if s.OnSkip != nil {
			s.OnSkip(sk)
		}
		return out, nil
	}
	table := sk.Table
	if table == "" {
		table = "(not read from the statement)"
	}
	return out, fmt.Errorf("%w: transaction %s changed table %s by a statement, %q (the source logged it with binlog_format STATEMENT or MIXED), "+
		"and format %s describes changes by their rows; set binlog_format=ROW on the source, or start the stream with format option %s=skip to skip such changes",
		ErrStatementDML, sk.GTID, table, abbreviate(sk.Statement, 200), s.format, StatementDMLOption)
}

// Recycle passes the server's call on to the format's encoder.
func (s *Statements) Recycle() {
	if r, ok := s.Encoder.(Recycler); ok {
		r.Recycle()
	}
}

// table is the first table a statement writes, as database.table; an unqualified name is in
// the session's database when the event says which, else in the stream's.
func (s *Statements) table(ev *binlogdata.VEvent) string {
	_, tables, ok := sqltext.Classify(ev.GetDml())
	if !ok || len(tables) == 0 {
		return ""
	}
	db := tables[0].DB
	if db == "" {
		db = ev.GetSource().GetDatabase()
	}
	if db == "" {
		db = s.database
	}
	return db + "." + tables[0].Name
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
