package avro

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
)

// Property names and values AvroData gives converted schemas.
const (
	propConnectName    = "connect.name"
	propConnectVersion = "connect.version"
	propConnectDoc     = "connect.doc"
	propConnectParams  = "connect.parameters"
	propConnectDefault = "connect.default"
	propConnectType    = "connect.type"

	// defaultNamespace and defaultName name structs that have no Connect name.
	defaultNamespace = "io.confluent.connect.avro"
	defaultName      = "ConnectDefault"
	// defaultPrecision is a Decimal's precision when its schema does not give one.
	defaultPrecision = 38

	// Kafka Connect's own logical types, which have Avro logical counterparts.
	connectDate      = "org.apache.kafka.connect.data.Date"
	connectTime      = "org.apache.kafka.connect.data.Time"
	connectTimestamp = "org.apache.kafka.connect.data.Timestamp"
)

// Convert returns the Avro schema (JSON text) AvroData makes of a Connect schema. fieldNames
// says whether field names are made Avro-safe (field.name.adjustment.mode=avro).
func Convert(s *debezium.Schema, fieldNames bool) (string, error) {
	text, _, err := convert(s, fieldNames)
	return text, err
}

// convert returns the Avro schema of a Connect schema and the plan its values are written with.
func convert(s *debezium.Schema, fieldNames bool) (string, *node, error) {
	c := converter{fieldNames: fieldNames, named: map[string]*namedType{}}
	b, n, err := c.schema(nil, s, "")
	if err != nil {
		return "", nil, err
	}
	return string(b), n, nil
}

// converter converts one schema document.
type converter struct {
	fieldNames bool
	// named holds the records defined so far in the document: Avro allows one definition per
	// name, later uses refer to it by name.
	named map[string]*namedType
}

type namedType struct {
	schema      *debezium.Schema
	node        *node
	space, name string
}

// schema appends the Avro schema of s, inside a document whose enclosing namespace is ns.
func (c *converter) schema(dst []byte, s *debezium.Schema, ns string) ([]byte, *node, error) {
	var base []byte
	var n *node
	var err error
	if s.Type == debezium.Struct {
		base, n, err = c.record(nil, s, ns)
	} else {
		base, n, err = c.unnamed(nil, s, ns)
	}
	if err != nil {
		return dst, nil, err
	}
	if !s.Optional {
		return append(dst, base...), n, nil
	}
	// A union's default must be of its first branch: null, unless the schema has a default.
	u := *n
	if s.Default != nil {
		u.union = nullLast
		dst = append(dst, '[')
		dst = append(dst, base...)
		return append(dst, `,"null"]`...), &u, nil
	}
	u.union = nullFirst
	dst = append(dst, `["null",`...)
	dst = append(dst, base...)
	return append(dst, ']'), &u, nil
}

// unnamed appends the Avro schema of a primitive or array Connect schema, not optional.
func (c *converter) unnamed(dst []byte, s *debezium.Schema, ns string) ([]byte, *node, error) {
	n := &node{}
	var avroType, connectType string
	switch s.Type {
	case debezium.Int8:
		avroType, connectType, n.kind = "int", "int8", kInt
	case debezium.Int16:
		avroType, connectType, n.kind = "int", "int16", kInt
	case debezium.Int32:
		avroType, n.kind = "int", kInt
	case debezium.Int64:
		avroType, n.kind = "long", kLong
	case debezium.Float32:
		avroType, n.kind = "float", kFloat
	case debezium.Float64:
		avroType, n.kind = "double", kDouble
	case debezium.Boolean:
		avroType, n.kind = "boolean", kBool
	case debezium.String:
		avroType, n.kind = "string", kString
	case debezium.Bytes:
		avroType, n.kind = "bytes", kBytes
	case debezium.Array:
		avroType, n.kind = "array", kArray
	default:
		return dst, nil, fmt.Errorf("connect type %s has no Avro form here", s.Type)
	}
	decimal := s.Type == debezium.Bytes && strings.EqualFold(s.Name, debezium.DecimalName)
	if s.Type != debezium.Array && !decimal && connectType == "" && !hasProps(s) {
		dst = append(dst, '"')
		dst = append(dst, avroType...)
		return append(dst, '"'), n, nil
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, avroType...)
	dst = append(dst, '"')
	if decimal {
		scale, err := strconv.Atoi(s.Param("scale"))
		if err != nil {
			return dst, nil, fmt.Errorf("decimal schema without a scale: %w", err)
		}
		precision := defaultPrecision
		if p := s.Param("connect.decimal.precision"); p != "" {
			if precision, err = strconv.Atoi(p); err != nil {
				return dst, nil, fmt.Errorf("decimal schema with precision %q", p)
			}
		}
		dst = append(dst, `,"scale":`...)
		dst = strconv.AppendInt(dst, int64(scale), 10)
		dst = append(dst, `,"precision":`...)
		dst = strconv.AppendInt(dst, int64(precision), 10)
	}
	if s.Type == debezium.Array {
		if s.Items == nil {
			return dst, nil, fmt.Errorf("array schema without items")
		}
		dst = append(dst, `,"items":`...)
		var err error
		if dst, n.items, err = c.schema(dst, s.Items, ns); err != nil {
			return dst, nil, err
		}
	}
	dst, err := appendProps(dst, s, connectType)
	if err != nil {
		return dst, nil, err
	}
	if logical := logicalType(s); logical != "" {
		dst = append(dst, `,"logicalType":"`...)
		dst = append(dst, logical...)
		dst = append(dst, '"')
	}
	return append(dst, '}'), n, nil
}

