// Package position handles flavor-prefixed GTID positions as Vitess writes
// them: parse, format, compare.
//
// A position is written as "<flavor>/<gtid set>", for example
// "MariaDB/0-1-100,1-1-7" or
// "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9". The set itself is a
// go-mysql mysql.GTIDSet, so it can be handed to the binlog syncer directly.
// A FilePos position ("FilePos/mysql-bin.000003:1234") names a place in the
// binlog files instead; see FilePos.
//
// MariaDB positions keep one GTID per replication domain: the one with the
// highest sequence number. Input listing several server ids for one domain
// (as @@gtid_binlog_state does) is accepted and reduced to that GTID. This is
// what Vitess does and what @@slave_connect_state expects; it assumes
// sequence numbers grow within a domain (gtid_strict_mode), which is also
// what makes comparing positions by sequence number meaningful.
package position

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Flavor names the GTID dialect of a position, spelled as in the position
// prefix.
type Flavor string

const (
	// MariaDB positions hold domain-server-sequence GTIDs.
	MariaDB Flavor = "MariaDB"
	// MySQL56 positions hold uuid:interval GTID sets.
	MySQL56 Flavor = "MySQL56"
)

// GoMySQL returns the flavor name go-mysql uses ("mariadb" or "mysql"), or ""
// for FilePos, which is no server's, and an unknown flavor.
func (f Flavor) GoMySQL() string {
	switch f {
	case MariaDB:
		return mysql.MariaDBFlavor
	case MySQL56:
		return mysql.MySQLFlavor
	case FilePos:
	}
	return ""
}

// FlavorFromGoMySQL maps a go-mysql flavor name to a Flavor.
func FlavorFromGoMySQL(s string) (Flavor, error) {
	switch {
	case strings.EqualFold(s, mysql.MariaDBFlavor):
		return MariaDB, nil
	case strings.EqualFold(s, mysql.MySQLFlavor):
		return MySQL56, nil
	}
	return "", fmt.Errorf("unknown go-mysql flavor %q; want %q or %q", s, mysql.MariaDBFlavor, mysql.MySQLFlavor)
}

// ErrBadPosition is wrapped by every error that reports a malformed position
// or GTID.
var ErrBadPosition = errors.New("bad replication position")

type parseError struct{ msg string }

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() error { return ErrBadPosition }

func badf(format string, args ...any) error {
	return &parseError{msg: fmt.Sprintf(format, args...)}
}

