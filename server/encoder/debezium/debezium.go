// Package debezium encodes changes as Debezium MySQL connector records: a key and an envelope
// value per row change, tombstones after deletes, schema-change records for DDL and, when
// asked, transaction boundaries, rendered as Kafka's JsonConverter renders them
// (debezium-json).
//
// Schema-change records: the copy of a table starts with one holding its CREATE TABLE and,
// in tableChanges, the table as its FIELD event describes it (columns with Debezium's JDBC
// types, type names, lengths, character sets, ENUM values; no comments or defaults, which
// the FIELD event lacks), as Debezium's snapshot writes them. A DDL's record has the
// statement and an empty tableChanges: the table after the DDL is not known when it is read.
//
// The Connect model is kept apart from the JSON rendering so that other converters can reuse
// it: Schema and Value are Connect schemas and typed values, TableSchema builds a table's key,
// row and envelope schemas and converts its cells, Records turns VEvents into Records, and a
// Serializer (JSONSerializer here) renders them. A change record's key and row images are not
// made into values: they refer to the row's cells (RowImages), which the serializer converts
// as it writes them, and the source block is made once per rows event.
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL): a BLOB or TEXT column the binlog did
// not log (the row change's data_columns) is __debezium_unavailable_value in after (the text in
// a TEXT column, its bytes in a BLOB column), as Debezium's MySQL and MariaDB connectors write
// it with their default unavailable.value.placeholder; other columns left out stay null, as
// there. The before image carries no such mark (Vitess sends none), so its unlogged columns
// are null. The Avro format (package avro) shares these records.
package debezium

import (
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// Name is the format's name.
const Name = "debezium-json"

// Encoder is a Debezium JSON encoder for one stream.
type Encoder struct {
	records *Records
}

// New builds an encoder from the stream's options: the connector options of ReadConfig and
// the converter's
//
//	schemas.enable   true (default): {"schema":..., "payload":...}; false: the payload alone
func New(p encoder.Params) (*Encoder, error) {
	cfg, err := ReadConfig(p)
	if err != nil {
		return nil, err
	}
	o := p.Options
	if o == nil {
		o = encoder.NewOptions(nil)
	}
	schemas, err := o.Bool("schemas.enable", true)
	if err != nil {
		return nil, err
	}
	return &Encoder{records: NewRecords(cfg, p, &JSONSerializer{Schemas: schemas, Format: Name})}, nil
}

// Recycle implements encoder.Recycler.
func (e *Encoder) Recycle() { e.records.Recycle() }

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	return e.records.Encode(out, ev)
}
