package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// enumKeyMembers are listed out of alphabetical order, so that the server's order of an ENUM
// (member number) or SET (bitmask) key differs from the order of its labels as strings.
var enumKeyMembers = []string{"zebra", "apple", "mango", "kiwi", "banana", "yak", "cherry", "lime"}

// TestCopyEnumSetKey copies tables keyed by an ENUM or a SET column (alone or with an INT),
// one row a chunk, while each chunk's catch-up inserts, updates, moves and deletes rows on
// both sides of the last key copied. The server orders these keys by member number and
// bitmask, not by their labels: the client must end with exactly the table's rows, each row
// copied once and each change applied once.
func TestCopyEnumSetKey(t *testing.T) {
	members := "'" + strings.Join(enumKeyMembers, "','") + "'"
	for _, tc := range []struct {
		name, def string
		key       []string
		// value is the key column's value for a number from the pool.
		value func(n int) string
	}{
		{"enum_int", "e ENUM(" + members + ") NOT NULL, id INT NOT NULL, v INT NOT NULL, PRIMARY KEY (e, id)", []string{"e", "id"},
			func(n int) string { return enumKeyMembers[n%len(enumKeyMembers)] }},
		{"enum", "e ENUM(" + members + ") NOT NULL PRIMARY KEY, id INT NOT NULL, v INT NOT NULL", []string{"e"},
			func(n int) string { return enumKeyMembers[n%len(enumKeyMembers)] }},
		{"set_int", "e SET(" + members + ") NOT NULL, id INT NOT NULL, v INT NOT NULL, PRIMARY KEY (e, id)", []string{"e", "id"},
			setValue},
		{"set", "e SET(" + members + ") NOT NULL PRIMARY KEY, id INT NOT NULL, v INT NOT NULL", []string{"e"},
			setValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := "ek_" + tc.name
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, fmt.Sprintf("CREATE TABLE %s (%s)", table, tc.def))
			// Rows are (value, id); with a one-column key, ids only make a value's row differ.
			row := func(n int) string { return fmt.Sprintf("('%s', %d, 0)", tc.value(n), n/len(enumKeyMembers)) }
			var ins []string
			for n := 0; n < 40; n += 2 {
				ins = append(ins, row(n))
			}
			testkit.MustExec(t, db, "INSERT IGNORE INTO "+table+" VALUES "+strings.Join(ins, ", "))
			checkLabelOrderDiffers(t, table)

			rng := rand.New(rand.NewPCG(11, uint64(len(tc.name))))
			where := func(n int) string {
				if len(tc.key) == 1 {
					return fmt.Sprintf("e = '%s'", tc.value(n))
				}
				return fmt.Sprintf("e = '%s' AND id = %d", tc.value(n), n/len(enumKeyMembers))
			}
			write := func() error {
				var q []string
				for range 4 {
					a, b := rng.IntN(80), rng.IntN(80)
					switch rng.IntN(4) {
					case 0:
						q = append(q, "INSERT IGNORE INTO "+table+" VALUES "+row(a))
					case 1:
						q = append(q, fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE %s", table, where(a)))
					case 2:
						q = append(q, fmt.Sprintf("UPDATE IGNORE %s SET e = '%s', id = %d WHERE %s", table, tc.value(b), b/len(enumKeyMembers), where(a)))
					default:
						q = append(q, fmt.Sprintf("DELETE FROM %s WHERE %s", table, where(a)))
					}
				}
				return db.Exec(q...)
			}
			e := newEngine(t)
			ts := streamWritingBetweenChunks(t, e, Request{Filter: rules(&binlogdata.Rule{Match: table}), CopyChunkRows: 1}, write)
			im := newImage(map[string][]string{table: tc.key})
			for !im.Copied {
				im.Add(ts.next(false))
			}
			waitCaughtUp(t, ts, im)
			im.Check(t, db, "test")
		})
	}
}

