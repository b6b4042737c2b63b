package schema

import "regexp"

// The names online schema change tools and Vitess's table lifecycle give the tables they work
// on, as Vitess recognises them (go/vt/schema: IsInternalOperationTableName). Their rows are
// copies of a real table's in flight, or tables on their way to being dropped; Vitess's
// vstreamer does not stream them, and neither does this one. The character class [0-f] is
// Vitess's own (it spans '0' to 'f' in ASCII, so it also takes upper case letters and some
// punctuation); it is kept so that both agree on every name.
var internalNames = []*regexp.Regexp{
	// Vitess's own: _vt_<3-letter hint>_<32 hex>_<14-digit time>_ (table GC: hld, prg, evc, drp;
	// online DDL: vrp, gho, ghc, del, new; any other hint too).
	regexp.MustCompile(`^_vt_[a-zA-Z0-9]{3}_[0-f]{32}_[0-9]{14}_$`),
	// Older Vitess online DDL and gh-ost: _<uuid with underscores>_<time>_gho|ghc|del|new|vrepl.
	regexp.MustCompile(`^_[0-f]{8}_[0-f]{4}_[0-f]{4}_[0-f]{4}_[0-f]{12}_[0-9]{14}_(gho|ghc|del|new|vrepl)$`),
	// pt-online-schema-change's old table: _<name>_old.
	regexp.MustCompile(`^_.*_old$`),
}

// Internal reports a table that an online schema change or Vitess's table lifecycle made,
// which is not streamed.
func Internal(table string) bool {
	if len(table) == 0 || table[0] != '_' {
		return false
	}
	for _, re := range internalNames {
		if re.MatchString(table) {
			return true
		}
	}
	return false
}
