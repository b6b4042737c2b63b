package sqltypes

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/query"
)

// TestKindOf checks that every column type has a kind and back, and that the types of
// values that are not columns have none.
func TestKindOf(t *testing.T) {
	seen := map[Kind]bool{}
	for k := KindInt8; k <= KindVector; k++ {
		got, err := KindOf(k.Type())
		if err != nil || got != k {
			t.Errorf("%v: KindOf(%v) = %v, %v", uint8(k), k.Type(), got, err)
		}
		if seen[k] {
			t.Errorf("%v twice", k)
		}
		seen[k] = true
	}
	n := 0
	for typ := range query.Type_name {
		if _, err := KindOf(query.Type(typ)); err == nil {
			n++
		}
	}
	if n != int(KindVector) {
		t.Errorf("%d types for %d kinds", n, KindVector)
	}
	for _, typ := range []query.Type{query.Type_NULL_TYPE, query.Type_EXPRESSION, query.Type_HEXNUM, query.Type_TUPLE, query.Type_ROW_TUPLE, query.Type(12345)} {
		if k, err := KindOf(typ); err == nil {
			t.Errorf("KindOf(%v) = %v, want an error", typ, k)
		}
	}
	if KindVector.String() != "VECTOR" || KindVarChar.String() != "VARCHAR" || Kind(0).String() != "Kind(0)" {
		t.Errorf("names: %v %v %v", KindVector, KindVarChar, Kind(0))
	}
}