// setValue is a SET value of one to three members for a number of the pool, its members in
// definition order as the server prints them.
func setValue(n int) string {
	m := len(enumKeyMembers)
	picked := map[int]bool{n % m: true, (n * 3 / m) % m: true}
	if n%3 == 0 {
		picked[(n+5)%m] = true
	}
	var out []string
	for i, l := range enumKeyMembers {
		if picked[i] {
			out = append(out, l)
		}
	}
	return strings.Join(out, ",")
}

// checkLabelOrderDiffers makes sure the server's order of the table's key column e is not the
// order of its labels as strings: otherwise the test could not tell the two apart.
func checkLabelOrderDiffers(t *testing.T, table string) {
	t.Helper()
	byKey := queryColumn(t, "SELECT e FROM "+table+" ORDER BY e, id")
	byLabel := queryColumn(t, "SELECT e FROM "+table+" ORDER BY CAST(e AS CHAR), id")
	if slices.Equal(byKey, byLabel) {
		t.Fatalf("%s: the server orders the key as its labels: %q", table, byKey)
	}
}

func queryColumn(t *testing.T, q string) []string {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Execute(q)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		out = append(out, s)
	}
	return out
}

// TestEnumSetKeyServerWhere pins the server behaviour the chunk SELECT relies on: an ENUM or
// SET column compared with a string is compared as a string, with a number by its member
// number or bitmask, which is the order ORDER BY gives.
func TestEnumSetKeyServerWhere(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ek_where",
		"CREATE TABLE ek_where (e ENUM('zebra','apple','mango') NOT NULL PRIMARY KEY, s SET('zebra','apple','mango') NOT NULL)",
		"INSERT INTO ek_where VALUES ('zebra', 'zebra'), ('apple', 'apple'), ('mango', 'zebra,apple')")
	for q, want := range map[string][]string{
		"SELECT e FROM ek_where ORDER BY e":                                   {"zebra", "apple", "mango"},
		"SELECT e FROM ek_where WHERE e > 'apple' ORDER BY e":                 {"zebra", "mango"},
		"SELECT e FROM ek_where WHERE e > 2 ORDER BY e":                       {"mango"},
		"SELECT e FROM ek_where FORCE INDEX (PRIMARY) WHERE e > 1 ORDER BY e": {"apple", "mango"},
		"SELECT s FROM ek_where ORDER BY s":                                   {"zebra", "apple", "zebra,apple"},
		"SELECT s FROM ek_where WHERE s > 'apple' ORDER BY s":                 {"zebra", "zebra,apple"},
		"SELECT s FROM ek_where WHERE s > 2 ORDER BY s":                       {"zebra,apple"},
	} {
		if got := queryColumn(t, q); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
}

// TestStreamRowsEnumSetKey: VStreamRows reads after a client's last key by the same WHERE
// as the copy, so an ENUM or SET key resumes at the member number or bitmask after it, and a
// last key that is not a value of the column is the client's to fix.
func TestStreamRowsEnumSetKey(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ek_rows_enum, ek_rows_set",
		"CREATE TABLE ek_rows_enum (e ENUM('zebra','apple','mango') NOT NULL PRIMARY KEY)",
		"INSERT INTO ek_rows_enum VALUES ('mango'), ('apple'), ('zebra')",
		"CREATE TABLE ek_rows_set (s SET('zebra','apple','mango') NOT NULL PRIMARY KEY)",
		"INSERT INTO ek_rows_set VALUES ('mango'), ('apple'), ('zebra'), ('zebra,apple'), ('')")
	e := newEngine(t)
	for _, c := range []struct {
		query, last string
		want        string
	}{
		{"select e from ek_rows_enum", "", "rows:[zebra][apple][mango] lastpk:[mango]"},
		{"select e from ek_rows_enum", "zebra", "rows:[apple][mango] lastpk:[mango]"},
		{"select e from ek_rows_enum", "apple", "rows:[mango] lastpk:[mango]"},
		{"select s from ek_rows_set", "", "rows:[][zebra][apple][zebra,apple][mango] lastpk:[mango]"},
		{"select s from ek_rows_set", "apple", "rows:[zebra,apple][mango] lastpk:[mango]"},
		{"select s from ek_rows_set", "zebra,apple", "rows:[mango] lastpk:[mango]"},
	} {
		t.Run(c.query+" after "+c.last, func(t *testing.T) {
			req := RowsRequest{Query: c.query}
			if c.last != "" {
				req.LastPK = lastPK(nil, c.last)
			}
			got, _, err := collectRows(t, e, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < 2 || got[len(got)-1] != c.want {
				t.Errorf("got\n  %s\nwant last\n  %s", strings.Join(got, "\n  "), c.want)
			}
		})
	}
	for _, c := range []struct{ query, last string }{
		{"select e from ek_rows_enum", "pear"},
		{"select e from ek_rows_enum", "Apple"},
		{"select s from ek_rows_set", "apple,pear"},
	} {
		_, _, err := collectRows(t, e, RowsRequest{Query: c.query, LastPK: lastPK(nil, c.last)})
		if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), "is not a value of key column") {
			t.Errorf("%s after %q: got %v, want an invalid-argument error", c.query, c.last, err)
		}
	}
}

