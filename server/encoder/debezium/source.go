package debezium

// Snapshot markers of source.snapshot.
const (
	SnapshotFalse = "false"
	SnapshotTrue  = "true"
	SnapshotLast  = "last"
)

// SourceSchema is the source block's schema, io.debezium.connector.<connector>.Source.
func SourceSchema(c *Config) *Schema {
	str, optStr := primitive(String, false), primitive(String, true)
	i64, optI64 := primitive(Int64, false), primitive(Int64, true)
	snapshot := named(String, EnumName, true, Param{"allowed", "true,last,false,incremental"})
	def := Str(SnapshotFalse)
	snapshot.Default = &def
	fields := []Field{{"version", str}, {"connector", str}, {"name", str}, {"ts_ms", i64},
		{"snapshot", snapshot}, {"db", str}, {"sequence", optStr}}
	if c.Layout == LayoutV26 {
		fields = append(fields, Field{"ts_us", optI64}, Field{"ts_ns", optI64})
	}
	fields = append(fields, Field{"table", optStr}, Field{"server_id", i64}, Field{"gtid", optStr},
		Field{"file", str}, Field{"pos", i64}, Field{"row", primitive(Int32, false)}, Field{"thread", optI64},
		Field{"query", optStr})
	return structOf(c.name("io.debezium.connector."+c.Connector+".Source"), 0, false, fields...)
}

// SourceInfo is the content of one source block.
type SourceInfo struct {
	// Micros is the change's time in the database, in microseconds since the epoch.
	Micros int64
	// Snapshot is "false", "true" or "last".
	Snapshot string
	DB       string
	// Table is empty when the record is not about one table.
	Table    string
	ServerID int64
	// GTID is the transaction's GTID; empty when unknown.
	GTID string
	File string
	Pos  int64
	Row  int32
	// Thread is the session id; 0 when unknown.
	Thread int64
	// Query is the statement of the change; empty when not included.
	Query string
}

// AppendValues appends the source struct's field values, in SourceSchema's order, to dst.
func (s *SourceInfo) AppendValues(dst []Value, c *Config) []Value {
	opt := func(v string) Value {
		if v == "" {
			return Null
		}
		return Str(v)
	}
	dst = append(dst, Str(c.Version), Str(c.Connector), Str(c.Prefix), Int(floorDiv(s.Micros, 1000)),
		Str(s.Snapshot), Str(s.DB), Null)
	if c.Layout == LayoutV26 {
		dst = append(dst, Int(s.Micros), Int(s.Micros*1000))
	}
	thread := Null
	if s.Thread != 0 {
		thread = Int(s.Thread)
	}
	return append(dst, opt(s.Table), Int(s.ServerID), opt(s.GTID), Str(s.File), Int(s.Pos), Int(int64(s.Row)),
		thread, opt(s.Query))
}

// SchemaChangeKeySchema is the key schema of schema-change records.
func SchemaChangeKeySchema(c *Config) *Schema {
	return structOf(c.name("io.debezium.connector."+c.Connector+".SchemaChangeKey"), 1, false,
		Field{"databaseName", primitive(String, false)})
}

// SchemaChangeValueSchema is the value schema of schema-change records.
func SchemaChangeValueSchema(c *Config) *Schema {
	optStr := primitive(String, true)
	optI32, optBool := primitive(Int32, true), primitive(Boolean, true)
	strArray := &Schema{Type: Array, Optional: true, Items: primitive(String, false)}
	column := structOf(c.name("io.debezium.connector.schema.Column"), 1, false,
		Field{"name", primitive(String, false)}, Field{"jdbcType", primitive(Int32, false)}, Field{"nativeType", optI32},
		Field{"typeName", primitive(String, false)}, Field{"typeExpression", optStr}, Field{"charsetName", optStr},
		Field{"length", optI32}, Field{"scale", optI32}, Field{"position", primitive(Int32, false)},
		Field{"optional", optBool}, Field{"autoIncremented", optBool}, Field{"generated", optBool},
		Field{"comment", optStr}, Field{"defaultValueExpression", optStr}, Field{"enumValues", strArray})
	table := structOf(c.name("io.debezium.connector.schema.Table"), 1, true,
		Field{"defaultCharsetName", optStr}, Field{"primaryKeyColumnNames", strArray},
		Field{"columns", &Schema{Type: Array, Items: column}}, Field{"comment", optStr})
	change := structOf(c.name("io.debezium.connector.schema.Change"), 1, false,
		Field{"type", primitive(String, false)}, Field{"id", primitive(String, false)}, Field{"table", table})
	return structOf(c.name("io.debezium.connector."+c.Connector+".SchemaChangeValue"), 1, false,
		Field{"source", SourceSchema(c)}, Field{"ts_ms", primitive(Int64, false)}, Field{"databaseName", optStr},
		Field{"schemaName", optStr}, Field{"ddl", optStr}, Field{"tableChanges", &Schema{Type: Array, Items: change}})
}

// TransactionKeySchema is the key schema of transaction boundary records.
func TransactionKeySchema(c *Config) *Schema {
	return structOf(c.name("io.debezium.connector.common.TransactionMetadataKey"), 1, false,
		Field{"id", primitive(String, false)})
}

// TransactionValueSchema is the value schema of transaction boundary records.
func TransactionValueSchema(c *Config) *Schema {
	collection := structOf("event.collection", 1, true,
		Field{"data_collection", primitive(String, false)}, Field{"event_count", primitive(Int64, false)})
	return structOf(c.name("io.debezium.connector.common.TransactionMetadataValue"), 1, false,
		Field{"status", primitive(String, false)}, Field{"id", primitive(String, false)},
		Field{"event_count", primitive(Int64, true)},
		Field{"data_collections", &Schema{Type: Array, Optional: true, Items: collection}},
		Field{"ts_ms", primitive(Int64, false)})
}