// quote keeps error messages readable when the input is a huge
// @@gtid_executed value.
func quote(s string) string {
	const limit = 120
	if len(s) > limit {
		return fmt.Sprintf("%q...", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}

const wantFormat = "want MariaDB/<domain>-<server>-<seq>[,...], MySQL56/<uuid>:<interval>[,...] or FilePos/<binlog file>:<offset>"

// Position is a flavor plus a GTID set. The zero value is the empty position
// of no particular flavor; operations treat it as the empty set of whatever
// flavor the other operand has. A nil GTIDSet is likewise read as empty.
//
// Copies of a Position share the GTID set: see Update and Clone.
type Position struct {
	Flavor  Flavor
	GTIDSet mysql.GTIDSet
}

// Parse parses a prefixed position such as "MariaDB/0-1-100,1-1-7" or
// "MySQL56/<uuid>:1-5:7-9,<uuid2>:1-3". An empty body ("MariaDB/") is the
// empty set. Whitespace is ignored. Every error wraps ErrBadPosition.
func Parse(s string) (Position, error) {
	t := strings.TrimSpace(s)
	f, body, ok := Cut(t)
	switch {
	case f == FilePos:
		fp, err := parseFilePos(body)
		if err != nil {
			return Position{}, badf("position %s: %s", quote(s), err)
		}
		return Position{Flavor: FilePos, GTIDSet: fp}, nil
	case !ok:
		if t == "" {
			return Position{}, badf("empty position; %s", wantFormat)
		}
		if prefix, _, ok := strings.Cut(t, "/"); ok {
			return Position{}, badf("position %s: unknown flavor %s; %s", quote(s), quote(prefix), wantFormat)
		}
		return Position{}, badf("position %s: missing flavor prefix; %s", quote(s), wantFormat)
	}
	set, err := parseBody(f, body)
	if err != nil {
		return Position{}, badf("position %s: %s", quote(s), err)
	}
	return Position{Flavor: f, GTIDSet: set}, nil
}

// Cut splits a position's text at its flavor prefix: "MariaDB/0-1-5" is MariaDB and
// "0-1-5". ok is false when s does not start with a known flavor and "/" (MariaDB/,
// MySQL56/, FilePos/); the body is not checked.
func Cut(s string) (f Flavor, body string, ok bool) {
	prefix, body, ok := strings.Cut(s, "/")
	switch f := Flavor(prefix); f {
	case MariaDB, MySQL56, FilePos:
		if ok {
			return f, body, true
		}
	}
	return "", s, false
}

// Bare is a position's text without its flavor prefix: the GTID set (or binlog file and
// offset) as the server writes it, which formats such as canal, DRS and StreamSets carry.
// Text without a known prefix is returned as it is.
func Bare(s string) string {
	_, body, _ := Cut(s)
	return body
}

// ParseBody parses an unprefixed GTID set of the given flavor, as the server
// reports it in @@gtid_binlog_pos or @@gtid_executed. All whitespace is
// dropped first because MySQL breaks long @@gtid_executed values with
// newlines. Every error wraps ErrBadPosition.
func ParseBody(f Flavor, body string) (Position, error) {
	if f != MariaDB && f != MySQL56 {
		return Position{}, badf("unknown flavor %s; want %q or %q", quote(string(f)), MariaDB, MySQL56)
	}
	set, err := parseBody(f, body)
	if err != nil {
		return Position{}, badf("%s GTID set %s: %s", f, quote(body), err)
	}
	return Position{Flavor: f, GTIDSet: set}, nil
}

func parseBody(f Flavor, body string) (mysql.GTIDSet, error) {
	body = stripSpace(body)
	if f == MariaDB {
		return parseMariaDB(body)
	}
	return parseMySQL(body)
}

func stripSpace(s string) string {
	if !strings.ContainsAny(s, " \t\n\r\v\f") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
		default:
			b = append(b, s[i])
		}
	}
	return string(b)
}

// String returns the canonical prefixed form: MariaDB GTIDs sorted by
// domain, MySQL uuids sorted with merged intervals. The empty set gives
// "MariaDB/" or "MySQL56/"; the zero Position gives "".
func (p Position) String() string {
	switch set := p.GTIDSet.(type) {
	case nil:
		if p.Flavor == "" {
			return ""
		}
		return string(p.Flavor) + "/"
	case *mysql.MariadbGTIDSet:
		return formatMariaDB(p.flavor(), set)
	case *mysql.MysqlGTIDSet:
		if set == nil {
			return string(p.flavor()) + "/"
		}
		return formatMySQL(p.flavor(), *set)
	default:
		return string(p.flavor()) + "/" + set.String()
	}
}

// IsZero reports whether p carries no GTID set at all, as Vitess does. An
// explicitly empty set, such as Parse("MariaDB/") returns, is not zero: it
// means "nothing executed yet" rather than "no position given".
func (p Position) IsZero() bool {
	return p.GTIDSet == nil
}

// Clone returns a copy of p that does not share its GTID set.
func (p Position) Clone() Position {
	if p.GTIDSet == nil {
		return p
	}
	return Position{Flavor: p.Flavor, GTIDSet: p.GTIDSet.Clone()}
}

// Contains reports whether every transaction in o is in p. Positions of
// different flavors contain nothing of each other; the zero Position is
// contained in every position. For MariaDB the comparison is per domain by
// sequence number only, server ids are ignored: p contains o when p has each
// of o's domains at a sequence number >= o's.
func (p Position) Contains(o Position) bool {
	switch f, ok := commonFlavor(p, o); {
	case !ok:
		return false
	case f == MariaDB:
		ps, ok1 := p.mariaDB()
		os, ok2 := o.mariaDB()
		return ok1 && ok2 && ps.Contain(os)
	case f == MySQL56:
		ps, ok1 := p.mySQL()
		os, ok2 := o.mySQL()
		return ok1 && ok2 && ps.Contain(os)
	default:
		return isEmpty(o) || (p.GTIDSet != nil && o.GTIDSet != nil && p.GTIDSet.Contain(o.GTIDSet))
	}
}

