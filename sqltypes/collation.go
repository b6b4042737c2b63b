package sqltypes

import (
	"strconv"
	"strings"
)

// BinaryCollation is the collation id of binary strings (character set "binary").
const BinaryCollation = 63

// MaxCollation bounds the collation ids this package knows: every id in use fits (MariaDB's
// go to 3327), so a lookup is an index, not a hash.
const MaxCollation = 4096

// collationIDs lists each character set's collation ids as MariaDB's information_schema has
// them. Below 256 MySQL has the same ids, and adds gb18030's and utf8mb4's 255 to 323;
// MariaDB's NO PAD collations (1024 and up) and UCA 14.0.0 collations (2048 and up) are its
// own. A stream that reads the source server's own table also knows ids added since.
const collationIDs = `
ascii 11 65 1035 1089
binary 63
utf8mb3 33 76 83 192-215 223 576-578 1057 1107 1216 1238 2048-2303
utf8mb4 45 46 224-247 255-323 608-610 1069 1070 1248 1270 2304-2559
gb18030 248 249 250
big5 1 84 1025 1108
cp1250 26 34 44 66 99 1050 1090
cp1251 14 23 50 51 52 1074 1075
cp1256 57 67 1081 1091
cp1257 29 58 59 1082 1083
cp850 4 80 1028 1104
cp852 40 81 1064 1105
cp866 36 68 1060 1092
cp932 95 96 1119 1120
eucjpms 97 98 1121 1122
euckr 19 85 1043 1109
gb2312 24 86 1048 1110
gbk 28 87 1052 1111
greek 25 70 1049 1094
hebrew 16 71 1040 1095
koi8r 7 74 1031 1098
koi8u 22 75 1046 1099
latin1 5 8 15 31 47 48 49 94 1032 1071
latin2 2 9 21 27 77 1033 1101
latin5 30 78 1054 1102
latin7 20 41 42 79 1065 1103
macroman 39 53 1063 1077
sjis 13 88 1037 1112
tis620 18 89 1042 1113
ujis 12 91 1036 1115
utf16le 56 62 1080 1086
ucs2 35 90 128-151 159 640-642 1059 1114 1152 1174 2560-2815
utf16 54 55 101-124 672-674 1078 1079 1125 1147 2816-3071
utf32 60 61 160-183 736-738 1084 1085 1184 1206 3072-3327
`

// charsetByCollation is collationIDs indexed by collation id.
var charsetByCollation = func() []string {
	names := make([]string, MaxCollation)
	for _, line := range strings.Split(strings.TrimSpace(collationIDs), "\n") {
		f := strings.Fields(line)
		for _, r := range f[1:] {
			lo, hi, _ := strings.Cut(r, "-")
			from, err1 := strconv.ParseUint(lo, 10, 32)
			to := from
			var err2 error
			if hi != "" {
				to, err2 = strconv.ParseUint(hi, 10, 32)
			}
			if err1 != nil || err2 != nil || to >= MaxCollation {
				panic("sqltypes: bad collation line " + line)
			}
			for id := from; id <= to; id++ {
				names[id] = f[0]
			}
		}
	}
	return names
}()

// CharsetOf names the character set of a collation id as MySQL names it ("utf8mb4",
// "latin1", "binary", ...); "" for an id it does not know.
func CharsetOf(collation uint32) string {
	if collation < MaxCollation {
		return charsetByCollation[collation]
	}
	return ""
}

// MaxCharLen is the longest character of a character set in bytes (MySQL's maxlen); 1 for a
// single-byte or unknown one.
func MaxCharLen(charset string) int {
	switch charset {
	case "utf8mb4", "utf16", "utf16le", "utf32", "gb18030":
		return 4
	case "utf8mb3", "utf8", "ujis", "eucjpms":
		return 3
	case "ucs2", "big5", "sjis", "cp932", "gbk", "gb2312", "euckr":
		return 2
	}
	return 1
}
