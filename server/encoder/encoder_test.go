package encoder

import (
	"math"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/vstream-cdc/vstream/gen/query"
)

func TestAppendJavaFloat(t *testing.T) {
	cases := []struct {
		x    float64
		bits int
		want string
	}{
		{0, 64, "0.0"},
		{math.Copysign(0, -1), 64, "-0.0"},
		{86, 64, "86.0"},
		{10357, 64, "10357.0"},
		{0.001, 64, "0.001"},
		{1234567, 64, "1234567.0"},
		{3.14, 64, "3.14"},
		{12510357, 64, "1.2510357E7"},
		{1e7, 64, "1.0E7"},
		{1e-4, 64, "1.0E-4"},
		{-2.5e-10, 64, "-2.5E-10"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(3.4028235e38)), 32, "3.4028235E38"},
		{1.7976931348623157e308, 64, "1.7976931348623157E308"},
	}
	for _, c := range cases {
		if got := string(AppendJavaFloat(nil, c.x, c.bits)); got != c.want {
			t.Errorf("AppendJavaFloat(%g, %d) = %s, want %s", c.x, c.bits, got, c.want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	cases := map[string]string{
		"plain":        `"plain"`,
		`q"b\`:         `"q\"b\\"`,
		"a\nb\tc\x00":  `"a\nb\tc\u0000"`,
		"<&>='":        `"<&>='"`,
		"汉字😀":          `"汉字😀"`,
		"bad\xffbytes": "\"bad\ufffdbytes\"",
	}
	for in, want := range cases {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSlab(t *testing.T) {
	var s Slab
	a := s.Bytes([]byte("abc"))
	b := s.Bytes([]byte("def"))
	// Appending to one slice must not write into the next.
	a = append(a, 'X')
	if string(a) != "abcX" || string(b) != "def" {
		t.Fatalf("a=%q b=%q", a, b)
	}
	big := make([]byte, slabBlock)
	if c := s.Bytes(big); len(c) != slabBlock || &c[0] == &big[0] {
		t.Fatal("large copy")
	}
	if s.Bytes(nil) != nil {
		t.Fatal("empty copy is not nil")
	}
	m1, m2 := s.Message(), s.Message()
	if m1 == m2 {
		t.Fatal("the same message twice")
	}
}

func TestSlabBuffer(t *testing.T) {
	var s Slab
	a := s.Commit(append(s.Buffer(8), "first"...))
	b := s.Commit(append(s.Buffer(8), "second"...))
	if string(a) != "first" || string(b) != "second" || cap(a) != len(a) {
		t.Fatalf("a=%q b=%q cap(a)=%d", a, b, cap(a))
	}
	// b follows a in the same block.
	if !adjacent(a, b) {
		t.Error("second message is not next to the first in the block")
	}
	// A message bigger than the room left moves out; the block keeps its room.
	big := s.Commit(append(s.Buffer(1), make([]byte, slabBlock)...))
	c := s.Commit(append(s.Buffer(8), "third"...))
	if len(big) != slabBlock || string(c) != "third" || !adjacent(b, c) {
		t.Errorf("after a large message: c=%q", c)
	}
	if string(a)+string(b) != "firstsecond" {
		t.Error("earlier messages changed")
	}
}

func TestSlabRecycle(t *testing.T) {
	var s Slab
	// Fill two blocks and a bit of a third.
	chunk := make([]byte, slabBlock/8)
	var first [][]byte
	for range 17 {
		first = append(first, s.Bytes(chunk))
	}
	m := s.Message()
	s.Recycle()
	// After Recycle the same memory is written again, starting with the current block, and
	// messages are not reused.
	again := s.Bytes([]byte("x"))
	if unsafe.SliceData(again) != unsafe.SliceData(first[16]) {
		t.Error("the current block was not reused from its start")
	}
	// The next two blocks' worth are written over the two filled blocks: no new memory.
	inOld := func(b []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		for _, start := range []int{0, 8, 16} {
			s := uintptr(unsafe.Pointer(unsafe.SliceData(first[start])))
			if p >= s && p < s+slabBlock {
				return true
			}
		}
		return false
	}
	for i := range 16 {
		if b := s.Bytes(chunk); !inOld(b) {
			t.Fatalf("chunk %d after Recycle is in new memory", i)
		}
	}
	if s.Message() == m {
		t.Error("a message struct was reused")
	}
	// Without Recycle nothing is written over.
	var fresh Slab
	a := fresh.Bytes([]byte("keep"))
	for range 40 {
		fresh.Bytes(chunk)
	}
	if string(a) != "keep" {
		t.Errorf("a message was written over: %q", a)
	}
}

// adjacent reports whether b starts right where a ends.
func adjacent(a, b []byte) bool {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(a)), len(a)) == unsafe.Pointer(unsafe.SliceData(b))
}

func TestRenderZone(t *testing.T) {
	moscow := time.FixedZone("+03:00", 3*3600)
	cases := []struct {
		zone *time.Location
		opt  string
		want string
		off  int
	}{
		{nil, "", "UTC", 0},
		{moscow, "", "+03:00", 3 * 3600},
		{moscow, "UTC", "UTC", 0},
		{nil, "-05:30", "-05:30", -(5*3600 + 30*60)},
		{nil, "+00:00", "UTC", 0},
		{nil, "Asia/Shanghai", "Asia/Shanghai", 8 * 3600},
	}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		opts := map[string]string{}
		if c.opt != "" {
			opts["render_zone"] = c.opt
		}
		loc, err := RenderZone(Params{Options: NewOptions(opts), Zone: c.zone})
		if err != nil {
			t.Fatalf("%v %q: %v", c.zone, c.opt, err)
		}
		if _, off := at.In(loc).Zone(); loc.String() != c.want || off != c.off {
			t.Errorf("zone %v, option %q: got %s (offset %d), want %s (%d)", c.zone, c.opt, loc, off, c.want, c.off)
		}
	}
	for _, bad := range []string{"Mars/Base", "+3:00", "+15:00", "03:00"} {
		if _, err := RenderZone(Params{Options: NewOptions(map[string]string{"render_zone": bad})}); err == nil {
			t.Errorf("render_zone=%s accepted", bad)
		}
	}
}

func TestSourceZone(t *testing.T) {
	at := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		offset int
		want   string
		off    int
	}{
		{"UTC", 0, "UTC", 0},
		{"+03:00", 10800, "+03:00", 10800},
		{"Europe/Berlin", 7200, "Europe/Berlin", 7200},
		// An abbreviation is taken at the server's word for its offset.
		{"CEST", 7200, "CEST", 7200},
		{"Nowhere/Land", 3600, "Nowhere/Land", 3600},
		{"", 0, "UTC", 0},
	}
	for _, c := range cases {
		loc := SourceZone(c.name, c.offset)
		if _, off := at.In(loc).Zone(); loc.String() != c.want || off != c.off {
			t.Errorf("SourceZone(%q, %d) = %s (offset %d), want %s (%d)", c.name, c.offset, loc, off, c.want, c.off)
		}
	}
}

func TestCells(t *testing.T) {
	cases := []struct {
		name string
		row  *query.Row
		want []string // "<NULL>" for NULL
	}{
		{"values", &query.Row{Lengths: []int64{1, -1, 2}, Values: []byte("abc")}, []string{"a", "<NULL>", "bc"}},
		{"empty values without value bytes", &query.Row{Lengths: []int64{0, 0, -1}}, []string{"", "", "<NULL>"}},
		{"short row padded with NULL", &query.Row{Lengths: []int64{0}}, []string{"", "<NULL>", "<NULL>"}},
	}
	for _, c := range cases {
		cells, err := Cells(nil, c.row, 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cell := range cells {
			if cell == nil {
				got = append(got, "<NULL>")
			} else {
				got = append(got, string(cell))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if _, err := Cells(nil, &query.Row{Lengths: []int64{5}, Values: []byte("ab")}, 1); err == nil {
		t.Error("a cell past the values was accepted")
	}
}

func TestValueType(t *testing.T) {
	cases := []struct {
		typ        query.Type
		charset    uint32
		columnType string
		want       query.Type
	}{
		{query.Type_BINARY, 63, "binary(4)", query.Type_BINARY},
		{query.Type_VARBINARY, 63, "varbinary(4)", query.Type_VARBINARY},
		{query.Type_BLOB, 63, "blob", query.Type_BLOB},
		{query.Type_BINARY, 46, "char(4)", query.Type_CHAR},
		{query.Type_VARBINARY, 46, "varchar(4)", query.Type_VARCHAR},
		{query.Type_BLOB, 46, "text", query.Type_TEXT},
		{query.Type_BINARY, 46, "enum('a','b')", query.Type_ENUM},
		{query.Type_BINARY, 46, "set('a','b')", query.Type_SET},
		{query.Type_BINARY, 63, "uuid", query.Type_CHAR},
		{query.Type_BINARY, 63, "inet4", query.Type_CHAR},
		{query.Type_BINARY, 63, "inet6", query.Type_CHAR},
		{query.Type_CHAR, 45, "char(4)", query.Type_CHAR},
		{query.Type_INT32, 63, "int(11)", query.Type_INT32},
	}
	for _, c := range cases {
		f := &query.Field{Type: c.typ, Charset: c.charset, ColumnType: c.columnType}
		if got := ValueType(f); got != c.want {
			t.Errorf("%s %d %s: %v, want %v", c.typ, c.charset, c.columnType, got, c.want)
		}
	}
	fields := []*query.Field{{Name: "a", Type: query.Type_INT32}, {Name: "b", Type: query.Type_BINARY, Charset: 46, ColumnType: "char(2)"}}
	out := ValueFields(fields)
	if out[0] != fields[0] || out[1].Type != query.Type_CHAR || fields[1].Type != query.Type_BINARY {
		t.Errorf("ValueFields must clone only the fields it changes: %v", out)
	}
}
