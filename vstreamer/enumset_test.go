package vstreamer

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/query"
)

// TestHasEnumOrSet: a replicated FIELD says its ROWs hold ENUM/SET labels only when it has
// such a column, as Vitess's does; an ENUM of a binary collation is typed BINARY and known
// by its column type.
func TestHasEnumOrSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []*query.Field
		want   bool
	}{
		{"no enum or set", []*query.Field{{Type: query.Type_INT32, ColumnType: "int(11)"}, {Type: query.Type_VARBINARY, ColumnType: "varbinary(128)"}}, false},
		{"enum", []*query.Field{{Type: query.Type_INT32}, {Type: query.Type_ENUM, ColumnType: "enum('a','b')"}}, true},
		{"set", []*query.Field{{Type: query.Type_SET, ColumnType: "set('a','b')"}}, true},
		{"enum of a binary collation", []*query.Field{{Type: query.Type_BINARY, ColumnType: "ENUM('a','b')"}}, true},
		{"no fields", nil, false},
	} {
		if got := hasEnumOrSet(tc.fields); got != tc.want {
			t.Errorf("%s: hasEnumOrSet = %v, want %v", tc.name, got, tc.want)
		}
	}
}
