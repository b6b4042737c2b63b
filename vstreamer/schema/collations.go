package schema

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Collation is one of the server's collations: its full name and its character set's, as
// the server writes them in SQL (utf8mb4_uca1400_ai_ci, utf8mb4).
type Collation struct {
	Name, Charset string
}

// Collations reads the server's collations by id. MariaDB 10.10 and later list the UCA
// 14.0.0 collations in COLLATIONS without an id and with a short name (uca1400_ai_ci); the
// id and the full name, of those and of the others, are in COLLATION_CHARACTER_SET_APPLICABILITY,
// whose ID column older servers and MySQL lack (noApplicabilityID).
func Collations(q Querier) (map[uint32]Collation, error) {
	m := map[uint32]Collation{}
	read := func(query string) error {
		r, err := q.Execute(query)
		if err != nil {
			return err
		}
		defer r.Close()
		for i := range r.RowNumber() {
			id, _ := r.GetUint(i, 0)
			m[uint32(id)] = Collation{Name: resultString(r, i, 1), Charset: resultString(r, i, 2)}
		}
		return nil
	}
	if err := read("SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL"); err != nil {
		return nil, fmt.Errorf("read the server's collations: %w", err)
	}
	err := read("SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL")
	if err != nil && !noApplicabilityID(err) {
		return nil, fmt.Errorf("read the server's collations: %w", err)
	}
	return m, nil
}

// noApplicabilityID reports the error of a query on the ID (or FULL_COLLATION_NAME) column
// of information_schema.COLLATION_CHARACTER_SET_APPLICABILITY on a server that lacks it:
// MySQL, and MariaDB before 10.10, which have every collation's id in COLLATIONS.
func noApplicabilityID(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_BAD_FIELD_ERROR
}
