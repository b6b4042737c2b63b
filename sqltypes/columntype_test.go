package sqltypes

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/query"
)

func TestColumnTypeAttributes(t *testing.T) {
	for _, tc := range []struct {
		columnType         string
		unsigned, zerofill bool
	}{
		{"int(11)", false, false},
		{"int(10) unsigned", true, false},
		{"int(10) unsigned zerofill", true, true},
		{"bigint unsigned", true, false}, // MySQL 8.0.19 and later print no display width
		{"BIGINT UNSIGNED ZEROFILL", true, true},
		{"decimal(10,2) unsigned", true, false},
		{"double", false, false},
		{"tinyint(1)", false, false},
		{"varchar(255)", false, false},
		{"enum('unsigned','zerofill')", false, false}, // labels are not attributes
		{"set('a) unsigned')", false, false},
		{"", false, false},
	} {
		if got := Unsigned(tc.columnType); got != tc.unsigned {
			t.Errorf("Unsigned(%q) = %v, want %v", tc.columnType, got, tc.unsigned)
		}
		if got := Zerofill(tc.columnType); got != tc.zerofill {
			t.Errorf("Zerofill(%q) = %v, want %v", tc.columnType, got, tc.zerofill)
		}
	}
}

func TestBinaryTypedText(t *testing.T) {
	for _, tc := range []struct {
		typ       query.Type
		collation uint32
		want      bool
	}{
		{query.Type_BINARY, 46, true},    // CHAR ... COLLATE utf8mb4_bin
		{query.Type_VARBINARY, 83, true}, // VARCHAR ... COLLATE utf8mb3_bin
		{query.Type_BLOB, 47, true},      // TEXT ... COLLATE latin1_bin
		{query.Type_BINARY, 63, false},   // BINARY
		{query.Type_VARBINARY, 0, false}, // a collation not known
		{query.Type_VARCHAR, 45, false},  // text by its type
		{query.Type_GEOMETRY, 63, false}, // not a string
		{query.Type_INT32, 63, false},
	} {
		if got := BinaryTypedText(tc.typ, tc.collation); got != tc.want {
			t.Errorf("BinaryTypedText(%v, %d) = %v, want %v", tc.typ, tc.collation, got, tc.want)
		}
	}
}
