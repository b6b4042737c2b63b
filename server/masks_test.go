package server

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // the digest a mask names
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// The masks of the tests: one of each kind, on character columns of three character sets
// and a binary one.
var testMasks = []*vstreamv1.ColumnMask{
	{Table: "mk", Column: "email", Rule: "mask.hash.SHA-256.with.salt.pepper"},
	{Table: "/^m", Column: "phone", Rule: "truncate.to.3.chars"},
	{Table: "mk", Column: "note", Rule: "mask.with.6.chars"},
	{Table: "mk", Column: "bin", Rule: "mask.hash.md5.with.salt.s"},
}

func sha256Hex(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
func md5Hex(s string) string    { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) } //nolint:gosec // as above

// maskRow is a row of mk: its clear values and what must arrive instead.
type maskRow struct {
	id                             string
	email, phone, note, bin, keep  string
	wantEmail, wantPhone, wantNote string
	wantBin                        string
}

func newMaskRow(id, email, phone, note, bin, keep string) maskRow {
	r := maskRow{id: id, email: email, phone: phone, note: note, bin: bin, keep: keep}
	r.wantEmail = sha256Hex("pepper" + email)
	r.wantPhone = string([]rune(phone)[:3])
	r.wantNote = "******"
	r.wantBin = md5Hex("s" + bin)
	return r
}

func (r maskRow) insert() string {
	return "INSERT INTO mk VALUES (" + r.id + ", '" + r.email + "', '" + r.phone + "', '" + r.note + "', '" + r.bin + "', '" + r.keep + "')"
}

// secrets are the values that must never leave the server.
func (r maskRow) secrets() []string { return []string{r.email, r.phone, r.note, r.bin} }

// maskTable makes mk with a copied row; the binlog rows are inserted by each test.
func maskTable(t *testing.T) (copied, inserted, updated maskRow) {
	copied = newMaskRow("1", "alice@secret.example", "ñ+1-555-0100", "latin note one", "binsecret1", "k1")
	inserted = newMaskRow("2", "bob@secret.example", "+44-20-7946-0000", "latin note two", "binsecret2", "k2")
	updated = newMaskRow("2", "bob.new@secret.example", "+44-20-7946-9999", "latin note three", "binsecret3", "k3")
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS mk",
		"CREATE TABLE mk (id INT PRIMARY KEY, email VARCHAR(64), phone VARCHAR(32) CHARACTER SET utf8mb4, "+
			"note TEXT CHARACTER SET latin1, bin VARBINARY(32), keep VARCHAR(10))", copied.insert())
	return copied, inserted, updated
}

func updateSQL(r maskRow) string {
	return "UPDATE mk SET email = '" + r.email + "', phone = '" + r.phone + "', note = '" + r.note + "', bin = '" + r.bin + "', keep = '" + r.keep + "' WHERE id = " + r.id
}

// checkMaskedRow compares a ROW's cells (id, email, phone, note, bin, keep) with what r wants.
func checkMaskedRow(t *testing.T, what string, row *query.Row, r maskRow) {
	t.Helper()
	got := rowCells(row)
	want := []string{r.id, r.wantEmail, r.wantPhone, r.wantNote, r.wantBin, r.keep}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%s row:\n got %q\nwant %q", what, got, want)
	}
}