// TestCopyEnumSetKeyOrder places every key of a table against every other as the last key
// copied, and checks the copy's catch-up holds exactly those the server's ORDER BY puts
// at or before it.
func TestCopyEnumSetKeyOrder(t *testing.T) {
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, def := range []string{"ENUM('zebra','apple','mango','kiwi')", "SET('zebra','apple','mango','kiwi')"} {
		table := "ek_order_" + strings.ToLower(def[:3])
		t.Run(def, func(t *testing.T) {
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, fmt.Sprintf("CREATE TABLE %s (k %s NOT NULL PRIMARY KEY)", table, def))
			vals := []string{"zebra", "apple", "mango", "kiwi"}
			if def[0] == 'S' {
				vals = append(vals, "", "zebra,apple", "apple,mango", "zebra,kiwi", "zebra,apple,mango,kiwi")
			}
			testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES ('"+strings.Join(vals, "'), ('")+"')")
			keys := queryColumn(t, "SELECT k FROM "+table+" ORDER BY k")
			s := &stream{sql: onConn(conn), keyspaceStream: keyspaceStream{cfg: &Config{Database: "test"}, filter: mustFilter(t, table)}}
			ct := &copyTable{name: table}
			if err := s.describeCopy(ct, false, false); err != nil {
				t.Fatal(err)
			}
			ct.status = copyRunning
			p := &tablePlan{name: table, cols: ct.cols}
			for j, last := range keys {
				ct.setLastPK([][]byte{[]byte(last)})
				for k, cell := range keys {
					held, err := s.inCopiedRange(ct, p, [][]byte{[]byte(cell)})
					if err != nil {
						t.Fatal(err)
					}
					if want := k <= j; held != want {
						t.Errorf("%q against last key %q: held %v, the server's order says %v", cell, last, held, want)
					}
				}
			}
		})
	}
}

// TestCopyEnumKeyResume resumes a copy from a table_p_ks whose last key is an ENUM label: the
// copy goes on with the members numbered after it; a label not among the members is refused.
func TestCopyEnumKeyResume(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ek_resume",
		"CREATE TABLE ek_resume (e ENUM('zebra','apple','mango') NOT NULL PRIMARY KEY)",
		"INSERT INTO ek_resume VALUES ('mango'), ('apple'), ('zebra')")
	pos := headPos(t)
	e := newEngine(t)
	flt := rules(&binlogdata.Rule{Match: "ek_resume"})
	resume := func(last string) Request {
		return Request{Position: pos, Filter: flt, TableLastPKs: []*binlogdata.TableLastPK{{TableName: "ek_resume",
			Lastpk: lastPK([]*query.Field{{Name: "e", Type: query.Type_ENUM}}, last)}}}
	}
	ts := startStream(t, e, resume("zebra"))
	ts.expect("BEGIN", "FIELD ek_resume e:ENUM", "ROW ek_resume +[apple] +[mango]", "LASTPK")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := e.Stream(ctx, resume("Zebra"), func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), "is not a value of key column e") {
		t.Errorf("resume after Zebra: got %v, want an invalid-argument error", err)
	}
}
