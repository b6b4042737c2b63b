package sqltypes

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/query"
)

func TestCharsetAppend(t *testing.T) {
	cases := []struct {
		charset string
		in      string
		want    string
	}{
		{"latin1", "caf\xe9 \x80 \x81", "café € \ufffd"},
		{"latin2", "\xb1", "ą"},
		{"cp1251", "\xcf\xf0\xe8\xe2\xe5\xf2", "Привет"},
		{"koi8r", "\xf0\xd2\xc9\xd7\xc5\xd4", "Привет"},
		{"greek", "\xe1", "α"},
		{"gbk", "a\xd6\xd0\xce\xc4b", "a中文b"},
		{"gbk", "\x81", "\ufffd"},
		{"gb2312", "\xd6\xd0", "中"},
		{"gb18030", "\x81\x30\x81\x30", "\u0080"},
		{"big5", "\xa4\xa4\xa4\xe5", "中文"},
		{"sjis", "\x93\xfa\x96\x7b", "日本"},
		{"ujis", "\xc6\xfc\xcb\xdc", "日本"},
		{"euckr", "\xc7\xd1\xb1\xb9", "한국"},
		{"ucs2", "\x00\xe9\x00a", "éa"},
		{"utf16", "\x00\xe9\xd8\x3d\xde\x00", "é😀"},
		{"utf16le", "\xe9\x00", "é"},
		{"utf32", "\x00\x01\xf6\x00\x00\x00\x00a", "😀a"},
		{"gbk", "plain ascii", "plain ascii"},
	}
	for _, c := range cases {
		cs := charsets[c.charset]
		if cs == nil || cs.Name() != c.charset {
			t.Fatalf("no charset %s", c.charset)
		}
		if got := string(cs.Append([]byte("<"), []byte(c.in))); got != "<"+c.want {
			t.Errorf("%s %q: got %q, want %q", c.charset, c.in, got, "<"+c.want)
		}
	}
	// Long text grows the destination as often as it needs.
	long := make([]byte, 0, 3000)
	for range 1000 {
		long = append(long, 0xd6, 0xd0, 'x')
	}
	if got := charsets["gbk"].Append(nil, long); len(got) != 4000 {
		t.Errorf("1000 of 中x gave %d bytes", len(got))
	}
	var none *Charset
	if got := string(none.Append(nil, []byte("\xff"))); got != "\xff" || none.Name() != "utf8mb4" {
		t.Errorf("nil charset changed its bytes: %q", got)
	}
}

func TestCharsets(t *testing.T) {
	cases := []struct {
		c    *Charsets
		id   uint32
		want string // "" for no conversion
	}{
		{nil, 8, "latin1"},
		{nil, 28, "gbk"},
		{nil, 1052, "gbk"},
		{nil, 45, ""},
		{nil, 255, ""},
		{nil, 2304, ""},
		{nil, 2560, "ucs2"},
		{nil, 248, "gb18030"},
		{NewCharsets(map[uint32]string{28: "utf8mb4", 4000: "big5", 7: "dec8"}), 28, ""},
		{NewCharsets(map[uint32]string{4000: "big5"}), 4000, "big5"},
		{NewCharsets(map[uint32]string{4000: "big5"}), 8, "latin1"},
		{NewCharsets(map[uint32]string{7: "dec8"}), 7, ""},
		{NewCharsets(map[uint32]string{9000: "big5"}), 9000, ""},
	}
	for _, c := range cases {
		got := ""
		if cs := c.c.Of(c.id); cs != nil {
			got = cs.Name()
		}
		if got != c.want {
			t.Errorf("collation %d: %q, want %q", c.id, got, c.want)
		}
	}
	for id, want := range map[uint32]string{45: "utf8mb4", 33: "utf8mb3", 63: "binary", 28: "gbk", 300: "utf8mb4", 9999: "", 1000: ""} {
		if got := (*Charsets)(nil).Name(id); got != want {
			t.Errorf("name of collation %d: %q, want %q", id, got, want)
		}
	}
	if got := NewCharsets(map[uint32]string{1000: "utf8mb4"}).Name(1000); got != "utf8mb4" {
		t.Errorf("the server's name of collation 1000 is lost: %q", got)
	}
	if (*Charsets)(nil).Text(&query.Field{Type: query.Type_VARBINARY, Charset: 8}) != nil ||
		(*Charsets)(nil).Text(&query.Field{Type: query.Type_VARCHAR, Charset: 8}).Name() != "latin1" {
		t.Error("Text converts binary columns or not text columns")
	}
}
