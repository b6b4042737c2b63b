package vstreamer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// rawConn is a connection that reads cells as the bytes the server stores (as the copy
// does) and writes literals in utf8mb4.
func rawConn(t *testing.T) *client.Conn {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Execute("SET NAMES utf8mb4"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Execute("SET character_set_results = binary"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// notOnServer are the supported collations one flavor lacks: MariaDB has no utf8mb4_0900_bin,
// MySQL none of the _nopad_ collations.
var notOnServer = map[bool][]uint32{
	false: {309},
	true:  {1032, 1035, 1057, 1069, 1070, 1071, 1089, 1107},
}

// serverCollations gives each supported collation the server has, checking that the server
// names its id as sqltypes does and lacks only the collations its flavor lacks.
func serverCollations(t *testing.T, conn *client.Conn) []*sqltypes.Collation {
	t.Helper()
	var out []*sqltypes.Collation
	for _, id := range sqltypes.Collations() {
		c, err := sqltypes.CollationOf(id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := conn.Execute(fmt.Sprintf("SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE ID = %d", id))
		if err != nil {
			t.Fatal(err)
		}
		absent := slices.Contains(notOnServer[onMySQL()], id)
		if r.RowNumber() == 0 {
			if !absent {
				t.Errorf("%s (%d): not a collation of this %s server", c.Name, id, db.Flavor())
			}
			continue
		}
		if absent {
			t.Errorf("%s (%d): a collation of this %s server, which should lack it", c.Name, id, db.Flavor())
		}
		if name, _ := r.GetString(0, 0); name != c.Name {
			t.Fatalf("collation %d is %s on the server, %s in sqltypes", id, name, c.Name)
		}
		out = append(out, c)
	}
	return out
}

// insertHex fills table (i INT, a VARBINARY, [b VARBINARY]) with rows of byte strings.
func insertHex(t *testing.T, conn *client.Conn, table string, rows [][][]byte) {
	t.Helper()
	for start := 0; start < len(rows); start += 2000 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO " + table + " VALUES ")
		for i, r := range rows[start:min(start+2000, len(rows))] {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d", start+i)
			for _, v := range r {
				sb.WriteString(", X'" + hex.EncodeToString(v) + "'")
			}
			sb.WriteByte(')')
		}
		if _, err := conn.Execute(sb.String()); err != nil {
			t.Fatal(err)
		}
	}
}

// characters lists every character of a collation's character set once, as its bytes:
// each byte of a single-byte set, each code point of Unicode's basic plane (surrogates too
// on MariaDB, which stores them; MySQL refuses them as it does any malformed UTF-8) and a
// sample beyond it for utf8mb4.
func characters(charset string) [][]byte {
	var out [][]byte
	switch charset {
	case "ascii":
		for b := range 128 {
			out = append(out, []byte{byte(b)})
		}
	case "latin1":
		for b := range 256 {
			out = append(out, []byte{byte(b)})
		}
	default:
		for r := rune(0); r < 0x10000; r++ {
			if r < 0xd800 || r > 0xdfff {
				out = append(out, utf8.AppendRune(nil, r))
			} else if !onMySQL() {
				// utf8.AppendRune refuses surrogates: their bytes by hand.
				out = append(out, []byte{0xe0 | byte(r>>12), 0x80 | byte(r>>6)&0x3f, 0x80 | byte(r)&0x3f})
			}
		}
		if charset == "utf8mb4" {
			for _, r := range []rune{0x10000, 0x1d400, 0x1f600, 0x1f63a, 0x20000, 0xe0001, 0x10fffd} {
				out = append(out, utf8.AppendRune(nil, r))
			}
		}
	}
	return out
}

// TestCollationOrderMatchesServer ranks every character of each supported collation's
// character set on the server (ORDER BY under the collation) and checks that
// sqltypes.Collation orders them the same: equal where the server ranks them equal, before
// where it ranks them before.
func TestCollationOrderMatchesServer(t *testing.T) {
	conn := rawConn(t)
	colls := serverCollations(t, conn)
	byCharset := map[string][]*sqltypes.Collation{}
	for _, c := range colls {
		byCharset[c.Charset] = append(byCharset[c.Charset], c)
	}
	for cs, cc := range byCharset {
		chars := characters(cs)
		table := "co_" + cs
		testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (i INT PRIMARY KEY, a VARBINARY(4))")
		rows := make([][][]byte, len(chars))
		for i, c := range chars {
			rows[i] = [][]byte{c}
		}
		insertHex(t, conn, table, rows)
		for _, c := range cc {
			t.Run(c.Name, func(t *testing.T) {
				expr := "a"
				if c.Charset != "binary" {
					expr = fmt.Sprintf("CONVERT(a USING %s) COLLATE %s", c.Charset, c.Name)
				}
				r, err := conn.Execute(fmt.Sprintf("SELECT i, DENSE_RANK() OVER (ORDER BY %s) FROM %s", expr, table))
				if err != nil {
					t.Fatal(err)
				}
				rank := make([]int64, len(chars))
				for k := range r.RowNumber() {
					i, _ := r.GetInt(k, 0)
					rank[i], _ = r.GetInt(k, 1)
				}
				order := make([]int, len(chars))
				for i := range order {
					order[i] = i
				}
				slices.SortStableFunc(order, func(x, y int) int { return c.Compare(chars[x], chars[y]) })
				bad := 0
				for k := 1; k < len(order); k++ {
					x, y := order[k-1], order[k]
					got := c.Compare(chars[x], chars[y])
					want := 0
					if rank[x] < rank[y] {
						want = -1
					} else if rank[x] > rank[y] {
						want = 1
					}
					if got != want {
						if bad++; bad <= 10 {
							t.Errorf("%q (%x) vs %q (%x): Go %d, server ranks %d and %d", chars[x], chars[x], chars[y], chars[y], got, rank[x], rank[y])
						}
					}
				}
				if bad > 10 {
					t.Errorf("... %d disagreements in all", bad)
				}
			})
		}
	}
}

// alphabet is what the random strings of the pair tests are made of: letters with and
// without accents and case, spaces and a tab (padding), a control, signs, a character
// beyond the basic plane.
var alphabet = []string{"a", "A", "ä", "Ä", "e", "é", "É", "n", "Ñ", "ñ", "s", "ß", "w", "ẅ", "y", "ÿ", "z", " ", " ", "\t", "\x01", "_", "~", "0", "€", "😀", "😺", "æ", "Æ"}

// randomStrings makes n strings of up to 4 characters of the alphabet that the character
// set can hold, in its bytes.
func randomStrings(rng *rand.Rand, c *sqltypes.Collation, n int) [][]byte {
	var letters [][]byte
	for _, s := range alphabet {
		if b, err := c.FromUTF8(s); err == nil {
			letters = append(letters, b)
		}
	}
	out := make([][]byte, n)
	for i := range out {
		var s []byte
		for range rng.IntN(5) {
			s = append(s, letters[rng.IntN(len(letters))]...)
		}
		out[i] = s
	}
	return out
}

// TestCollationCompareMatchesServer compares random strings (trailing spaces, tabs, accents,
// case) pair by pair with the server's STRCMP under each supported collation.
func TestCollationCompareMatchesServer(t *testing.T) {
	conn := rawConn(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS co_pairs", "CREATE TABLE co_pairs (i INT PRIMARY KEY, a VARBINARY(32), b VARBINARY(32))")
	for _, c := range serverCollations(t, conn) {
		t.Run(c.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.ID), 1))
			strs := randomStrings(rng, c, 3000)
			pairs := make([][][]byte, 1500)
			for i := range pairs {
				pairs[i] = [][]byte{strs[2*i], strs[2*i+1]}
				if i%5 == 0 {
					// Often the same string with spaces after it.
					pairs[i][1] = append(slices.Clone(strs[2*i]), "  "[:1+i%2]...)
				}
			}
			testkit.MustExec(t, db, "DELETE FROM co_pairs")
			insertHex(t, conn, "co_pairs", pairs)
			a, b := "a", "b"
			if c.Charset != "binary" {
				a = fmt.Sprintf("CONVERT(a USING %s) COLLATE %s", c.Charset, c.Name)
				b = fmt.Sprintf("CONVERT(b USING %s) COLLATE %s", c.Charset, c.Name)
			}
			r, err := conn.Execute(fmt.Sprintf("SELECT i, STRCMP(%s, %s) FROM co_pairs", a, b))
			if err != nil {
				t.Fatal(err)
			}
			if r.RowNumber() != len(pairs) {
				t.Fatalf("%d rows", r.RowNumber())
			}
			for k := range r.RowNumber() {
				i, _ := r.GetInt(k, 0)
				want, _ := r.GetInt(k, 1)
				p := pairs[i]
				if got := c.Compare(p[0], p[1]); int64(got) != want {
					t.Errorf("%q vs %q: Go %d, server %d", p[0], p[1], got, want)
				}
			}
		})
	}
}

