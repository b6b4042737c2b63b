package streamsets

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/position"
)

// stripFlavor drops the "MariaDB/" or "MySQL56/" prefix of a position: the origin's GTID
// sets are the server's own text.
func stripFlavor(set string) string { return position.Bare(set) }

// setBefore is the executed GTID set before a transaction, given the set including it (a
// flavor-prefixed position) and the transaction's GTID.
//
// MySQL: the GTID's number is taken out of its uuid's intervals. MariaDB: a position holds one
// GTID per domain, so the transaction's domain goes back one sequence number with the same
// server id (or disappears at 0); this assumes the domain's previous transaction came from the
// same server, as it does without multi-source writes into one domain.
func setBefore(set, gtid string) (string, error) {
	flavor, body, ok := position.Cut(set)
	if !ok {
		if prefix, _, found := strings.Cut(set, "/"); found {
			return "", fmt.Errorf("GTID set %q: unknown flavor %q", set, prefix)
		}
		flavor = position.MariaDB
		if strings.Contains(gtid, ":") {
			flavor = position.MySQL56
		}
	}
	switch flavor {
	case position.MariaDB:
		return mariaDBBefore(body, gtid)
	case position.MySQL56:
		return mySQLBefore(body, gtid)
	case position.FilePos:
	}
	return "", fmt.Errorf("GTID set %q: unknown flavor %q", set, flavor)
}

func mariaDBBefore(body, gtid string) (string, error) {
	g, err := mysql.ParseMariadbGTID(gtid)
	if err != nil {
		return "", fmt.Errorf("GTID %q: %w", gtid, err)
	}
	if body == "" {
		return "", nil
	}
	parts := strings.Split(body, ",")
	out := parts[:0]
	for _, p := range parts {
		cur, err := mysql.ParseMariadbGTID(p)
		if err != nil {
			return "", fmt.Errorf("GTID set %q: %w", body, err)
		}
		if cur.DomainID == g.DomainID && cur.SequenceNumber == g.SequenceNumber {
			if g.SequenceNumber <= 1 {
				continue
			}
			p = fmt.Sprintf("%d-%d-%d", cur.DomainID, cur.ServerID, cur.SequenceNumber-1)
		}
		out = append(out, p)
	}
	return strings.Join(out, ","), nil
}

func mySQLBefore(body, gtid string) (string, error) {
	parsed, err := mysql.ParseMysqlGTIDSet(body)
	if err != nil {
		return "", fmt.Errorf("GTID set %q: %w", body, err)
	}
	one, err := mysql.ParseMysqlGTIDSet(gtid)
	if err != nil {
		return "", fmt.Errorf("GTID %q: %w", gtid, err)
	}
	set := *parsed.(*mysql.MysqlGTIDSet)
	for u, tags := range *one.(*mysql.MysqlGTIDSet) {
		for tag, ivs := range tags {
			for _, iv := range ivs {
				for n := iv.Start; n < iv.Stop; n++ {
					removeGNO(set, u, tag, n)
				}
			}
		}
	}
	return set.String(), nil
}

// removeGNO takes transaction n out of a uuid's (and tag's) intervals, splitting the interval
// that holds it.
func removeGNO(set mysql.MysqlGTIDSet, u [16]byte, tag mysql.Tag, n int64) {
	tags := set[u]
	ivs := tags[tag]
	var out mysql.IntervalSlice
	for _, iv := range ivs {
		if n < iv.Start || n >= iv.Stop {
			out = append(out, iv)
			continue
		}
		if iv.Start < n {
			out = append(out, mysql.Interval{Start: iv.Start, Stop: n})
		}
		if n+1 < iv.Stop {
			out = append(out, mysql.Interval{Start: n + 1, Stop: iv.Stop})
		}
	}
	if len(out) > 0 {
		tags[tag] = out
		return
	}
	delete(tags, tag)
	if len(tags) == 0 {
		delete(set, u)
	}
}