// logicalType is the Avro logical type AvroData gives a named Connect schema: only Kafka
// Connect's own logical types have one; Debezium's semantic types do not.
func logicalType(s *debezium.Schema) string {
	switch {
	case strings.EqualFold(s.Name, debezium.DecimalName):
		return "decimal"
	case strings.EqualFold(s.Name, connectDate):
		return "date"
	case strings.EqualFold(s.Name, connectTime):
		return "time-millis"
	case strings.EqualFold(s.Name, connectTimestamp):
		return "timestamp-millis"
	}
	return ""
}

func hasProps(s *debezium.Schema) bool {
	return s.Name != "" || s.Version != 0 || s.Doc != "" || len(s.Parameters) > 0 || s.Default != nil
}

// appendProps appends the connect.* properties AvroData keeps the Connect schema's metadata in,
// in its order.
func appendProps(dst []byte, s *debezium.Schema, connectType string) ([]byte, error) {
	str := func(k, v string) {
		dst = append(dst, ',')
		dst = encoder.AppendJSONString(dst, k)
		dst = append(dst, ':')
		dst = encoder.AppendJSONString(dst, v)
	}
	if s.Doc != "" {
		str(propConnectDoc, s.Doc)
	}
	if s.Version != 0 {
		dst = append(dst, `,"`+propConnectVersion+`":`...)
		dst = strconv.AppendInt(dst, int64(s.Version), 10)
	}
	if len(s.Parameters) > 0 {
		dst = debezium.AppendParams(append(dst, `,"`+propConnectParams+`":`...), s.Parameters)
	}
	if s.Default != nil {
		dst = append(dst, `,"`+propConnectDefault+`":`...)
		var err error
		if dst, err = appendDefault(dst, s, s.Default); err != nil {
			return dst, err
		}
	}
	if s.Name != "" {
		str(propConnectName, s.Name)
	}
	if connectType != "" {
		str(propConnectType, connectType)
	}
	return dst, nil
}

// appendDefault appends a default value as Avro schema JSON writes it.
func appendDefault(dst []byte, s *debezium.Schema, v *debezium.Value) ([]byte, error) {
	switch {
	case v.Kind == debezium.KindNull:
		return append(dst, "null"...), nil
	case v.Kind == debezium.KindString && s.Type == debezium.String:
		return encoder.AppendJSONString(dst, v.String()), nil
	case v.Kind == debezium.KindInt && s.Type >= debezium.Int8 && s.Type <= debezium.Int64:
		return strconv.AppendInt(dst, v.I, 10), nil
	case v.Kind == debezium.KindFloat && (s.Type == debezium.Float32 || s.Type == debezium.Float64) &&
		!math.IsNaN(v.F) && !math.IsInf(v.F, 0):
		bits := 64
		if s.Type == debezium.Float32 {
			bits = 32
		}
		return strconv.AppendFloat(dst, v.F, 'g', -1, bits), nil
	case v.Kind == debezium.KindBool && s.Type == debezium.Boolean:
		return strconv.AppendBool(dst, v.Bool()), nil
	}
	return dst, fmt.Errorf("default value of a %s schema is not supported", s.Type)
}