// TestFilterVerdictMatchesServer: for each supported collation, a table of random strings,
// and conditions of every operator on it, the rows the filter's Match passes are exactly
// those the server's WHERE (the plan's WhereSQL, which the copy pushes down) returns.
func TestFilterVerdictMatchesServer(t *testing.T) {
	conn := rawConn(t)
	for _, c := range serverCollations(t, conn) {
		t.Run(c.Name, func(t *testing.T) {
			column := "VARBINARY(32)"
			if c.Charset != "binary" {
				column = fmt.Sprintf("VARCHAR(32) CHARACTER SET %s COLLATE %s", c.Charset, c.Name)
			}
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS co_verdict", "CREATE TABLE co_verdict (i INT PRIMARY KEY, v "+column+")")
			rng := rand.New(rand.NewPCG(uint64(c.ID), 2))
			strs := randomStrings(rng, c, 400)
			rows := make([][][]byte, len(strs))
			for i, s := range strs {
				rows[i] = [][]byte{s}
			}
			insertHex(t, conn, "co_verdict", rows)
			r, err := conn.Execute("SELECT i, v, COLLATION(v) FROM co_verdict")
			if err != nil {
				t.Fatal(err)
			}
			if name, _ := r.GetString(0, 2); c.Charset != "binary" && name != c.Name {
				t.Fatalf("column collation %s", name)
			}
			cells := make([][]byte, r.RowNumber())
			for k := range r.RowNumber() {
				i, _ := r.GetInt(k, 0)
				v, _ := r.GetString(k, 1)
				cells[i] = []byte(v)
			}
			typ := query.Type_VARCHAR
			if c.Charset == "binary" || strings.HasSuffix(c.Name, "_bin") {
				typ = query.Type_VARBINARY // as FIELD types a column of a binary collation
			}
			fields := []*query.Field{{Name: "i", Type: query.Type_INT32, Charset: 63}, {Name: "v", Type: typ, Charset: c.ID}}
			lits := randomStrings(rng, c, 40)
			var conds []string
			for k := 0; k+3 < len(lits); k += 4 {
				q := func(b []byte) string {
					// Literals are UTF-8 text in a filter.
					if c.Charset == "latin1" {
						return filter.QuoteString(string(sqltypes.AppendLatin1(nil, b)))
					}
					if !utf8.Valid(b) {
						return "X'" + hex.EncodeToString(b) + "'"
					}
					return filter.QuoteString(string(b))
				}
				a, b, d, e := q(lits[k]), q(lits[k+1]), q(lits[k+2]), q(lits[k+3])
				conds = append(conds, "v = "+a, "v != "+a, "v < "+b, "v <= "+b, "v > "+d, "v >= "+d,
					"v in ("+a+", "+b+", "+e+")", "v not in ("+d+", "+e+")", "v between "+a+" and "+b, "v not between "+d+" and "+e)
			}
			for _, cond := range conds {
				f, err := filter.New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "co_verdict", Filter: "select * from co_verdict where " + cond}}})
				if err != nil {
					t.Fatal(err)
				}
				p, err := f.Plan("co_verdict", fields, []int{0})
				if err != nil {
					t.Fatalf("%s: %v", cond, err)
				}
				res, err := conn.Execute("SELECT i FROM co_verdict WHERE " + p.WhereSQL(fields) + " ORDER BY i")
				if err != nil {
					t.Fatalf("%s: %v", cond, err)
				}
				var server, ours []int64
				for k := range res.RowNumber() {
					i, _ := res.GetInt(k, 0)
					server = append(server, i)
				}
				for i, cell := range cells {
					if p.Match([][]byte{[]byte(fmt.Sprint(i)), cell}) {
						ours = append(ours, int64(i))
					}
				}
				if !slices.Equal(server, ours) {
					t.Errorf("%s: the server's WHERE passes %v, the filter %v", cond, server, ours)
				}
			}
		})
	}
}

