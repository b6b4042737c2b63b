package streamsets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/formattest"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// record is a StreamSets MySQL Binary Log record as a consumer reads it.
type record struct {
	Type           string
	Database       string
	Table          string
	ServerId       int64
	Timestamp      int64
	Offset         string
	BinLogFilename *string
	BinLogPosition *int64
	GTID           *string
	SeqNo          *int64
	Data           map[string]json.RawMessage
	OldData        map[string]json.RawMessage
}

// gtidOffset is the origin's GtidSourceOffset, the JSON inside Offset in GTID mode.
type gtidOffset struct {
	GtidSet                string           `json:"gtidSet"`
	IncompleteTransactions map[string]int64 `json:"incompleteTransactions"`
}

// decoding is what a consumer must know to turn values back into MariaDB text: the units
// and unsigned convention the stream was asked for.
type decoding struct {
	micros, widen bool
}

// TestWorkload streams the shared workload and rebuilds the table from the records with a
// decoder of its own that knows StreamSets' conventions (formats.md 11), then checks the
// records' binlog coordinates.
func TestWorkload(t *testing.T) {
	cases := []struct {
		name string
		opts map[string]string
		dec  decoding
	}{
		{"default", nil, decoding{}},
		{"file-us-widen", map[string]string{"offset": "file", "time_unit": "us", "unsigned": "widen"}, decoding{micros: true, widen: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := formattest.Run(t, "streamsets", c.opts)
			t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
			var recs []record
			image := map[string]formattest.Row{}
			kinds := map[string]int{}
			for _, m := range r.Messages {
				var rec record
				d := json.NewDecoder(bytes.NewReader(m.Value))
				d.UseNumber()
				if err := d.Decode(&rec); err != nil {
					t.Fatalf("message %s: %v", m.Value, err)
				}
				recs = append(recs, rec)
				kinds[rec.Type]++
				if want := map[string]string{"INSERT": "1", "DELETE": "2", "UPDATE": "3"}[rec.Type]; want == "" || m.Headers["sdc.operation.type"] != want {
					t.Errorf("Type %s with header sdc.operation.type=%q", rec.Type, m.Headers["sdc.operation.type"])
				}
				if rec.Database != r.Database || rec.Table != formattest.Table {
					t.Errorf("record of %s.%s, want %s.%s", rec.Database, rec.Table, r.Database, formattest.Table)
				}
				switch rec.Type {
				case "INSERT":
					if rec.Data == nil || rec.OldData != nil {
						t.Errorf("INSERT images: %s", m.Value)
					}
					row := decodeRow(t, r, c.dec, rec.Data)
					image[*row["id"]] = row
				case "UPDATE":
					if rec.Data == nil || rec.OldData == nil {
						t.Errorf("UPDATE images: %s", m.Value)
					}
					old := decodeRow(t, r, c.dec, rec.OldData)
					row := decodeRow(t, r, c.dec, rec.Data)
					if cur, ok := image[*old["id"]]; !ok {
						t.Errorf("UPDATE of row %s the image does not hold", *old["id"])
					} else {
						// OldData is the whole before image: it equals the row as last seen.
						for name, v := range old {
							if !formattest.Same(column(t, r, name), cur[name], v) {
								t.Errorf("UPDATE of row %s: OldData %s = %v, image has %v", *old["id"], name, show(v), show(cur[name]))
							}
						}
					}
					delete(image, *old["id"])
					image[*row["id"]] = row
				case "DELETE":
					if rec.Data != nil || rec.OldData == nil {
						t.Errorf("DELETE images: %s", m.Value)
					}
					delete(image, *decodeRow(t, r, c.dec, rec.OldData)["id"])
				}
			}
			for _, k := range []string{"INSERT", "UPDATE", "DELETE"} {
				if kinds[k] == 0 {
					t.Errorf("no %s record; got %v", k, kinds)
				}
			}
			if !c.dec.micros {
				cutToMillis(r)
			}
			r.Check(t, image)
			checkCoordinates(t, r, recs, c.opts["offset"] == "file", start)
		})
	}
}