// checkMaskedFields: a masked or hashed column is VARCHAR (VARBINARY when binary) as long as
// its values; a truncated one keeps its type.
func checkMaskedFields(t *testing.T, fields []*query.Field) {
	t.Helper()
	if len(fields) != 6 {
		t.Fatalf("%d fields", len(fields))
	}
	for _, c := range []struct {
		i      int
		typ    query.Type
		length uint32
		colTyp string
	}{
		{1, query.Type_VARCHAR, 64 * 4, "varchar(64)"},
		{2, query.Type_VARCHAR, 32 * 4, ""},
		{3, query.Type_VARCHAR, 6 * 4, "varchar(6)"},
		{4, query.Type_VARBINARY, 32, "varbinary(32)"},
	} {
		f := fields[c.i]
		if f.Type != c.typ || f.ColumnLength != c.length || (c.colTyp != "" && f.ColumnType != c.colTyp) {
			t.Errorf("field %s: %v length %d column type %q, want %v %d %q", f.Name, f.Type, f.ColumnLength, f.ColumnType, c.typ, c.length, c.colTyp)
		}
	}
	if fields[3].Charset != 45 || fields[4].Charset != 63 {
		t.Errorf("charsets: note %d, bin %d; want 45 and 63", fields[3].Charset, fields[4].Charset)
	}
}

// TestColumnMasksNative: SQL in, events out, through the native API in VEvents: the copied
// row and the binlog's insert and update (both images) carry every kind of mask, and FIELD
// describes the masked values.
func TestColumnMasksNative(t *testing.T) {
	copied, inserted, updated := maskTable(t)
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
		Flags:  &vstreamv1.Flags{ColumnMasks: testMasks},
	}}})
	var fields [][]*query.Field
	var rows []*binlogdata.RowChange
	copyDone := false
	for !copyDone || len(rows) < 3 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			switch ev.Type {
			case binlogdata.VEventType_FIELD:
				fields = append(fields, ev.FieldEvent.Fields)
			case binlogdata.VEventType_ROW:
				rows = append(rows, ev.RowEvent.RowChanges...)
			case binlogdata.VEventType_COPY_COMPLETED:
				if !copyDone {
					copyDone = true
					testkit.MustExec(t, db, inserted.insert(), updateSQL(updated))
				}
			default:
			}
		}
	}
	if len(fields) == 0 {
		t.Fatal("no FIELD event")
	}
	for _, f := range fields {
		checkMaskedFields(t, f)
	}
	checkMaskedRow(t, "copied", rows[0].After, copied)
	checkMaskedRow(t, "inserted", rows[1].After, inserted)
	checkMaskedRow(t, "update before", rows[2].Before, inserted)
	checkMaskedRow(t, "update after", rows[2].After, updated)
}

// TestColumnMasksFormats: in every encoded format, the copy and the binlog of mk carry the
// masked values, and no message's key, value or headers holds a masked column's clear value.
func TestColumnMasksFormats(t *testing.T) {
	for _, format := range []string{"debezium-json", "avro", "canal-json", "canal-protobuf", "drs-json", "drs-json-c", "streamsets"} {
		t.Run(format, func(t *testing.T) {
			copied, inserted, updated := maskTable(t)
			cc := dial(t, serve(t, dbConfig(), Options{}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
				Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
				Flags:  &vstreamv1.Flags{ColumnMasks: testMasks},
				Format: format,
			}}})
			// The hashes arrive as text in every format (JSON strings, Avro and protobuf
			// strings): wait for each row's.
			want := []string{copied.wantEmail, inserted.wantEmail, updated.wantEmail}
			var all [][]byte
			seen := func(s string) bool {
				for _, b := range all {
					if bytes.Contains(b, []byte(s)) {
						return true
					}
				}
				return false
			}
			wrote := false
			for !seen(want[0]) || !seen(want[1]) || !seen(want[2]) {
				resp, err := st.Recv()
				if err != nil {
					t.Fatalf("after %d messages: %v", len(all), err)
				}
				for _, m := range resp.Messages {
					all = append(all, m.Key, m.Value)
					for k, v := range m.Headers {
						all = append(all, []byte(k+"="+v))
					}
				}
				if !wrote && seen(want[0]) {
					wrote = true
					testkit.MustExec(t, db, inserted.insert(), updateSQL(updated))
				}
			}
			// Binary columns arrive base64 or hex encoded in some formats: a secret must not
			// appear in any of those forms either, and the binary hash in one of them.
			forms := func(s string) []string {
				// DRS writes bytes as a list of signed decimals: "[98, 105, ...]".
				var list []string
				for _, c := range []byte(s) {
					list = append(list, strconv.Itoa(int(int8(c))))
				}
				return []string{s, base64.StdEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s)),
					strings.ToUpper(hex.EncodeToString([]byte(s))), "[" + strings.Join(list, ", ") + "]"}
			}
			for _, r := range []maskRow{copied, inserted, updated} {
				for _, s := range r.secrets() {
					for _, f := range forms(s) {
						if seen(f) {
							t.Errorf("%q is in the output (as %q)", s, f)
						}
					}
				}
				if !slices.ContainsFunc(forms(r.wantBin), seen) {
					t.Errorf("the hash of %q is not in the output in any form", r.bin)
				}
			}
		})
	}
}

