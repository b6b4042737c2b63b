package debezium

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// Layout is the generation of Debezium's envelope and source block.
type Layout int

const (
	// LayoutV26 is Debezium 2.6 and later: ts_us and ts_ns next to ts_ms in the envelope and
	// the source block, envelope schema version 2.
	LayoutV26 Layout = iota
	// LayoutV20 is Debezium 2.0 to 2.5: ts_ms only, envelope schema version 1.
	LayoutV20
)

// Config is how changes become Connect records: the connector options that shape schemas and
// values, shared by every converter (JSON, Avro).
type Config struct {
	// Prefix is topic.prefix, the logical server name: topics and schema names start with it.
	Prefix string
	Layout Layout
	// DecimalMode is decimal.handling.mode: precise, double or string.
	DecimalMode string
	// BigintUnsignedMode is bigint.unsigned.handling.mode: long or precise.
	BigintUnsignedMode string
	// BinaryMode is binary.handling.mode: bytes, base64, base64-url-safe or hex.
	BinaryMode string
	// TinyintType is the schema type of signed TINYINT columns: Int16 (Debezium up to 3.6)
	// or Int8 (3.7 on).
	TinyintType Type
	// AvroNames is schema.name.adjustment.mode=avro.
	AvroNames bool
	// Tombstones is tombstones.on.delete.
	Tombstones bool
	// TransactionMetadata is provide.transaction.metadata.
	TransactionMetadata bool
	// IncludeQuery is include.query: source.query carries the statement of the rows.
	IncludeQuery bool
	// SchemaChanges is include.schema.changes.
	SchemaChanges bool
	// Skipped holds the operations of skipped.operations ('c', 'u', 'd', 't').
	Skipped string
	// Connector is source.connector: "mysql" or "mariadb".
	Connector string
	// Version is source.version.
	Version string
	// Collations give the character sets text columns are converted from.
	Collations *sqltypes.Charsets
}

// Skips reports whether records of operation op ('c', 'u', 'd', 't') are left out.
func (c *Config) Skips(op byte) bool { return strings.IndexByte(c.Skipped, op) >= 0 }

// ReadConfig reads the connector options of a stream. The option names are Debezium's.
//
//	topic.prefix                   logical server name (default: the server's keyspace)
//	debezium.layout                v2.6 (default) or v2.0
//	decimal.handling.mode          precise (default), double or string
//	bigint.unsigned.handling.mode  long (default) or precise
//	binary.handling.mode           bytes (default), base64, base64-url-safe or hex
//	time.precision.mode            adaptive_time_microseconds (the only mode)
//	tinyint.schema                 int16 (default) or int8
//	schema.name.adjustment.mode    none (default) or avro
//	tombstones.on.delete           true (default)
//	provide.transaction.metadata   false (default)
//	include.query                  false (default)
//	include.schema.changes         true (default)
//	skipped.operations             t (default): comma-separated c, u, d, t, or none
//	source.version                 source.version (default: this build's module version)
func ReadConfig(p encoder.Params) (Config, error) {
	o := p.Options
	if o == nil {
		o = encoder.NewOptions(nil)
	}
	c := Config{Collations: p.Collations}
	var err error
	str := func(dst *string, name, def string, allowed ...string) {
		if err == nil {
			*dst, err = o.String(name, def, allowed...)
		}
	}
	boolean := func(dst *bool, name string, def bool) {
		if err == nil {
			*dst, err = o.Bool(name, def)
		}
	}
	var layout, timeMode, tinyint, adjust, skipped string
	str(&c.Prefix, "topic.prefix", p.Keyspace)
	str(&layout, "debezium.layout", "v2.6", "v2.6", "v2.0")
	str(&c.DecimalMode, "decimal.handling.mode", "precise", "precise", "double", "string")
	str(&c.BigintUnsignedMode, "bigint.unsigned.handling.mode", "long", "long", "precise")
	str(&c.BinaryMode, "binary.handling.mode", "bytes", "bytes", "base64", "base64-url-safe", "hex")
	str(&timeMode, "time.precision.mode", "adaptive_time_microseconds", "adaptive_time_microseconds")
	str(&tinyint, "tinyint.schema", "int16", "int16", "int8")
	str(&adjust, "schema.name.adjustment.mode", "none", "none", "avro")
	boolean(&c.Tombstones, "tombstones.on.delete", true)
	boolean(&c.TransactionMetadata, "provide.transaction.metadata", false)
	boolean(&c.IncludeQuery, "include.query", false)
	boolean(&c.SchemaChanges, "include.schema.changes", true)
	str(&skipped, "skipped.operations", "t")
	str(&c.Version, "source.version", moduleVersion())
	if err != nil {
		return Config{}, err
	}
	if c.Prefix == "" {
		return Config{}, fmt.Errorf("format option topic.prefix is required (the server has no keyspace to default to)")
	}
	for _, r := range c.Prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return Config{}, fmt.Errorf("format option topic.prefix=%q: only letters, digits, '.', '_' and '-' are allowed in topic names", c.Prefix)
		}
	}
	if layout == "v2.0" {
		c.Layout = LayoutV20
	}
	c.TinyintType = Int16
	if tinyint == "int8" {
		c.TinyintType = Int8
	}
	c.AvroNames = adjust == "avro"
	if skipped != "none" {
		for op := range strings.SplitSeq(skipped, ",") {
			op = strings.TrimSpace(op)
			if op != "c" && op != "u" && op != "d" && op != "t" {
				return Config{}, fmt.Errorf("format option skipped.operations=%q: want a comma-separated list of c, u, d, t, or none", skipped)
			}
			c.Skipped += op
		}
	}
	c.Connector = "mysql"
	if p.Flavor == "mariadb" {
		c.Connector = "mariadb"
	}
	return c, nil
}

// moduleVersion is this build's module version, what source.version says by default.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// name adjusts a schema name for the configured mode.
func (c *Config) name(n string) string {
	if c.AvroNames {
		return AdjustName(n)
	}
	return n
}