// cutToMillis cuts the source's temporal values to milliseconds, the unit of the default
// projection (formats.md 11.4), which cannot hold a DATETIME(6)'s microseconds. Cutting the
// digits is what the encoder's rounding does: down for instants, toward zero for TIME.
func cutToMillis(r *formattest.Result) {
	for _, c := range r.Columns {
		if c.DataType != "datetime" && c.DataType != "timestamp" && c.DataType != "time" || fsp(c.ColumnType) <= 3 {
			continue
		}
		for _, row := range r.Want {
			v := row[c.Name]
			if v == nil {
				continue
			}
			dot := strings.IndexByte(*v, '.')
			cut := (*v)[:dot+4] + strings.Repeat("0", len(*v)-dot-4)
			row[c.Name] = &cut
		}
	}
}

func show(v *string) string {
	if v == nil {
		return "NULL"
	}
	return strconv.Quote(*v)
}

func column(t *testing.T, r *formattest.Result, name string) formattest.Column {
	t.Helper()
	c, ok := r.Column(name)
	if !ok {
		t.Fatalf("record column %s is not a column of the source", name)
	}
	return c
}

// checkCoordinates checks the records' binlog fields against each other: copied rows first,
// at the snapshot's position; then per transaction one GTID whose records count rows events
// from SeqNo 1, with the transaction incomplete at that SeqNo in Offset (GTID mode), or
// positions that only grow within a file (file mode).
func checkCoordinates(t *testing.T, r *formattest.Result, recs []record, fileMode bool, start time.Time) {
	t.Helper()
	copied := len(r.CopiedIDs)
	if len(recs) < copied {
		t.Fatalf("%d records, fewer than the %d copied rows", len(recs), copied)
	}
	var serverID int64
	var lastFile string
	var lastPos int64
	lastGTID, lastSeq := "", int64(0)
	seenGTID := map[string]bool{}
	for i, rec := range recs {
		snapshot := i < copied
		if snapshot {
			if rec.Type != "INSERT" {
				t.Errorf("copied row %d is a %s record", i, rec.Type)
			}
			// Copied rows have no binlog event: their time is when they were read.
			if rec.Timestamp < start.UnixMilli()-1000 || rec.Timestamp > time.Now().UnixMilli() {
				t.Errorf("copied row %d: Timestamp %d outside the run", i, rec.Timestamp)
			}
		} else {
			if rec.ServerId <= 0 || (serverID != 0 && rec.ServerId != serverID) {
				t.Errorf("record %d: ServerId %d (before: %d)", i, rec.ServerId, serverID)
			}
			serverID = rec.ServerId
			// Binlog time is in whole seconds.
			if rec.Timestamp%1000 != 0 || rec.Timestamp < start.Add(-time.Second).UnixMilli() || rec.Timestamp > time.Now().UnixMilli() {
				t.Errorf("record %d: Timestamp %d", i, rec.Timestamp)
			}
		}
		if fileMode {
			if rec.BinLogFilename == nil || rec.BinLogPosition == nil || rec.GTID != nil || rec.SeqNo != nil {
				t.Fatalf("record %d: file mode fields %+v", i, rec)
			}
			file, pos := *rec.BinLogFilename, *rec.BinLogPosition
			if rec.Offset != fmt.Sprintf("%s:%d", file, pos) {
				t.Errorf("record %d: Offset %q, want %s:%d", i, rec.Offset, file, pos)
			}
			switch {
			case file == "" || pos <= 0:
				t.Errorf("record %d: position %s:%d", i, file, pos)
			case file < lastFile:
				t.Errorf("record %d: file %s after %s", i, file, lastFile)
			case file == lastFile && pos < lastPos:
				t.Errorf("record %d: position %d after %d in %s", i, pos, lastPos, file)
			case file == lastFile && pos == lastPos && !snapshot && recs[i-1].Type != rec.Type:
				// Only the rows of one rows event share a position, and they share the Type.
				t.Errorf("record %d: %s at the position of a %s", i, rec.Type, recs[i-1].Type)
			}
			lastFile, lastPos = file, pos
			continue
		}
		if rec.BinLogFilename != nil || rec.BinLogPosition != nil {
			t.Errorf("record %d: file fields in GTID mode", i)
		}
		var off gtidOffset
		if err := json.Unmarshal([]byte(rec.Offset), &off); err != nil {
			t.Fatalf("record %d: Offset %q: %v", i, rec.Offset, err)
		}
		if snapshot {
			if rec.GTID != nil || rec.SeqNo != nil || len(off.IncompleteTransactions) != 0 || off.GtidSet == "" {
				t.Errorf("copied row %d: GTID %v SeqNo %v Offset %s", i, rec.GTID, rec.SeqNo, rec.Offset)
			}
			continue
		}
		if rec.GTID == nil || rec.SeqNo == nil {
			t.Fatalf("record %d: no GTID or SeqNo: %+v", i, rec)
		}
		gtid, seq := *rec.GTID, *rec.SeqNo
		if len(off.IncompleteTransactions) != 1 || off.IncompleteTransactions[gtid] != seq {
			t.Errorf("record %d: Offset %s does not hold %s at %d", i, rec.Offset, gtid, seq)
		}
		if gtid != lastGTID {
			// A new transaction: its first rows event is 1, and the GTID is new.
			if seq != 1 || seenGTID[gtid] {
				t.Errorf("record %d: transaction %s starts at SeqNo %d (seen before: %v)", i, gtid, seq, seenGTID[gtid])
			}
			seenGTID[gtid] = true
		} else if seq < lastSeq || seq > lastSeq+1 {
			t.Errorf("record %d: SeqNo %d after %d in %s", i, seq, lastSeq, gtid)
		}
		lastGTID, lastSeq = gtid, seq
		// The set is the one executed before the transaction.
		want, err := executedBefore(gtid)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !strings.Contains(","+off.GtidSet+",", ","+want+",") {
			t.Errorf("record %d: gtidSet %q lacks %s, the position before %s", i, off.GtidSet, want, gtid)
		}
	}
	if !fileMode && len(seenGTID) == 0 {
		t.Error("no binlog transaction")
	}
}

