package vstreamer

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/sqlguard"
)

// ResultsRequest asks for the result of one SELECT read from a consistent snapshot, with the
// snapshot's GTID position, the way Vitess's VStreamResults serves vdiff.
type ResultsRequest struct {
	// Keyspace names the database to query (see Engine.Database); empty is the configured one.
	Keyspace string
	// Query is one SELECT on the tables of the engine's database (sqlguard.CheckSelect).
	Query string
	// MaxBatchBytes bounds the row bytes of one batch; zero means the engine's MaxBatchBytes.
	MaxBatchBytes int
}

// StreamResults runs req.Query in a read-only transaction on a consistent snapshot and sends
// its fields and the snapshot's GTID in a first batch, then its rows. Values are encoded as
// the table copy encodes them, but for FLOAT and DOUBLE, which are the server's text. A query that is not one SELECT on the database fails with
// sqlguard.ErrNotAllowed before anything runs.
func (e *Engine) StreamResults(ctx context.Context, req ResultsRequest, send RowsFunc) error {
	if err := e.snapshotFilePos("reading a query's results (VStreamResults)"); err != nil {
		return err
	}
	db, err := e.Database(req.Keyspace)
	if err != nil {
		return err
	}
	tables, err := sqlguard.CheckSelect(req.Query, db)
	if err != nil {
		return err
	}
	r, err := e.openReader(ctx, filter.All(), db)
	if err != nil {
		return err
	}
	defer r.close()
	if err = r.resultsSnapshot(ctx, db, tables); err != nil {
		return err
	}
	maxBatch := req.MaxBatchBytes
	if maxBatch <= 0 {
		maxBatch = e.cfg.MaxBatchBytes
	}
	stopKill := context.AfterFunc(ctx, func() { r.kill() })
	defer stopKill()

	var (
		cols    []rowcodec.Column
		raw     []bool
		b       = &rowsBatcher{maxBatch: maxBatch, send: send, batch: &RowsBatch{}}
		sendErr error
		result  mysql.Result
	)
	err = r.s.copy.conn.ExecuteSelectStreaming(req.Query, &result, func(row []mysql.FieldValue) error {
		start, lstart := len(b.arena), len(b.lens)
		if aerr := b.appendResult(row, cols, raw); aerr != nil {
			return aerr
		}
		if !b.addRow(start, lstart) {
			return nil
		}
		if ferr := b.flush(); ferr != nil {
			sendErr = ferr
			return ferr
		}
		return nil
	}, func(res *mysql.Result) error {
		var fields []*query.Field
		cols, fields = resultColumns(res.Fields)
		// FLOAT and DOUBLE values go out as the server printed them, as Vitess's result
		// stream sends them.
		raw = make([]bool, len(cols))
		for i := range cols {
			raw[i] = isFloat(cols[i].Type)
		}
		if kerr := keepFloatText(res); kerr != nil {
			return kerr
		}
		if serr := send(&RowsBatch{Fields: fields, GTID: r.gtid}); serr != nil {
			sendErr = serr
			return serr
		}
		return nil
	})
	if sendErr != nil {
		return sendErr
	}
	if err != nil {
		return resultsErr(ctx, err)
	}
	return b.flush()
}

// resultsSnapshot readies the reader's connection for a query of database db, and starts
// its snapshot; on MySQL the tables read are locked while the snapshot starts, as for a copy.
func (r *snapshotReader) resultsSnapshot(ctx context.Context, db string, tables []string) error {
	// Unqualified table names are the database's. A result's text columns may come from any
	// expression, which has no column character set to keep: text comes as utf8mb4, labelled
	// so, as Vitess's own result stream returns it.
	for _, q := range []string{"USE " + filter.QuoteIdent(db), "SET SESSION character_set_results = utf8mb4"} {
		if _, err := r.s.copy.conn.Execute(q); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnavailable, q, err)
		}
	}
	return r.snapshot(ctx, tables...)
}

// appendResult appends a result row's values and lengths to the batcher's arena: FLOAT and
// DOUBLE (raw) as the server printed them, the others as a copy encodes them.
func (b *rowsBatcher) appendResult(row []mysql.FieldValue, cols []rowcodec.Column, raw []bool) error {
	for i := range row {
		before := len(b.arena)
		var null bool
		var err error
		if raw[i] && row[i].Type == mysql.FieldValueTypeString {
			b.arena = append(b.arena, row[i].AsString()...)
		} else if b.arena, null, err = cols[i].AppendCopied(b.arena, &row[i]); err != nil {
			return err
		}
		if null {
			b.lens = append(b.lens, -1)
		} else {
			b.lens = append(b.lens, int64(len(b.arena)-before))
		}
	}
	return nil
}

// resultsErr is the error of a query that failed: the client's to fix when the server
// refused it.
func resultsErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		// The server refused the query (a missing column, a syntax it does not take):
		// the client's to fix.
		return fmt.Errorf("%w: %s (errno %d)", sqlguard.ErrNotAllowed, me.Message, me.Code)
	}
	return fmt.Errorf("%w: query: %v", ErrUnavailable, err)
}

// resultColumns describes a result's columns as the server sent them, and how to encode
// their values.
func resultColumns(fs []*mysql.Field) ([]rowcodec.Column, []*query.Field) {
	cols := make([]rowcodec.Column, len(fs))
	fields := make([]*query.Field, len(fs))
	for i, f := range fs {
		c := rowcodec.Column{
			Name:      string(f.Name),
			Type:      f.Type,
			Unsigned:  f.Flag&mysql.UNSIGNED_FLAG != 0,
			Nullable:  f.Flag&mysql.NOT_NULL_FLAG == 0,
			Collation: uint64(f.Charset),
			Decimals:  int(f.Decimal),
		}
		// The wire says ENUM and SET by flag on a string column.
		switch {
		case f.Flag&mysql.ENUM_FLAG != 0:
			c.Type = mysql.MYSQL_TYPE_ENUM
		case f.Flag&mysql.SET_FLAG != 0:
			c.Type = mysql.MYSQL_TYPE_SET
		}
		cols[i] = c
		fields[i] = &query.Field{
			Name:         string(f.Name),
			Type:         c.QueryType(),
			Table:        string(f.Table),
			OrgTable:     string(f.OrgTable),
			Database:     string(f.Schema),
			OrgName:      string(f.OrgName),
			ColumnLength: f.ColumnLength,
			Charset:      uint32(f.Charset),
			Decimals:     uint32(f.Decimal),
			Flags:        uint32(f.Flag),
		}
	}
	return cols, fields
}