// record appends the Avro record of a struct schema, or a reference to it when the document
// already defined it.
func (c *converter) record(dst []byte, s *debezium.Schema, ns string) ([]byte, *node, error) {
	full := s.Name
	if full == "" {
		full = defaultNamespace + "." + defaultName
	}
	if prev := c.named[full]; prev != nil {
		if !sameSchema(prev.schema, s, true) {
			return dst, nil, fmt.Errorf("two different structs are named %s", full)
		}
		if prev.space == ns && prev.space != "" {
			// Within its own namespace a name is referred to alone, as Avro writes it.
			return encoder.AppendJSONString(dst, prev.name), prev.node, nil
		}
		return encoder.AppendJSONString(dst, full), prev.node, nil
	}
	space, name := "", full
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		space, name = full[:i], full[i+1:]
	}
	n := &node{kind: kRecord}
	c.named[full] = &namedType{schema: s, node: n, space: space, name: name}
	dst = append(dst, `{"type":"record","name":`...)
	dst = encoder.AppendJSONString(dst, name)
	if space != ns {
		// Names inherit the enclosing namespace, an empty one included.
		dst = append(dst, `,"namespace":`...)
		dst = encoder.AppendJSONString(dst, space)
	}
	dst = append(dst, `,"fields":[`...)
	n.fields = make([]*node, len(s.Fields))
	n.names = make([]string, len(s.Fields))
	seen := make(map[string]string, len(s.Fields))
	for i, f := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		fname := f.Name
		if c.fieldNames {
			fname = AdjustFieldName(fname)
		}
		if other, dup := seen[fname]; dup {
			return dst, nil, fmt.Errorf("struct %s: fields %q and %q are both named %q in Avro", full, other, f.Name, fname)
		}
		seen[fname] = f.Name
		n.names[i] = fname
		dst = append(dst, `{"name":`...)
		dst = encoder.AppendJSONString(dst, fname)
		dst = append(dst, `,"type":`...)
		var child *node
		var err error
		if dst, child, err = c.schema(dst, f.Schema, space); err != nil {
			return dst, nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		n.fields[i] = child
		if f.Schema.Doc != "" {
			dst = append(dst, `,"doc":`...)
			dst = encoder.AppendJSONString(dst, f.Schema.Doc)
		}
		switch {
		case f.Schema.Default != nil:
			dst = append(dst, `,"default":`...)
			if dst, err = appendDefault(dst, f.Schema, f.Schema.Default); err != nil {
				return dst, nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
		case f.Schema.Optional:
			dst = append(dst, `,"default":null`...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	dst, err := appendProps(dst, s, "")
	if err != nil {
		return dst, nil, err
	}
	return append(dst, '}'), n, nil
}

// sameSchema reports whether two Connect schemas are equal; ignoreOptional leaves the top
// level's optionality out (a record is the same whether a use of it is optional or not).
func sameSchema(a, b *debezium.Schema, ignoreOptional bool) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Type != b.Type || a.Name != b.Name || a.Version != b.Version || a.Doc != b.Doc ||
		!ignoreOptional && a.Optional != b.Optional || len(a.Parameters) != len(b.Parameters) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Parameters {
		if a.Parameters[i] != b.Parameters[i] {
			return false
		}
	}
	if (a.Default == nil) != (b.Default == nil) || a.Default != nil && !sameValue(a.Default, b.Default) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !sameSchema(a.Fields[i].Schema, b.Fields[i].Schema, false) {
			return false
		}
	}
	return sameSchema(a.Items, b.Items, false) && sameSchema(a.Keys, b.Keys, false) && sameSchema(a.Values, b.Values, false)
}

func sameValue(a, b *debezium.Value) bool {
	if a.Kind != b.Kind || a.I != b.I || a.F != b.F || string(a.B) != string(b.B) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if !sameValue(&a.Fields[i], &b.Fields[i]) {
			return false
		}
	}
	return true
}

// AdjustFieldName applies field.name.adjustment.mode=avro: characters Avro does not allow in a
// field name become '_' ('.' included: a field name has no namespace), a character outside the
// BMP two of them, as Debezium does.
func AdjustFieldName(name string) string {
	return strings.ReplaceAll(debezium.AdjustName(name), ".", "_")
}