// executedBefore is the test server's part of the GTID set executed before a transaction of
// its own: on MariaDB the domain one sequence number back (domain-server-sequence), on MySQL
// the server's one interval up to the number before (uuid:number; the server's transactions
// are numbered from 1 without gaps).
func executedBefore(gtid string) (string, error) {
	if formattest.Flavor() == testdb.MySQL {
		var n int64
		id, num, ok := strings.Cut(gtid, ":")
		if _, err := fmt.Sscanf(num, "%d", &n); !ok || err != nil || n < 3 {
			return "", fmt.Errorf("GTID %q is not uuid:number after the first two", gtid)
		}
		return fmt.Sprintf("%s:1-%d", id, n-1), nil
	}
	var domain, server, n int64
	if _, err := fmt.Sscanf(gtid, "%d-%d-%d", &domain, &server, &n); err != nil {
		return "", fmt.Errorf("GTID %q: %w", gtid, err)
	}
	return fmt.Sprintf("%d-%d-%d", domain, server, n-1), nil
}

// decodeRow turns a record image back into MariaDB text values, by the source column types.
func decodeRow(t *testing.T, r *formattest.Result, dec decoding, img map[string]json.RawMessage) formattest.Row {
	t.Helper()
	row := formattest.Row{}
	for name, raw := range img {
		c := column(t, r, name)
		if string(raw) == "null" {
			row[name] = nil
			continue
		}
		s, err := decodeValue(c, dec, raw)
		if err != nil {
			t.Fatalf("column %s (%s): %s: %v", name, c.ColumnType, raw, err)
		}
		row[name] = &s
	}
	return row
}

