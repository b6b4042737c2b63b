package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"testing"

	"github.com/vstream-cdc/vstream/internal/doccheck"
)

// TestDocsFlags holds docs/configuration.md's vstream table to the flags parseArgs defines (as
// -h lists them): a flag added without a row, or a row for a flag that is gone, fails the test
// naming it.
func TestDocsFlags(t *testing.T) {
	const page = "../../docs/configuration.md"
	documented, err := doccheck.TableNames(page, "vstream")
	if err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	if _, err := parseArgs([]string{"-h"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseArgs -h: %v", err)
	}
	var code []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(help.String(), -1) {
		code = append(code, "--"+m[1])
	}
	if len(code) == 0 {
		t.Fatalf("no flags in -h:\n%s", help.String())
	}
	for _, e := range doccheck.Diff(page+" (## vstream)", code, documented) {
		t.Error(e)
	}
}