// TestFilterRefusesCollation: a condition on a column of a collation the filter does not
// compare exactly is an invalid filter naming the column and the collation; projecting the
// column, or testing it for NULL, is fine.
func TestFilterRefusesCollation(t *testing.T) {
	// k is of the flavor's newest UCA collation: MariaDB's UCA 14.0.0, MySQL's 9.0.0 (its default).
	uca := byFlavor("utf8mb4_uca1400_ai_ci", "utf8mb4_0900_ai_ci")
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS co_refused",
		"CREATE TABLE co_refused (id INT PRIMARY KEY, u VARCHAR(10) COLLATE utf8mb4_unicode_ci, g VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_german2_ci, k VARCHAR(10) COLLATE "+uca+")")
	e := newEngine(t)
	for _, c := range []struct {
		where, msg string
	}{
		{"u = 'x'", "column u cannot be compared in a filter: collation not compared as the server compares it: utf8mb4_unicode_ci"},
		{"g < 'x'", "column g cannot be compared in a filter: collation not compared as the server compares it: latin1_german2_ci"},
		{"k in ('x')", "column k cannot be compared in a filter: collation not compared as the server compares it: " + uca},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := e.Stream(ctx, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "co_refused", Filter: "select * from co_refused where " + c.where})},
			func([]*binlogdata.VEvent) error { return nil })
		cancel()
		if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.where, err, c.msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := e.Stream(ctx, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "co_refused", Filter: "select id, u, g from co_refused where u is not null"})},
		func([]*binlogdata.VEvent) error { return nil })
	if errors.Is(err, filter.ErrInvalid) {
		t.Errorf("projecting: %v, want the stream to run until its deadline", err)
	}
}

