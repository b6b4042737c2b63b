package position

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// FilePos positions name a place in the server's binlog files instead of a GTID set:
// "FilePos/mysql-bin.000003:1234" is byte offset 1234 of mysql-bin.000003. Vitess writes
// them for tablets that replicate by file and offset. The offset of a position a stream
// sends is the end of a transaction's last event, where reading resumes.
const FilePos Flavor = "FilePos"

// FilePosSet is the GTIDSet of a FilePos position: one place in the binlog. It implements
// mysql.GTIDSet so that a Position holds it like any other set; it is never sent to a server
// as a GTID set (Encode returns nil), a stream starts from File and Pos instead.
type FilePosSet struct {
	File string
	Pos  uint64
}

// NewFilePos returns the FilePos position at byte pos of the binlog file.
func NewFilePos(file string, pos uint64) Position {
	return Position{Flavor: FilePos, GTIDSet: &FilePosSet{File: file, Pos: pos}}
}

// FilePos returns the binlog file and offset of a FilePos position; ok is false for
// positions of other flavors.
func (p Position) FilePos() (file string, pos uint64, ok bool) {
	s, ok := p.GTIDSet.(*FilePosSet)
	if !ok || s == nil {
		return "", 0, false
	}
	return s.File, s.Pos, true
}

const wantFilePos = "want FilePos/<binlog file>:<offset>, e.g. FilePos/mysql-bin.000003:1234"

// parseFilePos reads "<file>:<offset>". The file name may hold no ':' (the separator, as in
// Vitess), no ',' and no whitespace or control characters, so that the text is canonical.
func parseFilePos(body string) (*FilePosSet, error) {
	file, off, ok := strings.Cut(body, ":")
	switch {
	case body == "":
		return nil, fmt.Errorf("empty file position; %s", wantFilePos)
	case !ok:
		return nil, fmt.Errorf("no ':' between file and offset; %s", wantFilePos)
	case file == "":
		return nil, fmt.Errorf("empty binlog file name; %s", wantFilePos)
	case strings.Contains(off, ":"):
		return nil, fmt.Errorf("more than one ':'; %s", wantFilePos)
	}
	for i := 0; i < len(file); i++ {
		if c := file[i]; c <= ' ' || c == ',' || c == 0x7f {
			return nil, fmt.Errorf("binlog file name %s holds %q; %s", quote(file), c, wantFilePos)
		}
	}
	// ParseUint, unlike ParseInt, refuses a sign; base 10 keeps the text canonical.
	n, err := strconv.ParseUint(off, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("offset %s is not a number in range; %s", quote(off), wantFilePos)
	}
	return &FilePosSet{File: file, Pos: n}, nil
}

// String writes "<file>:<offset>".
func (s *FilePosSet) String() string {
	if s == nil {
		return ""
	}
	return s.File + ":" + strconv.FormatUint(s.Pos, 10)
}

// Encode returns nil: a file position has no binary GTID form.
func (s *FilePosSet) Encode() []byte { return nil }

// Equal reports whether o is the same place.
func (s *FilePosSet) Equal(o mysql.GTIDSet) bool {
	op, ok := o.(*FilePosSet)
	return ok && s != nil && op != nil && *s == *op
}

// Contain reports whether o is at or before s in the binlog: everything streamed up to o is
// streamed up to s.
func (s *FilePosSet) Contain(o mysql.GTIDSet) bool {
	op, ok := o.(*FilePosSet)
	if !ok || s == nil {
		return false
	}
	return op == nil || ComparePlaces(op.File, op.Pos, s.File, s.Pos) <= 0
}

// Update moves s to the place "<file>:<offset>".
func (s *FilePosSet) Update(place string) error {
	n, err := parseFilePos(strings.TrimSpace(place))
	if err != nil {
		return err
	}
	*s = *n
	return nil
}

// Clone returns a copy.
func (s *FilePosSet) Clone() mysql.GTIDSet {
	if s == nil {
		return (*FilePosSet)(nil)
	}
	c := *s
	return &c
}

// IsEmpty reports a set naming no file.
func (s *FilePosSet) IsEmpty() bool { return s == nil || s.File == "" }

// CompareFiles orders binlog file names: names that differ only in a numeric extension
// ("mysql-bin.000009" and "mysql-bin.000010") by its number, which is how the server numbers
// them whatever their width; other names as text.
func CompareFiles(a, b string) int {
	ab, an, aok := splitFile(a)
	bb, bn, bok := splitFile(b)
	if aok && bok && ab == bb {
		if c := cmpInt(len(an), len(bn)); c != 0 {
			return c
		}
		if c := strings.Compare(an, bn); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// ComparePlaces orders two places in the binlog: by file, then by offset.
func ComparePlaces(af string, ap uint64, bf string, bp uint64) int {
	if c := CompareFiles(af, bf); c != 0 {
		return c
	}
	switch {
	case ap < bp:
		return -1
	case ap > bp:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// splitFile cuts a name at its last '.' into base and number, leading zeros dropped; ok is
// false when the extension is not all digits.
func splitFile(name string) (base, num string, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || i == len(name)-1 {
		return "", "", false
	}
	ext := name[i+1:]
	for j := 0; j < len(ext); j++ {
		if ext[j] < '0' || ext[j] > '9' {
			return "", "", false
		}
	}
	ext = strings.TrimLeft(ext, "0")
	return name[:i], ext, true
}

func filePosAhead(p, server *FilePosSet) string {
	return fmt.Sprintf("file position %s is past the server's %s", p, server)
}

// filePosMissing reports a position in a file before the oldest binlog's.
func filePosMissing(p, oldest *FilePosSet) string {
	if CompareFiles(p.File, oldest.File) >= 0 {
		return ""
	}
	return fmt.Sprintf("binlog %s is purged, the oldest binlog is %s", p.File, oldest.File)
}
