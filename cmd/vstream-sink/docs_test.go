package main

import (
	"testing"

	"github.com/vstream-cdc/vstream/internal/doccheck"
	"github.com/vstream-cdc/vstream/sink"
)

// TestDocsFlags holds docs/configuration.md's vstream-sink table to flagDefs: a flag added
// without a row, or a row for a flag that is gone, fails the test naming it.
func TestDocsFlags(t *testing.T) {
	const page = "../../docs/configuration.md"
	documented, err := doccheck.TableNames(page, "vstream-sink")
	if err != nil {
		t.Fatal(err)
	}
	code := []string{"--config", "--check-config"} // cliconfig's own
	for _, d := range flagDefs {
		code = append(code, "--"+d.Name)
	}
	for _, e := range doccheck.Diff(page+" (## vstream-sink)", code, documented) {
		t.Error(e)
	}
}

// TestDocsMetrics holds docs/metrics.md's vstream-sink table to the metrics sink.NewMetrics
// registers.
func TestDocsMetrics(t *testing.T) {
	const page = "../../docs/metrics.md"
	documented, err := doccheck.TableNames(page, "vstream-sink metrics")
	if err != nil {
		t.Fatal(err)
	}
	rec := &doccheck.Describer{}
	sink.NewMetrics(rec, "kafka", "orders")
	for _, e := range doccheck.Diff(page+" (## vstream-sink metrics)", rec.Names, documented) {
		t.Error(e)
	}
}
