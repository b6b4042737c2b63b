package filter

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/vstream-cdc/vstream/sqltext"
)

// Directives are the Vitess comment directives of a row streamer query that say which key
// to read a table by: vreplication's copy of an online schema change reads the source by a
// unique key it shares with the target, rather than by the primary key.
//
//	select /*vt+ ukColumns="uk1,uk2" ukForce="uk_idx" */ * from t
type Directives struct {
	// UKColumns are the columns to order the rows by and to key LASTPK with, in order.
	UKColumns []string
	// UKForce names the index the read forces; empty forces none.
	UKForce string
}

// Empty reports directives that change nothing.
func (d Directives) Empty() bool { return len(d.UKColumns) == 0 && d.UKForce == "" }

// directivePreamble opens a comment Vitess reads directives from.
const directivePreamble = "/*vt+"

// ParseDirectives reads the ukColumns and ukForce directives of a SELECT, as Vitess reads
// them: from the /*vt+ ... */ comments right after the SELECT keyword, each directive a
// whitespace-separated key=value whose key is matched without regard to case and whose
// value may be a Go-quoted string. ukColumns is a comma-separated list and both values are
// URL-unescaped (Vitess escapes names with commas that way). Other directives are ignored.
// A query with no such comments has empty directives.
func ParseDirectives(query string) (Directives, error) {
	var d Directives
	i := skipSpaceAndComments(query, 0)
	if !hasKeywordAt(query, i, "select") {
		return d, nil
	}
	i += len("select")
	for {
		i = skipSpace(query, i)
		if !strings.HasPrefix(query[i:], "/*") {
			break
		}
		end := strings.Index(query[i+2:], "*/")
		if end < 0 {
			return d, fmt.Errorf("%w: unterminated comment after select", ErrInvalid)
		}
		comment := query[i : i+2+end+2]
		i += 2 + end + 2
		if !strings.HasPrefix(comment, directivePreamble) {
			continue
		}
		// The first and last fields hold the comment's opening and closing.
		fields := strings.Fields(comment)
		if len(fields) < 3 {
			continue
		}
		for _, f := range fields[1 : len(fields)-1] {
			key, val, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			if uq, err := strconv.Unquote(val); err == nil {
				val = uq
			}
			switch strings.ToLower(key) {
			case "ukcolumns":
				d.UKColumns = nil
				if val == "" {
					continue
				}
				for c := range strings.SplitSeq(val, ",") {
					name, err := url.QueryUnescape(c)
					if err != nil {
						return Directives{}, fmt.Errorf("%w: directive ukColumns=%q: column %q is not URL-escaped correctly: %v", ErrInvalid, val, c, err)
					}
					if name == "" {
						return Directives{}, fmt.Errorf("%w: directive ukColumns=%q names an empty column; list the columns of a unique key, comma-separated", ErrInvalid, val)
					}
					d.UKColumns = append(d.UKColumns, name)
				}
			case "ukforce":
				name, err := url.QueryUnescape(val)
				if err != nil {
					return Directives{}, fmt.Errorf("%w: directive ukForce=%q is not URL-escaped correctly: %v", ErrInvalid, val, err)
				}
				d.UKForce = name
			}
		}
	}
	return d, nil
}

func skipSpace(s string, i int) int {
	for i < len(s) && sqltext.IsSpace(s[i]) {
		i++
	}
	return i
}

// skipSpaceAndComments skips what may come before a statement's first keyword. An executable
// comment is skipped whole, as Vitess's directive reader does.
func skipSpaceAndComments(s string, i int) int {
	for {
		i = skipSpace(s, i)
		switch kind, n, _ := sqltext.Comment(s[i:]); kind {
		case sqltext.BlockComment, sqltext.ExecutableComment:
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return len(s)
			}
			i += 2 + end + 2
		case sqltext.LineComment:
			i += n
		case sqltext.NoComment:
			return i
		}
	}
}

// hasKeywordAt reports whether s holds keyword kw at i, as a whole word.
func hasKeywordAt(s string, i int, kw string) bool {
	if len(s)-i < len(kw) || !strings.EqualFold(s[i:i+len(kw)], kw) {
		return false
	}
	return i+len(kw) == len(s) || !sqltext.IsIdentByte(s[i+len(kw)])
}
