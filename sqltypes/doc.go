// Package sqltypes is the one home of what the project knows about MySQL and MariaDB column
// types and the text of their cells: the Vitess text forms of dates and times, integer text,
// the character set of each collation id and the conversion of its text to UTF-8 (Charsets),
// Latin-1 rendering, ENUM/SET labels, the attributes of a COLUMN_TYPE (Unsigned, Zerofill),
// which binary-typed columns hold text (BinaryTypedText), and how the server compares
// values: strings under their collation (Collation, with weights from go-mysql-server's
// tables; the collations it cannot weigh exactly are refused with ErrCollation), DECIMAL and
// integers by value, dates and times by key, BIT as a number.
//
// It is a leaf: it imports nothing of this module but gen/, so the engine, the filter and
// every encoder can import it. Its parsers and comparisons run once per cell, so they do not
// allocate unless they fail.
package sqltypes
