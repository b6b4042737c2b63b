package schema

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// infoSchema answers Collations' two queries with the rows of a server of some flavor; a nil
// applicability is a server whose COLLATION_CHARACTER_SET_APPLICABILITY has no ID column.
type infoSchema struct {
	collations, applicability [][]any
	fail                      error
}

func (s infoSchema) Execute(command string, _ ...any) (*mysql.Result, error) {
	rows := s.collations
	if strings.Contains(command, "APPLICABILITY") {
		if s.applicability == nil {
			return nil, mysql.NewDefaultError(mysql.ER_BAD_FIELD_ERROR, "ID", "field list")
		}
		rows = s.applicability
	} else if s.fail != nil {
		return nil, s.fail
	}
	rs, err := mysql.BuildSimpleTextResultset([]string{"ID", "NAME", "CHARACTER_SET_NAME"}, rows)
	if err != nil {
		return nil, err
	}
	// The builder leaves the rows as the wire has them; a client's result has them parsed.
	for _, row := range rs.RowDatas {
		vals, err := row.ParseText(rs.Fields, nil)
		if err != nil {
			return nil, err
		}
		rs.Values = append(rs.Values, vals)
	}
	return mysql.NewResult(rs), nil
}

func TestCollations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		server  infoSchema
		want    map[uint32]Collation
		wantErr bool
	}{{
		name:   "MySQL and MariaDB before 10.10: every id in COLLATIONS",
		server: infoSchema{collations: [][]any{{45, "utf8mb4_general_ci", "utf8mb4"}, {63, "binary", "binary"}}},
		want:   map[uint32]Collation{45: {"utf8mb4_general_ci", "utf8mb4"}, 63: {"binary", "binary"}},
	}, {
		name: "MariaDB 10.10 and later: the UCA 14.0.0 ids and full names from APPLICABILITY",
		server: infoSchema{
			collations:    [][]any{{45, "utf8mb4_general_ci", "utf8mb4"}},
			applicability: [][]any{{45, "utf8mb4_general_ci", "utf8mb4"}, {2305, "utf8mb4_uca1400_ai_ci", "utf8mb4"}},
		},
		want: map[uint32]Collation{45: {"utf8mb4_general_ci", "utf8mb4"}, 2305: {"utf8mb4_uca1400_ai_ci", "utf8mb4"}},
	}, {
		name:    "a failed read is an error",
		server:  infoSchema{fail: errors.New("connection lost")},
		wantErr: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Collations(tc.server)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
