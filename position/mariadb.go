package position

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// parseMariaDB builds the set itself instead of calling
// mysql.ParseMariadbGTIDSet: that keeps the last GTID listed for a domain
// (logging a warning when its sequence number goes down) where we want the
// highest, and it reads an empty list element as the GTID 0-0-0.
func parseMariaDB(body string) (*mysql.MariadbGTIDSet, error) {
	set := &mysql.MariadbGTIDSet{Sets: make(map[uint32]*mysql.MariadbGTID)}
	if body == "" {
		return set, nil
	}
	i := 0
	for part := range strings.SplitSeq(body, ",") {
		i++
		if part == "" {
			return nil, fmt.Errorf("GTID number %d in the list is empty", i)
		}
		g, err := parseMariaDBGTID(part)
		if err != nil {
			return nil, err
		}
		keepHighest(set.Sets, g)
	}
	return set, nil
}

func parseMariaDBGTID(s string) (g *mysql.MariadbGTID, err error) {
	if s == "" {
		return nil, fmt.Errorf("empty GTID; want <domain>-<server>-<sequence>")
	}
	defer guard(&err)
	g, err = mysql.ParseMariadbGTID(s)
	if err != nil {
		return nil, fmt.Errorf("GTID %s: %s", quote(s), strings.TrimSpace(err.Error()))
	}
	return g, nil
}

// keepHighest stores g unless its domain already has a GTID with at least
// the same sequence number; on a tie the GTID seen first stays.
func keepHighest(sets map[uint32]*mysql.MariadbGTID, g *mysql.MariadbGTID) {
	if cur := sets[g.DomainID]; cur == nil || g.SequenceNumber > cur.SequenceNumber {
		sets[g.DomainID] = g
	}
}

func (p *Position) updateMariaDB(gtid string) error {
	g, err := parseMariaDBGTID(gtid)
	if err != nil {
		return err
	}
	set, ok := p.GTIDSet.(*mysql.MariadbGTIDSet)
	switch {
	case p.GTIDSet == nil || (ok && set == nil):
		set = &mysql.MariadbGTIDSet{Sets: make(map[uint32]*mysql.MariadbGTID, 1)}
		p.GTIDSet = set
	case !ok:
		return fmt.Errorf("position holds a %T, not a MariaDB GTID set", p.GTIDSet)
	}
	if set.Sets == nil {
		set.Sets = make(map[uint32]*mysql.MariadbGTID, 1)
	}
	keepHighest(set.Sets, g)
	return nil
}

// AddMariaDB adds one MariaDB transaction, as a binlog GTID event gives it, to p: what
// Update does with the GTID's text, without the text. Once p holds the GTID's domain it
// allocates nothing: the domain's GTID is overwritten in place (a set's GTIDs are its own;
// Clone copies them), which copies of p taken before see, as they see Update's changes.
func (p *Position) AddMariaDB(g mysql.MariadbGTID) error {
	switch p.flavor() {
	case "", MariaDB:
	default:
		return badf("cannot add MariaDB GTID %s to a %s position", quote(mariaDBGTIDString(&g)), quote(string(p.flavor())))
	}
	set, ok := p.GTIDSet.(*mysql.MariadbGTIDSet)
	switch {
	case p.GTIDSet == nil || (ok && set == nil):
		set = &mysql.MariadbGTIDSet{Sets: make(map[uint32]*mysql.MariadbGTID, 1)}
		p.GTIDSet = set
	case !ok:
		return badf("MariaDB GTID %s: position holds a %T, not a MariaDB GTID set", quote(mariaDBGTIDString(&g)), p.GTIDSet)
	}
	if set.Sets == nil {
		set.Sets = make(map[uint32]*mysql.MariadbGTID, 1)
	}
	switch cur := set.Sets[g.DomainID]; {
	case cur == nil:
		n := g
		set.Sets[g.DomainID] = &n
	case g.SequenceNumber > cur.SequenceNumber:
		*cur = g
	}
	if p.Flavor == "" {
		p.Flavor = MariaDB
	}
	return nil
}

// sortedDomains lists the domains with a GTID in ascending order. buf lets
// callers keep the common few-domain case off the heap.
func sortedDomains(sets map[uint32]*mysql.MariadbGTID, buf []uint32) []uint32 {
	keys := buf[:0]
	for d, g := range sets {
		if g != nil {
			keys = append(keys, d)
		}
	}
	slices.Sort(keys)
	return keys
}

// formatMariaDB writes its own text instead of using MariadbGTIDSet.String,
// which sorts domains as strings ("10-..." before "2-...") and prints the
// GTID 0-0-0 as an empty string.
func formatMariaDB(f Flavor, set *mysql.MariadbGTIDSet) string {
	if set == nil {
		return string(f) + "/"
	}
	var sb strings.Builder
	var kbuf [8]uint32
	keys := sortedDomains(set.Sets, kbuf[:])
	sb.Grow(len(f) + 1 + len(keys)*(10+1+10+1+20+1))
	sb.WriteString(string(f))
	sb.WriteByte('/')
	var num [20]byte
	for i, d := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		writeMariaDBGTID(&sb, set.Sets[d], num[:])
	}
	return sb.String()
}

func writeMariaDBGTID(sb *strings.Builder, g *mysql.MariadbGTID, num []byte) {
	sb.Write(strconv.AppendUint(num[:0], uint64(g.DomainID), 10))
	sb.WriteByte('-')
	sb.Write(strconv.AppendUint(num[:0], uint64(g.ServerID), 10))
	sb.WriteByte('-')
	sb.Write(strconv.AppendUint(num[:0], g.SequenceNumber, 10))
}

func mariaDBGTIDString(g *mysql.MariadbGTID) string {
	var sb strings.Builder
	var num [20]byte
	writeMariaDBGTID(&sb, g, num[:])
	return sb.String()
}

func mariaDBAhead(p, server *mysql.MariadbGTIDSet) string {
	var out []string
	var kbuf [8]uint32
	for _, d := range sortedDomains(p.Sets, kbuf[:]) {
		pg := p.Sets[d]
		sg := server.Sets[d]
		switch {
		case sg == nil:
			out = append(out, fmt.Sprintf("domain %d at sequence %d, server has no GTID in that domain", d, pg.SequenceNumber))
		case pg.SequenceNumber > sg.SequenceNumber:
			out = append(out, fmt.Sprintf("domain %d at sequence %d, server at %d", d, pg.SequenceNumber, sg.SequenceNumber))
		}
	}
	return strings.Join(out, "; ")
}

func mariaDBMissing(p, purged *mysql.MariadbGTIDSet) string {
	var out []string
	var kbuf [8]uint32
	for _, d := range sortedDomains(purged.Sets, kbuf[:]) {
		gg := purged.Sets[d]
		pg := p.Sets[d]
		switch {
		case pg == nil && gg.SequenceNumber > 0:
			out = append(out, fmt.Sprintf("domain %d: position has no GTID in it, oldest binlog starts at %s", d, mariaDBGTIDString(gg)))
		case pg != nil && pg.SequenceNumber < gg.SequenceNumber:
			out = append(out, fmt.Sprintf("domain %d: position has sequence %d, oldest binlog starts at %s", d, pg.SequenceNumber, mariaDBGTIDString(gg)))
		}
	}
	return strings.Join(out, "; ")
}
