package debezium

import (
	"unsafe"
)

// Kind is the representation a Value holds.
type Kind uint8

// Value kinds. Which Connect type a value has is its schema's business: an Int is an int8,
// int16, int32 or int64 as the schema says, a Float a float or double.
const (
	KindNull Kind = iota
	KindInt
	KindFloat
	KindBool
	KindString
	KindBytes
	KindStruct
	KindArray
	// KindRow is the row struct of one of the record's row images (Record.Rows), and KindKey
	// its key struct; I says which image, 0 before or 1 after. Their field values are not
	// made: a serializer converts the image's cells as it writes them (RowImages).
	KindRow
	KindKey
)

// Value is one typed Connect value. Values are read-only: B and Fields may alias buffers of
// the row or of the converter that made them, valid until those are reused.
type Value struct {
	Kind Kind
	// I holds an Int, and a Bool as 0 or 1.
	I int64
	// F holds a Float; a float (32-bit) schema's value is exactly a float32.
	F float64
	// B holds a String's UTF-8 bytes or Bytes.
	B []byte
	// Fields holds a Struct's field values, in schema order, or an Array's elements.
	Fields []Value
}

// Null is the null value.
var Null = Value{}

// Int is an integer value.
func Int(i int64) Value { return Value{Kind: KindInt, I: i} }

// Float is a floating-point value.
func Float(f float64) Value { return Value{Kind: KindFloat, F: f} }

// Bool is a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// Str is a string value. It shares s's bytes rather than copying them, hence values are
// read-only.
func Str(s string) Value {
	return Value{Kind: KindString, B: unsafe.Slice(unsafe.StringData(s), len(s))}
}

// Text is a string value from UTF-8 bytes.
func Text(b []byte) Value { return Value{Kind: KindString, B: b} }

// Blob is a bytes value.
func Blob(b []byte) Value { return Value{Kind: KindBytes, B: b} }

// StructOf is a struct value with its field values in schema order.
func StructOf(fields ...Value) Value { return Value{Kind: KindStruct, Fields: fields} }

// RowOf is the row struct of image i (0 before, 1 after) of the record's row images.
func RowOf(i int) Value { return Value{Kind: KindRow, I: int64(i)} }

// KeyOf is the key struct of image i (0 before, 1 after) of the record's row images.
func KeyOf(i int) Value { return Value{Kind: KindKey, I: int64(i)} }

// ArrayOf is an array value.
func ArrayOf(elems ...Value) Value { return Value{Kind: KindArray, Fields: elems} }

// Setters for conversions that write a value in place: only the fields of the kind are set.
func (v *Value) setInt(i int64)     { v.Kind, v.I = KindInt, i }
func (v *Value) setFloat(f float64) { v.Kind, v.F = KindFloat, f }
func (v *Value) setText(b []byte)   { v.Kind, v.B = KindString, b }
func (v *Value) setBlob(b []byte)   { v.Kind, v.B = KindBytes, b }
func (v *Value) setStr(s string)    { v.setText(unsafe.Slice(unsafe.StringData(s), len(s))) }

func (v *Value) setBool(b bool) {
	v.Kind, v.I = KindBool, 0
	if b {
		v.I = 1
	}
}

// IsNull reports the null value.
func (v Value) IsNull() bool { return v.Kind == KindNull }

// Bool reports a Bool value's truth.
func (v Value) Bool() bool { return v.I != 0 }

// String returns a String value's text (a copy).
func (v Value) String() string { return string(v.B) }
