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

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// keyBases start the keys of TestCopyKeyServerCollation: under the UCA collations accented
// letters sort with their base letter, ß with ss and æ with ae, while their code points sort
// after every ASCII letter. A numeric suffix keeps each key distinct under any collation.
var keyBases = []string{"a", "Ä", "b", "ß", "ss", "æ", "ae", "é", "E", "o", "Ø", "ñ", "n", "z", "Z", "ç", "c"}

// TestCopyKeyServerCollation copies tables whose text key has a collation sqltypes cannot
// compare, one row a chunk, while each chunk's catch-up brings inserts, updates, key moves
// and deletes on both sides of the last key copied: the client ends with exactly the table's
// rows, each change applied once, because the copy asks the server where each binlog row's
// key falls.
func TestCopyKeyServerCollation(t *testing.T) {
	// The flavor's newest UCA collation: MariaDB's UCA 14.0.0, MySQL's 9.0.0 (its default).
	for _, coll := range []string{"utf8mb4_unicode_ci", byFlavor("utf8mb4_uca1400_ai_ci", "utf8mb4_0900_ai_ci"), "utf8mb4_unicode_520_ci"} {
		t.Run(coll, func(t *testing.T) {
			table := "kc_" + strings.TrimPrefix(coll, "utf8mb4_")
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, fmt.Sprintf("CREATE TABLE %s (k VARCHAR(20) COLLATE %s PRIMARY KEY, v INT NOT NULL)", table, coll))
			var pool []string
			for i := range 60 {
				pool = append(pool, fmt.Sprintf("%s%d", keyBases[i%len(keyBases)], i))
			}
			var ins []string
			for _, k := range pool[:30] {
				ins = append(ins, fmt.Sprintf("('%s', 0)", k))
			}
			testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES "+strings.Join(ins, ", "))
			checkOrderDiffers(t, table)

			rng := rand.New(rand.NewPCG(7, uint64(len(coll))))
			write := func() error {
				var q []string
				for range 4 {
					a, b := pool[rng.IntN(len(pool))], pool[rng.IntN(len(pool))]
					switch rng.IntN(4) {
					case 0:
						q = append(q, fmt.Sprintf("INSERT IGNORE INTO %s VALUES ('%s', 0)", table, a))
					case 1:
						q = append(q, fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE k = '%s'", table, a))
					case 2:
						q = append(q, fmt.Sprintf("UPDATE IGNORE %s SET k = '%s' WHERE k = '%s'", table, b, a))
					default:
						q = append(q, fmt.Sprintf("DELETE FROM %s WHERE k = '%s'", table, a))
					}
				}
				return db.Exec(q...)
			}
			e := newEngine(t)
			ts := streamWritingBetweenChunks(t, e, Request{Filter: rules(&binlogdata.Rule{Match: table}), CopyChunkRows: 1}, write)
			im := newImage(map[string][]string{table: {"k"}})
			for !im.Copied {
				im.Add(ts.next(false))
			}
			waitCaughtUp(t, ts, im)
			im.Check(t, db, "test")
		})
	}
}

