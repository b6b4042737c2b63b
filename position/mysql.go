package position

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

const uuidLen = 36

func goMySQLParse(s string) (set *mysql.MysqlGTIDSet, err error) {
	defer guard(&err)
	gs, err := mysql.ParseMysqlGTIDSet(s)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	return gs.(*mysql.MysqlGTIDSet), nil
}

// checkMySQLElement rejects what go-mysql lets through: uuid.Parse also
// takes 32 bare hex digits or 38 characters with any first and last byte,
// which no server prints.
func checkMySQLElement(part string) error {
	if part == "" {
		return fmt.Errorf("empty element; want <uuid>:<interval>[:<interval>...]")
	}
	u, _, ok := strings.Cut(part, ":")
	if !ok {
		return fmt.Errorf("element %s: want <uuid>:<interval>[:<interval>...]", quote(part))
	}
	if len(u) != uuidLen {
		return fmt.Errorf("element %s: uuid %s is not of the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", quote(part), quote(u))
	}
	return nil
}

func parseMySQL(body string) (*mysql.MysqlGTIDSet, error) {
	if body == "" {
		s := mysql.NewMysqlGTIDSet()
		return &s, nil
	}
	for part := range strings.SplitSeq(body, ",") {
		if err := checkMySQLElement(part); err != nil {
			return nil, err
		}
	}
	set, err := goMySQLParse(body)
	if err != nil {
		// go-mysql does not say which element it choked on.
		for part := range strings.SplitSeq(body, ",") {
			if _, perr := goMySQLParse(part); perr != nil {
				return nil, fmt.Errorf("element %s: %s", quote(part), perr)
			}
		}
		return nil, err
	}
	// go-mysql accepts transaction number 0; MySQL numbers from 1.
	for u, tags := range *set {
		for _, iv := range tags {
			if len(iv) > 0 && iv[0].Start < 1 {
				return nil, fmt.Errorf("uuid %s: transaction number %d is not valid; numbers start at 1", u, iv[0].Start)
			}
		}
	}
	return set, nil
}

func (p *Position) updateMySQL(gtid string) error {
	u, rest, ok := strings.Cut(gtid, ":")
	if !ok || len(u) != uuidLen {
		return fmt.Errorf("want <uuid>:<number> or <uuid>:<tag>:<number>")
	}
	var id uuid.UUID
	tag := mysql.Tag{}
	var gno int64
	if strings.Contains(rest, ":") {
		// Tagged GTIDs are rare; let go-mysql deal with the tag syntax.
		one, err := goMySQLParse(gtid)
		if err != nil {
			return err
		}
		if !single(*one) {
			return fmt.Errorf("want a single transaction, not a set")
		}
		for k, tags := range *one {
			id = k
			for t, iv := range tags {
				tag, gno = t, iv[0].Start
			}
		}
	} else {
		var err error
		if id, err = uuid.Parse(u); err != nil {
			return fmt.Errorf("uuid %s: %v", quote(u), err)
		}
		// ParseUint, unlike ParseInt, refuses a sign.
		n, err := strconv.ParseUint(rest, 10, 63)
		if err != nil {
			return fmt.Errorf("transaction number %s is not a number in range", quote(rest))
		}
		gno = int64(n)
	}
	return p.addMySQL(id, tag, gno)
}

// AddMySQL adds one MySQL transaction, as a binlog GTID event gives it (source uuid, tag,
// transaction number), to p: what Update does with the GTID's text, without the text. It
// allocates nothing when the number follows the uuid's last one.
func (p *Position) AddMySQL(id uuid.UUID, tag mysql.Tag, gno int64) error {
	switch p.flavor() {
	case "", MySQL56:
	default:
		return badf("cannot add MySQL GTID %s:%d to a %s position", id, gno, quote(string(p.flavor())))
	}
	if err := p.addMySQL(id, tag, gno); err != nil {
		return badf("MySQL56 GTID %s:%d: %s", id, gno, err)
	}
	if p.Flavor == "" {
		p.Flavor = MySQL56
	}
	return nil
}

func (p *Position) addMySQL(id uuid.UUID, tag mysql.Tag, gno int64) error {
	// The set stores [start, stop) so the largest int64 cannot be stored.
	if gno < 1 || gno == math.MaxInt64 {
		return fmt.Errorf("transaction number %d out of range", gno)
	}

	set, ok := p.GTIDSet.(*mysql.MysqlGTIDSet)
	switch {
	case p.GTIDSet == nil || (ok && set == nil):
		s := mysql.NewMysqlGTIDSet()
		set = &s
		p.GTIDSet = set
	case !ok:
		return fmt.Errorf("position holds a %T, not a MySQL GTID set", p.GTIDSet)
	case *set == nil:
		*set = mysql.NewMysqlGTIDSet()
	}
	addGNO(*set, id, tag, gno)
	return nil
}

func single(s mysql.MysqlGTIDSet) bool {
	if len(s) != 1 {
		return false
	}
	for _, tags := range s {
		if len(tags) != 1 {
			return false
		}
		for _, iv := range tags {
			if len(iv) != 1 || iv[0].Stop != iv[0].Start+1 {
				return false
			}
		}
	}
	return true
}