// Equal reports whether p and o hold the same GTIDs, for MariaDB including
// server ids. As in Contains, the zero Position equals any empty position.
func (p Position) Equal(o Position) bool {
	switch f, ok := commonFlavor(p, o); {
	case !ok:
		return false
	case f == MariaDB:
		ps, ok1 := p.mariaDB()
		os, ok2 := o.mariaDB()
		return ok1 && ok2 && ps.Equal(os)
	case f == MySQL56:
		ps, ok1 := p.mySQL()
		os, ok2 := o.mySQL()
		return ok1 && ok2 && ps.Equal(os)
	default:
		return (isEmpty(p) && isEmpty(o)) || (p.GTIDSet != nil && o.GTIDSet != nil && p.GTIDSet.Equal(o.GTIDSet))
	}
}

// Update adds one transaction's GTID, written as in binlog events
// ("0-1-101" for MariaDB, "<uuid>:45" or "<uuid>:<tag>:45" for MySQL), to p.
// A FilePos position moves to the place given as "<file>:<offset>".
//
// The GTID set is changed in place, so copies of p taken before the call see
// the new GTID too; Clone first to keep a snapshot. Only the new GTID is
// parsed. A zero Position takes its flavor from the GTID's shape. For MariaDB
// a GTID whose sequence number is not above the domain's current one leaves
// p unchanged, keeping the highest GTID per domain as String does. Errors
// wrap ErrBadPosition and leave p unchanged.
func (p *Position) Update(eventGTID string) error {
	g := strings.TrimSpace(eventGTID)
	f := p.flavor()
	if f == "" {
		f = MariaDB
		if strings.Contains(g, ":") {
			f = MySQL56
		}
	}
	var err error
	switch f {
	case MariaDB:
		err = p.updateMariaDB(g)
	case MySQL56:
		err = p.updateMySQL(g)
	case FilePos:
		var fp *FilePosSet
		if fp, err = parseFilePos(g); err == nil {
			p.GTIDSet = fp
		}
	default:
		return badf("cannot add GTID %s to a position of unknown flavor %s", quote(eventGTID), quote(string(f)))
	}
	if err != nil {
		return badf("%s GTID %s: %s", f, quote(eventGTID), err)
	}
	if p.Flavor == "" {
		p.Flavor = f
	}
	return nil
}

// Normalized returns, for MariaDB, a copy of p with only the highest GTID
// per domain, keeping that GTID's server id: the form @@slave_connect_state
// wants. Positions built by this package are already in that form; this
// also repairs sets assembled by hand. A MySQL56 position is returned as is.
func (p Position) Normalized() Position {
	set, ok := p.GTIDSet.(*mysql.MariadbGTIDSet)
	if !ok || set == nil || p.flavor() != MariaDB {
		return p
	}
	out := &mysql.MariadbGTIDSet{Sets: make(map[uint32]*mysql.MariadbGTID, len(set.Sets))}
	for _, g := range set.Sets {
		if g == nil {
			continue
		}
		cur := out.Sets[g.DomainID]
		// The tie-break on server id only makes the result independent of
		// map iteration order.
		if cur == nil || g.SequenceNumber > cur.SequenceNumber ||
			(g.SequenceNumber == cur.SequenceNumber && g.ServerID > cur.ServerID) {
			out.Sets[g.DomainID] = g.Clone()
		}
	}
	return Position{Flavor: p.Flavor, GTIDSet: out}
}

// Ahead describes the parts of p that server does not contain, for example
// "domain 0 at sequence 120, server at 100" or
// "uuid 3e11fa47-71ca-11e1-9e33-c80aa9429562:101-120". It returns "" when
// server contains p.
func Ahead(p, server Position) string {
	if server.Contains(p) {
		return ""
	}
	f, ok := commonFlavor(p, server)
	if !ok {
		return flavorMismatch(p, server)
	}
	switch f {
	case MariaDB:
		ps, ok1 := p.mariaDB()
		ss, ok2 := server.mariaDB()
		if ok1 && ok2 {
			return mariaDBAhead(ps, ss)
		}
	case MySQL56:
		ps, ok1 := p.mySQL()
		ss, ok2 := server.mySQL()
		if ok1 && ok2 {
			diff := subtract(*ps, *ss)
			parts := strings.Split(formatMySQLBody(diff), ",")
			for i := range parts {
				parts[i] = "uuid " + parts[i]
			}
			return strings.Join(parts, "; ")
		}
	case FilePos:
		ps, ok1 := p.GTIDSet.(*FilePosSet)
		ss, ok2 := server.GTIDSet.(*FilePosSet)
		if ok1 && ok2 && ps != nil && ss != nil {
			return filePosAhead(ps, ss)
		}
	}
	return fmt.Sprintf("position %s is not comparable with server position %s", quote(p.String()), quote(server.String()))
}