func decodeValue(c formattest.Column, dec decoding, raw json.RawMessage) (string, error) {
	var num json.Number
	var str string
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case json.Number:
		num = x
	case string:
		str = x
	default:
		return "", fmt.Errorf("neither a number nor a string")
	}
	ct := c.ColumnType
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		n, ok := new(big.Int).SetString(num.String(), 10)
		if !ok {
			return "", fmt.Errorf("not an integer")
		}
		width := map[string]uint{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[c.DataType]
		lo, hi := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), width-1)), new(big.Int).Lsh(big.NewInt(1), width-1)
		unsigned := strings.Contains(ct, "unsigned")
		if unsigned && dec.widen {
			lo, hi = big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), width)
		}
		// Values are in the range of the Java type the origin reads: signed of the column's
		// width unless widened.
		if n.Cmp(lo) < 0 || n.Cmp(hi) >= 0 {
			return "", fmt.Errorf("%s is outside [%s, %s)", n, lo, hi)
		}
		if unsigned && n.Sign() < 0 {
			// The origin's signed reading of an unsigned column: add 2^width back.
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), width))
		}
		return n.String(), nil
	case "float", "double", "decimal":
		return num.String(), nil
	case "year":
		n, err := num.Int64()
		return fmt.Sprintf("%04d", n), err
	case "date", "datetime", "timestamp":
		n, err := num.Int64()
		if err != nil {
			return "", err
		}
		tm := time.UnixMilli(n)
		if dec.micros {
			tm = time.UnixMicro(n)
		}
		if c.DataType == "date" {
			return tm.UTC().Format("2006-01-02"), nil
		}
		layout := "2006-01-02 15:04:05"
		if fsp := fsp(ct); fsp > 0 {
			layout += "." + strings.Repeat("0", fsp)
		}
		return tm.UTC().Format(layout), nil
	case "time":
		n, err := num.Int64()
		if err != nil {
			return "", err
		}
		us := n * 1000
		if dec.micros {
			us = n
		}
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		}
		s := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/3600e6, us/60e6%60, us/1e6%60)
		if fsp := fsp(ct); fsp > 0 {
			s += fmt.Sprintf(".%06d", us%1e6)[:fsp+1]
		}
		return s, nil
	case "binary", "varbinary", "geometry":
		// STRING of the bytes as ISO-8859-1 text.
		b := make([]byte, 0, len(str))
		for _, r := range str {
			if r > 0xff {
				return "", fmt.Errorf("%q is not ISO-8859-1 text", str)
			}
			b = append(b, byte(r))
		}
		return string(b), nil
	case "tinyblob", "blob", "mediumblob", "longblob":
		b, err := base64.StdEncoding.DecodeString(str)
		return string(b), err
	case "bit":
		n, ok := new(big.Int).SetString(str, 10)
		if !ok {
			return "", fmt.Errorf("bit value %q", str)
		}
		width, _ := strconv.Atoi(ct[len("bit(") : len(ct)-1])
		return string(n.FillBytes(make([]byte, (width+7)/8))), nil
	case "enum":
		idx, err := num.Int64()
		if err != nil || idx < 0 {
			return "", fmt.Errorf("enum index %s", num)
		}
		if idx == 0 {
			return "", nil
		}
		return formattest.Members(ct)[idx-1], nil
	case "set":
		// SET is a LONG: signed unless widened.
		var mask uint64
		if dec.widen {
			u, err := strconv.ParseUint(num.String(), 10, 64)
			if err != nil {
				return "", err
			}
			mask = u
		} else {
			n, err := strconv.ParseInt(num.String(), 10, 64)
			if err != nil {
				return "", err
			}
			mask = uint64(n)
		}
		var parts []string
		for i, l := range formattest.Members(ct) {
			if mask&(1<<i) != 0 {
				parts = append(parts, l)
			}
		}
		return strings.Join(parts, ","), nil
	}
	if num != "" {
		return "", fmt.Errorf("a number for a %s column", c.DataType)
	}
	return str, nil
}

// fsp is the fractional-second precision of "datetime(6)", "time(3)", ...
func fsp(columnType string) int {
	open := strings.IndexByte(columnType, '(')
	if open < 0 {
		return 0
	}
	n, _ := strconv.Atoi(columnType[open+1 : len(columnType)-1])
	return n
}
