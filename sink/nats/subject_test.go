package nats_test

import (
	"testing"

	"github.com/vstream-cdc/vstream/sink/nats"
)

func TestSubject(t *testing.T) {
	for in, want := range map[string]string{
		"cdc.app.app.orders": "cdc.app.app.orders",
		"cdc.my table":       "cdc.my_table",
		"cdc.a*b.>":          "cdc.a_b._",
		"cdc..x.":            "cdc._.x._",
	} {
		if got := nats.Subject(in); got != want {
			t.Errorf("Subject(%q) = %q, want %q", in, got, want)
		}
	}
}