// TestColumnMasksVtgate: masks the server is configured with (vstreamd --column-masks) apply
// to Vitess's vtgate API too, whose requests cannot carry any.
func TestColumnMasksVtgate(t *testing.T) {
	copied, inserted, _ := maskTable(t)
	cfg := dbConfig()
	masks, err := filter.ParseMasks("mask.hash.SHA-256.with.salt.pepper=mk.email;truncate.to.3.chars=/^m.phone;" +
		"mask.with.6.chars=mk.note;mask.hash.MD5.with.salt.s=mk.bin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ColumnMasks = masks
	cc := dial(t, serve(t, cfg, Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Shard: "0", Gtid: ""}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows []*binlogdata.RowChange
	var fields [][]*query.Field
	wrote := false
	for len(rows) < 2 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			switch ev.Type {
			case binlogdata.VEventType_FIELD:
				fields = append(fields, ev.FieldEvent.Fields)
			case binlogdata.VEventType_ROW:
				rows = append(rows, ev.RowEvent.RowChanges...)
			case binlogdata.VEventType_COPY_COMPLETED:
				if !wrote {
					wrote = true
					testkit.MustExec(t, db, inserted.insert())
				}
			default:
			}
		}
	}
	for _, f := range fields {
		checkMaskedFields(t, f)
	}
	checkMaskedRow(t, "copied", rows[0].After, copied)
	checkMaskedRow(t, "inserted", rows[1].After, inserted)
}

// TestColumnMasksRefused: a mask that cannot apply is InvalidArgument naming the column and
// the rule.
func TestColumnMasksRefused(t *testing.T) {
	maskTable(t)
	cc := dial(t, serve(t, dbConfig(), Options{}))
	for _, tc := range []struct {
		mask *vstreamv1.ColumnMask
		msg  string
	}{
		{&vstreamv1.ColumnMask{Table: "mk", Column: "email", Rule: "mask.with.x.chars"}, `column "email" rule "mask.with.x.chars"`},
		{&vstreamv1.ColumnMask{Table: "mk", Column: "email", Rule: "mask.hash.CRC32.with.salt.a"}, "ALGO one of MD5, SHA-1"},
		{&vstreamv1.ColumnMask{Table: "mk", Column: "email", Rule: "blur"}, "want mask.with.N.chars"},
		{&vstreamv1.ColumnMask{Table: "mk", Column: "id", Rule: "mask.with.3.chars"}, "mk.id: the column is part of the primary key"},
		{&vstreamv1.ColumnMask{Table: "mk", Column: "", Rule: "mask.with.3.chars"}, "start.flags.column_masks[0]"},
		{&vstreamv1.ColumnMask{Table: "/(", Column: "email", Rule: "mask.with.3.chars"}, "bad table regex"},
	} {
		s := firstError(t, cc, context.Background(), &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mk"}}},
			Flags:  &vstreamv1.Flags{ColumnMasks: []*vstreamv1.ColumnMask{tc.mask}},
		}}})
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), tc.msg) {
			t.Errorf("mask %v: got %v %q, want InvalidArgument with %q", tc.mask, s.Code(), s.Message(), tc.msg)
		}
	}
}
