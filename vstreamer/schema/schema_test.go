package schema

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

func cols(names ...string) []rowcodec.Column {
	out := make([]rowcodec.Column, len(names))
	for i, n := range names {
		out[i] = rowcodec.Column{Name: n, Type: mysql.MYSQL_TYPE_LONG}
	}
	return out
}

func TestReconcile(t *testing.T) {
	info := []ColumnInfo{
		{Name: "id", DataType: "int", ColumnType: "int(10) unsigned", Key: "PRI", Extra: "auto_increment"},
		{Name: "qty", DataType: "int", ColumnType: "int(11)", Nullable: true},
	}
	t.Run("binlog names and same schema: enriched", func(t *testing.T) {
		c := cols("id", "qty")
		if err := Reconcile(c, true, info); err != nil {
			t.Fatal(err)
		}
		if c[0].ColumnType != "int(10) unsigned" || !c[0].PrimaryKey || !c[1].Nullable {
			t.Errorf("not enriched: %+v", c)
		}
	})
	t.Run("binlog names and a schema changed since: binlog columns, described by name", func(t *testing.T) {
		c := cols("qty", "id", "gone", "retyped")
		c[3].Type = mysql.MYSQL_TYPE_VARCHAR
		changed := append(slices.Clone(info), ColumnInfo{Name: "retyped", DataType: "int", ColumnType: "int(11)"})
		if err := Reconcile(c, true, changed); err != nil {
			t.Fatal(err)
		}
		if c[0].Name != "qty" || c[0].ColumnType != "int(11)" || c[1].ColumnType != "int(10) unsigned" || !c[1].PrimaryKey {
			t.Errorf("columns the schema still has were not described by it: %+v", c)
		}
		if c[2].ColumnType != "" || c[3].ColumnType != "" {
			t.Errorf("a column dropped or retyped since took the schema's description: %+v", c[2:])
		}
	})
	t.Run("no binlog names: names from a fitting schema", func(t *testing.T) {
		c := cols("", "")
		if err := Reconcile(c, false, info); err != nil {
			t.Fatal(err)
		}
		if c[0].Name != "id" || c[1].Name != "qty" || !c[0].Unsigned {
			t.Errorf("names or signedness not taken from schema: %+v", c)
		}
	})
	t.Run("no binlog names: schema with fewer columns", func(t *testing.T) {
		c := cols("", "", "")
		if err := Reconcile(c, false, info); !errors.Is(err, ErrMismatch) {
			t.Fatalf("err = %v, want ErrMismatch", err)
		}
	})
	t.Run("no binlog names: incompatible types", func(t *testing.T) {
		c := cols("", "")
		c[1].Type = mysql.MYSQL_TYPE_VARCHAR
		if err := Reconcile(c, false, info); !errors.Is(err, ErrMismatch) {
			t.Fatalf("err = %v, want ErrMismatch", err)
		}
		NameByPosition(c)
		if c[0].Name != "@1" || c[1].Name != "@2" {
			t.Errorf("NameByPosition = %q %q", c[0].Name, c[1].Name)
		}
	})
}

func TestCompatible(t *testing.T) {
	cases := []struct {
		t        byte
		dataType string
		want     bool
	}{
		{mysql.MYSQL_TYPE_LONG, "int", true},
		{mysql.MYSQL_TYPE_LONG, "bigint", false},
		{mysql.MYSQL_TYPE_DATETIME2, "datetime", true},
		{mysql.MYSQL_TYPE_DATETIME, "datetime", true},
		{mysql.MYSQL_TYPE_TIMESTAMP2, "datetime", false},
		{mysql.MYSQL_TYPE_VARCHAR, "varbinary", true},
		{mysql.MYSQL_TYPE_STRING, "binary", true},
		{mysql.MYSQL_TYPE_BLOB, "mediumtext", true},
		{mysql.MYSQL_TYPE_BLOB, "json", true},
		{mysql.MYSQL_TYPE_BLOB, "varchar", false},
		{mysql.MYSQL_TYPE_GEOMETRY, "point", true},
		{mysql.MYSQL_TYPE_NEWDECIMAL, "decimal", true},
	}
	for _, c := range cases {
		if got := compatible(c.t, c.dataType); got != c.want {
			t.Errorf("compatible(%d, %s) = %v, want %v", c.t, c.dataType, got, c.want)
		}
	}
}

func TestFits(t *testing.T) {
	info := []ColumnInfo{{Name: "id", DataType: "int"}, {Name: "j", DataType: "json"}, {Name: "s", DataType: "varchar"}}
	row := func(names ...string) []rowcodec.Column {
		c := cols(names...)
		c[1].Type = mysql.MYSQL_TYPE_BLOB // MariaDB's JSON travels as LONGTEXT
		c[2].Type = mysql.MYSQL_TYPE_VARCHAR
		return c
	}
	retyped := row("id", "j", "s")
	retyped[0].Type = mysql.MYSQL_TYPE_LONGLONG
	for _, c := range []struct {
		name     string
		cols     []rowcodec.Column
		hasNames bool
		want     bool
	}{
		{"same columns", row("id", "j", "s"), true, true},
		{"names differing only in case", row("ID", "J", "S"), true, true},
		{"no names in the binlog, same types", row("", "", ""), false, true},
		{"a column renamed", row("id", "j", "t"), true, false},
		{"a column retyped", retyped, true, false},
		{"a column more in the row", append(row("id", "j", "s"), cols("x")...), true, false},
		{"a column less in the row", row("id", "j", "s")[:2], false, false},
	} {
		if got := Fits(c.cols, c.hasNames, info); got != c.want {
			t.Errorf("%s: Fits = %v, want %v", c.name, got, c.want)
		}
	}
}
