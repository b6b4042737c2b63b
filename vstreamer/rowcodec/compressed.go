package rowcodec

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// MariaDB's column types of COMPRESSED columns in a TABLE_MAP: a BLOB/TEXT or a
// VARCHAR/VARBINARY whose binlog value is the stored, compressed form.
const (
	TypeBlobCompressed    = 140
	TypeVarcharCompressed = 141
)

// DecodeRows decodes the header of a rows event and leaves its rows raw (see RawOf and
// Raw.Decode), for the stream to render in one pass with its own columns. Two kinds of tables
// are the exceptions:
//   - go-mysql decodes the rows of a table with a MySQL JSON column, as before; whole JSON
//     values are then printed again as Vitess prints them (vitessJSON), and the JSON diffs
//     of a PARTIAL_UPDATE_ROWS_EVENT are applied to the before image (applyPartialJSON);
//   - the rows of a table with MariaDB COMPRESSED columns are not decoded at all (no Rows):
//     go-mysql v1.16 does not know their types and misreads the metadata of every column after
//     them. A stream that selects such a table ends with an error naming the column (see
//     CompressedColumn), and other streams go on.
//
// Set it as the binlog syncer's RowsEventDecodeFunc.
func DecodeRows(re *replication.RowsEvent, data []byte) error { return decodeRows(re, data, false) }

// DecodeRowsVerified is DecodeRows that also has go-mysql decode the rows it leaves raw, into
// Raw.Decoded, for tests that compare the two decodings.
func DecodeRowsVerified(re *replication.RowsEvent, data []byte) error {
	return decodeRows(re, data, true)
}

func decodeRows(re *replication.RowsEvent, data []byte, verify bool) error {
	pos, err := re.DecodeHeader(data)
	if err != nil {
		return err
	}
	if re.Table != nil && slices.ContainsFunc(re.Table.ColumnType, isCompressedType) {
		return nil
	}
	if re.Table == nil {
		return re.DecodeData(pos, data)
	}
	if slices.Contains(re.Table.ColumnType, mysql.MYSQL_TYPE_JSON) {
		if err := re.DecodeData(pos, data); err != nil {
			return err
		}
		if !isPartialUpdate(re) {
			return vitessJSON(re, data[pos:])
		}
		return applyPartialJSON(re, data[pos:])
	}
	raw := &Raw{data: data[pos:len(data):len(data)], bitmap1: re.ColumnBitmap1, bitmap2: re.ColumnBitmap2, columns: int(re.ColumnCount)}
	if verify {
		if err := re.DecodeData(pos, data); err != nil {
			return err
		}
		raw.Decoded = re.Rows
	}
	re.Rows, re.SkippedColumns = [][]any{{raw}}, nil
	return nil
}

func isCompressedType(t byte) bool { return t == TypeBlobCompressed || t == TypeVarcharCompressed }

// CompressedColumn returns the index of the table's first COMPRESSED column, or -1.
func CompressedColumn(cols []Column) int {
	return slices.IndexFunc(cols, func(c Column) bool { return c.Compressed })
}
