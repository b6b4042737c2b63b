package rowcodec

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

// MariaDB's column types of COMPRESSED columns in a TABLE_MAP: a BLOB/TEXT or a
// VARCHAR/VARBINARY whose binlog value is the stored, compressed form.
const (
	TypeBlobCompressed    = 140
	TypeVarcharCompressed = 141
)

// DecodeRows decodes a rows event as go-mysql does, except for a table with MariaDB COMPRESSED
// columns: go-mysql v1.16 does not know their types, misreads the metadata of every column
// after them, and fails or garbles the rows. Their rows are left undecoded (no Rows): a stream
// that selects such a table ends with an error naming the column (see HasCompressed), and
// other streams go on. Set it as the binlog syncer's RowsEventDecodeFunc.
func DecodeRows(re *replication.RowsEvent, data []byte) error {
	pos, err := re.DecodeHeader(data)
	if err != nil {
		return err
	}
	if re.Table != nil && slices.ContainsFunc(re.Table.ColumnType, isCompressedType) {
		return nil
	}
	return re.DecodeData(pos, data)
}

func isCompressedType(t byte) bool { return t == TypeBlobCompressed || t == TypeVarcharCompressed }

// CompressedColumn returns the index of the table's first COMPRESSED column, or -1.
func CompressedColumn(cols []Column) int {
	return slices.IndexFunc(cols, func(c Column) bool { return c.Compressed })
}
