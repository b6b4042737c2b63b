// Package avro encodes changes as Debezium records serialized the way Confluent's
// AvroConverter serializes them (formats.md 10.1): the same Connect keys and envelopes as
// debezium-json, in Avro binary with the Confluent framing, 0x00, a 4-byte big-endian schema
// id, then the Avro datum. Tombstones stay null values (Tombstone set, empty value) whose key is
// still framed Avro.
//
// A consumer needs no schema registry: the stream carries the writer schemas itself. Before the
// first record whose key or value uses a schema, a schema message goes out on the record's
// topic: its value is the Avro schema (JSON text), its key is empty, and its headers say what
// it is:
//
//	vstream.message         "schema" (records carry no such header)
//	vstream.schema.id       the id the stream's records frame it with, decimal
//	vstream.schema.subject  "<topic>-key" or "<topic>-value" (Confluent's TopicNameStrategy)
//
// Ids are given by the encoder, per stream: 1, 2, ... in the order schemas are first used, one
// id per distinct schema text, as a registry would. They mean nothing outside their stream; a
// consumer that forwards records to Kafka registers each schema message's schema under its
// subject and rewrites the id in the frame to the one the registry returned, as vstream-sink
// does with --schema-registry-url (package sink/registry). A subject is
// announced again whenever the schema its records use changes: a table's value schema after a
// DDL that changed its columns gets a new id and a new schema message.
//
// Schemas follow AvroData.fromConnectSchema: structs are records named from the Connect name
// split at its last '.', optional schemas are unions ["null", T] with a null default ([T,
// "null"] with the Connect default when there is one, as for source.snapshot), int8 and int16
// are ints with connect.type, Decimal is bytes with logicalType decimal, precision and scale,
// and Debezium's semantic types keep their primitive type and say what they are in connect.name,
// connect.version and connect.parameters. Each schema is checked with an Avro parser when it is
// first made; values are then written by a plan compiled from it.
//
// The __debezium.oldkey and __debezium.newkey headers of primary-key changes hold the key
// struct as JSON (a header map holds text), as Kafka's SimpleHeaderConverter renders structs.
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL) are as in debezium-json: a BLOB or
// TEXT column the binlog did not log is __debezium_unavailable_value in after (bytes in a BLOB
// column), other columns left out are null.
package avro

import (
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
)

// Name is the format's name.
const Name = "avro"

// Headers of schema messages.
const (
	// HeaderMessage marks a schema message; its value is MessageSchema.
	HeaderMessage = "vstream.message"
	// HeaderSchemaID is the schema's id, in decimal.
	HeaderSchemaID = "vstream.schema.id"
	// HeaderSubject is the subject the schema is registered under.
	HeaderSubject = "vstream.schema.subject"
	// MessageSchema is HeaderMessage's value.
	MessageSchema = "schema"
)

// Encoder is a Debezium Avro encoder for one stream.
type Encoder struct {
	records *debezium.Records
	ser     *Serializer
}

// New builds an encoder from the stream's options: the connector options of
// debezium.ReadConfig, with names Avro-safe by default, and
//
//	schema.name.adjustment.mode  avro (default) or none: characters Avro does not allow in
//	                             record names become '_'
//	field.name.adjustment.mode   avro (default) or none: the same for field (column) names,
//	                             where '.' is not allowed either
//
// The JSON converter's schemas.enable does not apply and is refused as unknown. With none, a
// name Avro does not allow makes the first record of its table fail.
func New(p encoder.Params) (*Encoder, error) {
	if p.Options == nil {
		p.Options = encoder.NewOptions(nil)
	}
	o := p.Options
	names, err := o.String("schema.name.adjustment.mode", "avro", "none", "avro")
	if err != nil {
		return nil, err
	}
	fields, err := o.String("field.name.adjustment.mode", "avro", "none", "avro")
	if err != nil {
		return nil, err
	}
	// ReadConfig reads schema.name.adjustment.mode too, with Debezium's default; this format's
	// default wins when the option is not given.
	cfg, err := debezium.ReadConfig(p)
	if err != nil {
		return nil, err
	}
	cfg.AvroNames = names == "avro"
	ser := NewSerializer(Name, fields == "avro")
	return &Encoder{records: debezium.NewRecords(cfg, p, ser), ser: ser}, nil
}

// Recycle implements encoder.Recycler.
func (e *Encoder) Recycle() { e.records.Recycle() }

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	n := len(out)
	out, err := e.records.Encode(out, ev)
	return e.ser.Place(out, n), err
}
