package debezium

import (
	"strings"

	"github.com/vstream-cdc/vstream/server/encoder"
)

// Type is a Kafka Connect schema type.
type Type uint8

// The Connect schema types.
const (
	Int8 Type = iota + 1
	Int16
	Int32
	Int64
	Float32
	Float64
	Boolean
	String
	Bytes
	Array
	Map
	Struct
)

var typeNames = [...]string{Int8: "int8", Int16: "int16", Int32: "int32", Int64: "int64", Float32: "float",
	Float64: "double", Boolean: "boolean", String: "string", Bytes: "bytes", Array: "array", Map: "map", Struct: "struct"}

// String is the type's name in a Connect schema's JSON form ("int64", "double", ...).
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "invalid"
}

// Schema is a Kafka Connect schema: what Debezium's records are typed with, independent of the
// converter (JSON, Avro) that serializes them.
type Schema struct {
	Type Type
	// Name is the logical (semantic) name, e.g. "io.debezium.time.Date", or a struct's full
	// name, e.g. "prefix.db.table.Value"; empty when none.
	Name string
	// Version is the schema version; 0 when none.
	Version  int
	Doc      string
	Optional bool
	// Parameters are the schema's parameters in the order Debezium adds them.
	Parameters []Param
	// Default is the default value, when the schema has one.
	Default *Value
	// Fields are a struct's fields, in order.
	Fields []Field
	// Items is an array's element schema; Keys and Values a map's.
	Items, Keys, Values *Schema
}

// Param is one schema parameter.
type Param struct{ Key, Value string }

// AppendParams appends parameters as a JSON object of strings, in their order, the way both
// Connect's JSON schemas and AvroData's connect.parameters write them.
func AppendParams(dst []byte, ps []Param) []byte {
	dst = append(dst, '{')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = encoder.AppendJSONString(dst, p.Key)
		dst = append(dst, ':')
		dst = encoder.AppendJSONString(dst, p.Value)
	}
	return append(dst, '}')
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Param returns a parameter's value, or "" when the schema does not have it.
func (s *Schema) Param(key string) string {
	for _, p := range s.Parameters {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

// Field returns the index of a struct field, or -1.
func (s *Schema) Field(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Logical (semantic) type names Debezium and Kafka Connect give primitive schemas.
const (
	DecimalName        = "org.apache.kafka.connect.data.Decimal"
	DateName           = "io.debezium.time.Date"
	TimestampName      = "io.debezium.time.Timestamp"
	MicroTimestampName = "io.debezium.time.MicroTimestamp"
	MicroTimeName      = "io.debezium.time.MicroTime"
	ZonedTimestampName = "io.debezium.time.ZonedTimestamp"
	YearName           = "io.debezium.time.Year"
	BitsName           = "io.debezium.data.Bits"
	EnumName           = "io.debezium.data.Enum"
	EnumSetName        = "io.debezium.data.EnumSet"
	JSONName           = "io.debezium.data.Json"
	GeometryName       = "io.debezium.data.geometry.Geometry"
	PointName          = "io.debezium.data.geometry.Point"
	FloatVectorName    = "io.debezium.data.FloatVector"
)

func primitive(t Type, optional bool) *Schema { return &Schema{Type: t, Optional: optional} }

func named(t Type, name string, optional bool, params ...Param) *Schema {
	return &Schema{Type: t, Name: name, Version: 1, Optional: optional, Parameters: params}
}

func structOf(name string, version int, optional bool, fields ...Field) *Schema {
	return &Schema{Type: Struct, Name: name, Version: version, Optional: optional, Fields: fields}
}

// AdjustName applies schema.name.adjustment.mode=avro to a schema name: characters Avro does
// not allow in a full name become '_' (dots stay: they separate the namespace). Like Debezium,
// which works on Java chars, a character outside the BMP becomes two '_'.
func AdjustName(name string) string {
	ok := func(first bool, r rune) bool {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if first {
			return letter
		}
		return letter || r >= '0' && r <= '9' || r == '.'
	}
	clean := true
	for i, r := range name {
		if !ok(i == 0, r) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	for i, r := range name {
		switch {
		case ok(i == 0, r):
			b.WriteRune(r)
		case r > 0xffff:
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
