// Package sqltypes is the one home of what the project knows about MySQL and MariaDB column
// types and the text of their cells: the Vitess text forms of dates and times, the character
// set of each collation id, Latin-1 rendering and ENUM/SET labels.
//
// It is a leaf: it imports nothing of this module but gen/, so the engine, the filter and
// every encoder can import it. Its parsers run once per cell, so they do not allocate unless
// they fail.
package sqltypes
