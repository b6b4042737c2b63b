package sqltext

import "testing"

// TestComment holds the comment forms of MySQL's and MariaDB's lexers, which both the
// statement classifier and the filter language read through Comment.
func TestComment(t *testing.T) {
	tests := []struct {
		in     string
		kind   CommentKind
		n      int
		closed bool
	}{
		// "#" runs to the end of the line, whatever follows it.
		{"# x\nSELECT", LineComment, 3, true},
		{"#x", LineComment, 2, true},
		// "--" is a comment only before a space or a control character, or at the end.
		{"-- x\nSELECT", LineComment, 4, true},
		{"--\tx\nSELECT", LineComment, 4, true},
		{"--\nSELECT", LineComment, 2, true},
		{"--\r\nSELECT", LineComment, 3, true},
		{"--", LineComment, 2, true},
		{"--x", NoComment, 0, false},
		{"--1", NoComment, 0, false},
		{"- - x", NoComment, 0, false},
		{"-", NoComment, 0, false},
		// Block comments, closed or not.
		{"/* x */ SELECT", BlockComment, 7, true},
		{"/**/", BlockComment, 4, true},
		{"/* x", BlockComment, 4, false},
		{"/*", BlockComment, 2, false},
		// Executable comments: n covers the marker and version, the body is SQL.
		{"/*! SELECT */", ExecutableComment, 3, true},
		{"/*!50100 PARTITION */", ExecutableComment, 8, true},
		{"/*!40000 ALTER TABLE t DISABLE KEYS */", ExecutableComment, 8, true},
		{"/*M! SELECT */", ExecutableComment, 4, true},
		{"/*M!100100 ALTER TABLE t ENABLE KEYS */", ExecutableComment, 10, true},
		// "/*M" without "!" is an ordinary comment.
		{"/*M x */", BlockComment, 8, true},
		// Not comments.
		{"SELECT", NoComment, 0, false},
		{"/ 2", NoComment, 0, false},
		{"", NoComment, 0, false},
	}
	for _, tt := range tests {
		kind, n, closed := Comment(tt.in)
		if kind != tt.kind || n != tt.n || closed != tt.closed {
			t.Errorf("Comment(%q) = %v, %d, %v; want %v, %d, %v", tt.in, kind, n, closed, tt.kind, tt.n, tt.closed)
		}
	}
}

// TestCommentsInStatements reads the comment forms through Classify: a "--" that is no
// comment leaves the statement unreadable as a comment would not, and MariaDB's executable
// comments hold SQL as MySQL's do.
func TestCommentsInStatements(t *testing.T) {
	tests := []struct {
		sql  string
		kind Kind
	}{
		{"-- note\nCOMMIT", Commit},
		{"--\tnote\nCOMMIT", Commit},
		{"--\nCOMMIT", Commit},
		{"# note\nBEGIN", Begin},
		{"/* note */ BEGIN", Begin},
		{"--x\nCOMMIT", Other},
		{"/*!50100 ALTER TABLE t ADD COLUMN c INT */", Executable},
		{"/*M!100100 ALTER TABLE t ADD COLUMN c INT */", Executable},
		{"-- note\n/*M! ALTER TABLE t ADD COLUMN c INT */", Executable},
		{"--\t\n/*!40000 ALTER TABLE t DISABLE KEYS */", Executable},
	}
	for _, tt := range tests {
		if kind, _, _ := Classify(tt.sql); kind != tt.kind {
			t.Errorf("Classify(%q) = %v, want %v", tt.sql, kind, tt.kind)
		}
	}
}

func TestQuotedIdent(t *testing.T) {
	tests := []struct {
		in   string
		name string
		n    int
		ok   bool
	}{
		{"`t`.x", "t", 3, true},
		{"`a``b` c", "a`b", 6, true},
		{"``", "", 2, true},
		{"`open", "", 5, false},
		{"t", "", 0, false},
	}
	for _, tt := range tests {
		name, n, ok := QuotedIdent(tt.in)
		if name != tt.name || n != tt.n || ok != tt.ok {
			t.Errorf("QuotedIdent(%q) = %q, %d, %v; want %q, %d, %v", tt.in, name, n, ok, tt.name, tt.n, tt.ok)
		}
	}
}
