package sqltext

import "strings"

// CommentKind is the kind of comment a piece of SQL text starts with.
type CommentKind int

const (
	// NoComment: the text does not start with a comment.
	NoComment CommentKind = iota
	// LineComment is "# ..." or "-- ..." to the end of the line. MySQL and MariaDB take "--"
	// as a comment only when a space or a control character (a tab, a newline...) or the end
	// of the text follows it: "1--1" is 1 - (-1).
	LineComment
	// BlockComment is "/* ... */".
	BlockComment
	// ExecutableComment opens "/*! ... */", "/*!NNNNN ... */" (MySQL and MariaDB run its
	// body when their version is at least NNNNN), "/*M! ... */" or "/*M!NNNNNN ... */" (only
	// MariaDB runs those; MySQL reads them as a comment). Its body is SQL, closed by "*/".
	ExecutableComment
)

// Comment reads the comment s starts with. For a line comment n is its length up to the
// newline (which it leaves), for a block comment its length through "*/" (all of s, with
// closed false, when no "*/" ends it), and for an executable comment the length of its opening
// marker and version ("/*!50100", "/*M!100100"), after which its body follows.
func Comment(s string) (kind CommentKind, n int, closed bool) {
	switch {
	case strings.HasPrefix(s, "#"), lineDashes(s):
		if end := strings.IndexByte(s, '\n'); end >= 0 {
			return LineComment, end, true
		}
		return LineComment, len(s), true
	case strings.HasPrefix(s, "/*!"), strings.HasPrefix(s, "/*M!"):
		n = strings.IndexByte(s, '!') + 1
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return ExecutableComment, n, true
	case strings.HasPrefix(s, "/*"):
		if end := strings.Index(s[2:], "*/"); end >= 0 {
			return BlockComment, end + 4, true
		}
		return BlockComment, len(s), false
	}
	return NoComment, 0, false
}

// lineDashes reports whether s starts with "--" that opens a comment: followed by a space, a
// control character or nothing.
func lineDashes(s string) bool {
	if !strings.HasPrefix(s, "--") {
		return false
	}
	return len(s) == 2 || s[2] == ' ' || s[2] < 0x20 || s[2] == 0x7f
}

// IsSpace reports the bytes skipped between tokens: space, tab, newline and carriage return.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// IsIdentByte reports the bytes of a bare identifier or keyword: letters, digits, '_', '$'
// and every byte of a multi-byte UTF-8 character.
func IsIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// QuotedIdent reads the backquoted identifier s starts with: its name ("“" stands for one
// backquote) and its length with the quotes. ok is false when s does not start with a
// backquote or no backquote closes it.
func QuotedIdent(s string) (name string, n int, ok bool) {
	if !strings.HasPrefix(s, "`") {
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", len(s), false
}