// addGNO handles the usual case, a number just past the last interval,
// without the sort and copy that MysqlGTIDSet.AddGTID does on every call.
func addGNO(s mysql.MysqlGTIDSet, id uuid.UUID, tag mysql.Tag, gno int64) {
	tags := s[id]
	if tags == nil {
		s[id] = map[mysql.Tag]mysql.IntervalSlice{tag: {{Start: gno, Stop: gno + 1}}}
		return
	}
	iv := tags[tag]
	n := len(iv)
	switch {
	case n == 0 || iv[n-1].Stop < gno:
		tags[tag] = append(iv, mysql.Interval{Start: gno, Stop: gno + 1})
	case iv[n-1].Stop == gno:
		iv[n-1].Stop = gno + 1
	case iv[n-1].Start <= gno:
	default:
		s.AddGTIDWithTag(id, tag, gno)
	}
}

// subtract returns a minus b. go-mysql has no set difference.
func subtract(a, b mysql.MysqlGTIDSet) mysql.MysqlGTIDSet {
	out := mysql.NewMysqlGTIDSet()
	for id, tags := range a {
		for tag, iv := range tags {
			rest := subtractIntervals(iv, b[id][tag])
			if len(rest) == 0 {
				continue
			}
			if out[id] == nil {
				out[id] = make(map[mysql.Tag]mysql.IntervalSlice, 1)
			}
			out[id][tag] = rest
		}
	}
	return out
}

// subtractIntervals expects both slices sorted and disjoint, as go-mysql's
// Normalize leaves them.
func subtractIntervals(a, b mysql.IntervalSlice) mysql.IntervalSlice {
	var out mysql.IntervalSlice
	j := 0
	for _, iv := range a {
		start := iv.Start
		for j < len(b) && b[j].Stop <= start {
			j++
		}
		for k := j; k < len(b) && b[k].Start < iv.Stop && start < iv.Stop; k++ {
			if b[k].Start > start {
				out = append(out, mysql.Interval{Start: start, Stop: b[k].Start})
			}
			start = max(start, b[k].Stop)
		}
		if start < iv.Stop {
			out = append(out, mysql.Interval{Start: start, Stop: iv.Stop})
		}
	}
	return out
}

// formatMySQL writes the same text as MysqlGTIDSet.String, behind the
// prefix, in a single allocation: it runs once per streamed transaction.
func formatMySQL(f Flavor, s mysql.MysqlGTIDSet) string {
	var sb strings.Builder
	sb.Grow(len(f) + 1 + mySQLLen(s))
	sb.WriteString(string(f))
	sb.WriteByte('/')
	writeMySQL(&sb, s)
	return sb.String()
}

func formatMySQLBody(s mysql.MysqlGTIDSet) string {
	var sb strings.Builder
	sb.Grow(mySQLLen(s))
	writeMySQL(&sb, s)
	return sb.String()
}

func mySQLLen(s mysql.MysqlGTIDSet) int {
	n := 0
	for _, tags := range s {
		n += uuidLen + 1
		for tag, iv := range tags {
			if t := tag.String(); t != "" {
				n += len(t) + 1
			}
			for _, i := range iv {
				n += 1 + intLen(i.Start)
				if i.Stop != i.Start+1 {
					n += 1 + intLen(i.Stop-1)
				}
			}
		}
	}
	return n
}

func intLen(v int64) int {
	n := 1
	if v < 0 {
		n++
		if v == math.MinInt64 {
			return 20
		}
		v = -v
	}
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

func writeMySQL(sb *strings.Builder, s mysql.MysqlGTIDSet) {
	var ubuf [4]uuid.UUID
	ids := ubuf[:0]
	for id := range s {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	var text [uuidLen]byte
	var num [20]byte
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.Write(appendUUID(text[:0], id))
		tags := s[id]
		if len(tags) == 1 {
			for tag, iv := range tags {
				writeTagged(sb, tag, iv, num[:])
			}
			continue
		}
		keys := make([]mysql.Tag, 0, len(tags))
		for tag := range tags {
			keys = append(keys, tag)
		}
		slices.SortFunc(keys, func(a, b mysql.Tag) int { return strings.Compare(a.String(), b.String()) })
		for _, tag := range keys {
			writeTagged(sb, tag, tags[tag], num[:])
		}
	}
}

func writeTagged(sb *strings.Builder, tag mysql.Tag, iv mysql.IntervalSlice, num []byte) {
	if t := tag.String(); t != "" {
		sb.WriteByte(':')
		sb.WriteString(t)
	}
	for _, i := range iv {
		sb.WriteByte(':')
		sb.Write(strconv.AppendInt(num[:0], i.Start, 10))
		if i.Stop != i.Start+1 {
			sb.WriteByte('-')
			sb.Write(strconv.AppendInt(num[:0], i.Stop-1, 10))
		}
	}
}

// appendUUID avoids uuid.UUID.String, which allocates.
func appendUUID(b []byte, id uuid.UUID) []byte {
	var buf [uuidLen]byte
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], id[10:])
	return append(b, buf[:]...)
}