// TestFilterStreamVerdictMatchesServer streams the same inserted rows through filters with
// conditions on columns of every comparison kind (collated strings of three character sets,
// ENUM, DECIMAL, DATE and DATETIME, TIME, BIT) and checks that the binlog stream sends
// exactly the rows the server's WHERE with the same conditions selects.
func TestFilterStreamVerdictMatchesServer(t *testing.T) {
	// m is of a NO PAD collation: MariaDB's _nopad_ ones, MySQL's utf8mb4_0900_bin. e names
	// its collation: MySQL's default, utf8mb4_0900_ai_ci, is one the filter refuses.
	noPad := byFlavor("CHARACTER SET utf8mb3 COLLATE utf8mb3_general_nopad_ci", "CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin")
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS co_stream", `CREATE TABLE co_stream (id INT PRIMARY KEY,
		u VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci,
		b VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
		l VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci,
		m VARCHAR(20) `+noPad+`,
		e ENUM('new', 'Paid', 'gone') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, d DECIMAL(8,3), dt DATETIME(3), dd DATE, tm TIME(2), bt BIT(10))`)
	pos := headPos(t)
	words := []string{"newton", "Ñewton", "NEWTON ", "neẅton", "newtons", "Newt", "ärger", "Ärger", "arger", "zebra", "", " ", "a\t"}
	latin := []string{"ärger", "Ärger", "arger", "zebra", "", " ", "a\t", "newton", "Newton ", "ÿ", "€", "_"}
	var rows []string
	for i := range 39 {
		w := words[i%len(words)]
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s, '%s', %d.%03d, '2024-01-%02d %02d:00:00.%03d', '2024-01-%02d', '%s%02d:30:00.5', %d)",
			i, filter.QuoteString(w), filter.QuoteString(words[(i+3)%len(words)]), filter.QuoteString(latin[(i+5)%len(latin)]),
			filter.QuoteString(words[(i+7)%len(words)]), []string{"new", "Paid", "gone"}[i%3], i-20, i*37%1000, 1+i%5, i%24, i*7%1000,
			1+i%3, []string{"", "-"}[i%2], i%5, i*29%1024))
	}
	testkit.MustExec(t, db, "INSERT INTO co_stream VALUES "+strings.Join(rows, ", "))
	e := newEngine(t)
	for _, cond := range []string{
		"u = 'newton'", "u > 'Newt'", "u between 'a' and 'n'", "u in ('', 'zebra')", "u != 'a'",
		"b = 'newton'", "b < 'Newton'", "b in ('NEWTON', ' ')",
		"l = 'Ärger'", "l > 'zebra'", "l < 'a'", "l not in ('arger', 'ärger')",
		"m = 'newton'", "m = 'NEWTON'", "m >= 'newtons'",
		"e = 'PAID'", "e in ('new', 'gone')", "e > 'new'",
		"d = -5.555", "d > '-3.1'", "d between -1 and 10.5", "d < 0",
		"dt >= '2024-01-03'", "dt < '2024-01-02 10:00:00.07'", "dd = '2024-01-02 00:00:00'", "dd > '2024-01-02'",
		"tm < '00:00:00'", "tm >= '03:30:00.5'", "tm = '-02:30:00.50'",
		"bt > 500", "bt = b'11101'", "bt < 0x10",
		"u = 'newton' and e = 'new'", "l >= 'a' and d > 0 and bt > 100",
	} {
		t.Run(cond, func(t *testing.T) {
			r, err := queryStringOn(t, "SELECT COALESCE(GROUP_CONCAT(id ORDER BY id), '') FROM co_stream WHERE "+cond)
			if err != nil {
				t.Fatal(err)
			}
			ts := startStream(t, e, Request{Position: pos, Filter: rules(&binlogdata.Rule{Match: "co_stream", Filter: "select id from co_stream where " + cond})})
			var ids []string
			for {
				ev := ts.next(false)
				if ev.Type == binlogdata.VEventType_ROW {
					for _, rc := range ev.RowEvent.RowChanges {
						ids = append(ids, string(evtext.Cells(rc.After)[0]))
					}
				}
				if ev.Type == binlogdata.VEventType_COMMIT {
					break
				}
			}
			ts.stop()
			if got := strings.Join(ids, ","); got != r {
				t.Errorf("the stream sends rows %s, the server's WHERE selects %s", got, r)
			}
		})
	}
}

// TestRefusedCollationNames: the names sqltypes gives the refused collations it names are the
// server's names of those ids.
func TestRefusedCollationNames(t *testing.T) {
	for _, id := range []uint32{31, 192, 214, 224, 246, 255, 2048, 2304} {
		name, err := queryStringOn(t, fmt.Sprintf("SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE ID = %d", id))
		if err != nil || name == "" {
			name, err = queryStringOn(t, fmt.Sprintf("SELECT FULL_COLLATION_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID = %d", id))
		}
		if err != nil || name == "" {
			t.Logf("collation %d: not on this server (%v)", id, err)
			continue
		}
		if got := sqltypes.CollationName(id); got != name {
			t.Errorf("collation %d is %s on the server, %s in sqltypes", id, name, got)
		}
	}
}