// checkOrderDiffers makes sure the table's keys are ones where the server's order is not
// code point order, case folded: otherwise the test could not tell an approximation.
func checkOrderDiffers(t *testing.T, table string) {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Execute("SELECT k FROM " + table + " ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	var server []string
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		server = append(server, s)
	}
	folded := slices.Clone(server)
	slices.SortFunc(folded, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	if slices.Equal(server, folded) {
		t.Fatalf("%s: the server orders the keys as folded code points do: %q", table, server)
	}
}

// streamWritingBetweenChunks is startStream whose send runs write after each LASTPK of a copy
// still running: the stream waits meanwhile, so the writes land in the next chunk's catch-up.
func streamWritingBetweenChunks(t *testing.T, e *Engine, req Request, write func() error) *testStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testStream{t: t, events: make(chan *binlogdata.VEvent, 100000), errc: make(chan error, 1), cancel: cancel}
	go func() {
		ts.errc <- e.Stream(ctx, req, func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				ts.events <- ev
				if ev.Type == binlogdata.VEventType_LASTPK && !ev.LastPKEvent.GetCompleted() {
					if err := write(); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}()
	t.Cleanup(ts.stop)
	return ts
}

// TestCopyKeyServerCompareFails: when the server cannot be asked how two keys compare, the
// stream ends with an Unavailable error rather than guess.
func TestCopyKeyServerCompareFails(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS kc_fail", "CREATE TABLE kc_fail (k VARCHAR(20) COLLATE utf8mb4_unicode_ci PRIMARY KEY)")
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{sql: onConn(conn), keyspaceStream: keyspaceStream{cfg: &Config{Database: "test"}}}
	flt, err := filter.New(rules(&binlogdata.Rule{Match: "kc_fail"}))
	if err != nil {
		t.Fatal(err)
	}
	s.filter = flt
	ct := &copyTable{name: "kc_fail"}
	if err := s.describeCopy(ct, false, false); err != nil {
		t.Fatal(err)
	}
	ct.status = copyRunning
	ct.setLastPK([][]byte{[]byte("m")})
	p := &tablePlan{name: "kc_fail", cols: ct.cols}
	held, err := s.inCopiedRange(ct, p, [][]byte{[]byte("Ä")})
	if err != nil || !held {
		t.Fatalf("Ä before m: held %v, err %v; want held", held, err)
	}
	_ = conn.Close()
	_, err = s.inCopiedRange(ct, p, [][]byte{[]byte("é")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "utf8mb4_unicode_ci") {
		t.Fatalf("err = %v, want ErrUnavailable naming the collation", err)
	}
	// A collation sqltypes compares never asks the server: the closed connection is not used.
	gen := &copyTable{name: "kc_general", status: copyRunning, key: []string{"k"},
		keyFields: []*query.Field{{Name: "k", Type: query.Type_VARCHAR, Charset: 45}}}
	gen.setLastPK([][]byte{[]byte("m")})
	held, err = s.inCopiedRange(gen, &tablePlan{name: "kc_general", cols: ct.cols}, [][]byte{[]byte("Ä")})
	if err != nil || !held {
		t.Fatalf("utf8mb4_general_ci Ä before m: held %v, err %v; want held without the server", held, err)
	}
}

// TestCopyKeyServerOrder compares every pair of a table's keys, given in the column's own
// bytes as the binlog has them, and checks the copy places each where the server's ORDER BY
// does, for UCA collations and latin1_german2_ci (ä = ae), whose order sqltypes does not know.
func TestCopyKeyServerOrder(t *testing.T) {
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, def := range []string{
		"VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_german2_ci",
		"VARCHAR(20) CHARACTER SET utf8mb3 COLLATE utf8mb3_unicode_ci",
		"VARCHAR(20) COLLATE utf8mb4_unicode_ci",
		// The flavor's newest UCA collations: MariaDB's UCA 14.0.0, MySQL's 9.0.0.
		byFlavor("CHAR(20) COLLATE utf8mb4_uca1400_ai_ci", "CHAR(20) COLLATE utf8mb4_0900_ai_ci"),
		byFlavor("VARCHAR(20) COLLATE utf8mb4_uca1400_as_cs", "VARCHAR(20) COLLATE utf8mb4_0900_as_cs"),
	} {
		table := fmt.Sprintf("kc_order%d", i)
		t.Run(def, func(t *testing.T) {
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS "+table, fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY)", table, def),
				"INSERT INTO "+table+" VALUES (''), ('ad'), ('äb'), ('Af'), ('ß'), ('sr'), ('st'), ('æ'), ('aez'), ('Øa'), ('ob'), ('z')")
			r, err := conn.Execute("SELECT HEX(k) FROM " + table + " ORDER BY k")
			if err != nil {
				t.Fatal(err)
			}
			var keys [][]byte
			for j := range r.RowNumber() {
				h, _ := r.GetString(j, 0)
				b, err := hex.DecodeString(h)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, b)
			}
			s := &stream{sql: onConn(conn), keyspaceStream: keyspaceStream{cfg: &Config{Database: "test"}, filter: mustFilter(t, table)}}
			ct := &copyTable{name: table}
			if err := s.describeCopy(ct, false, false); err != nil {
				t.Fatal(err)
			}
			ct.status = copyRunning
			p := &tablePlan{name: table, cols: ct.cols}
			for j, last := range keys {
				ct.setLastPK([][]byte{last})
				for k, cell := range keys {
					held, err := s.inCopiedRange(ct, p, [][]byte{cell})
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

func mustFilter(t *testing.T, table string) *filter.Filter {
	t.Helper()
	flt, err := filter.New(rules(&binlogdata.Rule{Match: table}))
	if err != nil {
		t.Fatal(err)
	}
	return flt
}