// Missing describes the transactions in purged, the server's purged set or
// the state at the start of its oldest binlog, that p lacks: the part of the
// requested position the server can no longer stream. For MariaDB that is
// every domain where p's sequence number is below purged's, or where p has
// no GTID at all and purged's sequence number is above 0, for example
// "domain 0: position has sequence 5, oldest binlog starts at 0-1-40". For
// MySQL56 it is purged minus p as a GTID set string. It returns "" when
// nothing is missing.
func Missing(p, purged Position) string {
	if isEmpty(purged) {
		return ""
	}
	f, ok := commonFlavor(p, purged)
	if !ok {
		return flavorMismatch(p, purged)
	}
	switch f {
	case MariaDB:
		ps, ok1 := p.mariaDB()
		gs, ok2 := purged.mariaDB()
		if ok1 && ok2 {
			return mariaDBMissing(ps, gs)
		}
	case MySQL56:
		ps, ok1 := p.mySQL()
		gs, ok2 := purged.mySQL()
		if ok1 && ok2 {
			return formatMySQLBody(subtract(*gs, *ps))
		}
	case FilePos:
		ps, ok1 := p.GTIDSet.(*FilePosSet)
		gs, ok2 := purged.GTIDSet.(*FilePosSet)
		if ok1 && ok2 && ps != nil && gs != nil {
			return filePosMissing(ps, gs)
		}
	}
	return fmt.Sprintf("position %s is not comparable with purged position %s", quote(p.String()), quote(purged.String()))
}

func flavorMismatch(p, server Position) string {
	return fmt.Sprintf("position flavor %s does not match server flavor %s", p.flavor(), server.flavor())
}

// flavor falls back to the set's type so that a Position built with only a
// GTIDSet still compares correctly.
func (p Position) flavor() Flavor {
	if p.Flavor != "" {
		return p.Flavor
	}
	switch p.GTIDSet.(type) {
	case *mysql.MariadbGTIDSet:
		return MariaDB
	case *mysql.MysqlGTIDSet:
		return MySQL56
	case *FilePosSet:
		return FilePos
	}
	return ""
}

// commonFlavor returns the flavor two positions share, letting an empty
// flavorless position adopt the other's.
func commonFlavor(a, b Position) (Flavor, bool) {
	fa, fb := a.flavor(), b.flavor()
	switch {
	case fa == fb:
		return fa, true
	case fa == "" && isEmpty(a):
		return fb, true
	case fb == "" && isEmpty(b):
		return fa, true
	}
	return "", false
}

// isEmpty tolerates typed nil sets, on which go-mysql's IsEmpty panics.
func isEmpty(p Position) bool {
	switch s := p.GTIDSet.(type) {
	case nil:
		return true
	case *mysql.MariadbGTIDSet:
		return s == nil || len(s.Sets) == 0
	case *mysql.MysqlGTIDSet:
		return s == nil || len(*s) == 0
	case *FilePosSet:
		return s.IsEmpty()
	}
	return p.GTIDSet.IsEmpty()
}

// Read-only stand-ins for a nil GTIDSet; never handed out for mutation.
var (
	emptyMariaDB = &mysql.MariadbGTIDSet{Sets: map[uint32]*mysql.MariadbGTID{}}
	emptyMySQL   = &mysql.MysqlGTIDSet{}
)

func (p Position) mariaDB() (*mysql.MariadbGTIDSet, bool) {
	if p.GTIDSet == nil {
		return emptyMariaDB, true
	}
	s, ok := p.GTIDSet.(*mysql.MariadbGTIDSet)
	if ok && s == nil {
		return emptyMariaDB, true
	}
	return s, ok
}

func (p Position) mySQL() (*mysql.MysqlGTIDSet, bool) {
	if p.GTIDSet == nil {
		return emptyMySQL, true
	}
	s, ok := p.GTIDSet.(*mysql.MysqlGTIDSet)
	if ok && (s == nil || *s == nil) {
		return emptyMySQL, true
	}
	return s, ok
}

// guard turns a panic inside go-mysql into an error so that Parse never
// panics on hostile input.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("go-mysql failed on this input: %v", r)
	}
}
