package filter

import "fmt"

// SelectTable returns the table a rule filter's select reads: the "t" of
// "select <cols> from t [where <conds>]".
func SelectTable(query string) (string, error) {
	st, err := parseSelect(query)
	if err != nil {
		return "", fmt.Errorf("%w: query %q: %v; want select <columns> from <table> [where <conditions>]", ErrInvalid, query, err)
	}
	return st.table, nil
}
