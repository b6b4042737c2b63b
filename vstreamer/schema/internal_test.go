package schema

import "testing"

// The names Vitess v0.24.4's go/vt/schema tests hold internal (IsInternalOperationTableName)
// and not, plus the tables of its vstreamer's TestOnlineDDLTables.
func TestInternal(t *testing.T) {
	internal := []string{
		"_4e5dcf80_354b_11eb_82cd_f875a4d24e90_20201203114014_gho",
		"_4e5dcf80_354b_11eb_82cd_f875a4d24e90_20201203114014_ghc",
		"_4e5dcf80_354b_11eb_82cd_f875a4d24e90_20201203114014_del",
		"_4e5dcf80_354b_11eb_82cd_f875a4d24e90_20201203114013_new",
		"_84371a37_6153_11eb_9917_f875a4d24e90_20210128122816_vrepl",
		"_table_old",
		"__table_old",
		"_product_old",
		"_vt_drp_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_hld_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_prg_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_evc_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_vrp_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_gho_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_ghc_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_xyz_6ace8bcef73211ea87e9f875a4d24e90_20200915120410_",
		"_vt_prg_1f9194b43b2011eb8a0104ed332e05c2_20201210194431_",
		"_1e275eef_3b20_11eb_a38f_04ed332e05c2_20201210204529_gho",
	}
	streamed := []string{
		"t",
		"vitess_test",
		"_shortlived",
		"_table_new",
		"__table_new",
		"_table_gho",
		"_table_ghc",
		"_table_del",
		"table_old",
		"vt_onlineddl_test_02",
		"_vt_DROP_6ace8bcef73211ea87e9f875a4d24e90_20200915120410",
		"_vt_HOLD_6ace8bcef73211ea87e9f875a4d24e90_20200915120410",
		"_vt_DROP_6ace8bcef73211ea87e9f875a4d24e90_202009151204100",
		"__vt_DROP_6ace8bcef73211ea87e9f875a4d24e90_20200915120410",
		"_vt_OTHER_6ace8bcef73211ea87e9f875a4d24e90_20200915120410",
		"_vt_drp_6ace8bcef73211ea87e9f875a4d2_20200915120410_",
		"_vt_drp_6ace8bcef73211ea87e9f875a4d24e90_20200915120410",
	}
	for _, n := range internal {
		if !Internal(n) {
			t.Errorf("Internal(%q) = false, want true", n)
		}
	}
	for _, n := range streamed {
		if Internal(n) {
			t.Errorf("Internal(%q) = true, want false", n)
		}
	}
}
