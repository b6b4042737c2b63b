package statuspage

import (
	"strings"
	"testing"
	"time"
)

func TestCopyFraction(t *testing.T) {
	for _, c := range []struct {
		copy Copy
		want float64
	}{
		{Copy{Copied: 0, Estimated: 0}, -1},
		{Copy{Copied: 10, Estimated: 0}, -1},
		{Copy{Copied: 25, Estimated: 100}, 0.25},
		{Copy{Copied: 120, Estimated: 100}, 1}, // the estimate was low
	} {
		if got := c.copy.Fraction(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.copy, got, c.want)
		}
	}
}

// TestPageCopies: a copy with an estimate is a bar; one without shows its count alone.
func TestPageCopies(t *testing.T) {
	ack := 0.25
	st := Status{Version: "v1", Time: time.Unix(0, 0).UTC(), Refresh: 5, Source: Source{Addr: "db:3306", Flavor: "mariadb", Version: "11.8"},
		Streams: []Stream{{ID: 1, API: "vtgate", Format: "vevent", Position: "MariaDB/0-1-2", AckLag: &ack, ackLag: 250 * time.Millisecond,
			Copies: []Copy{{Table: "a", Copied: 30, Estimated: 120}, {Table: "b", Copied: 7}}}}}
	var b strings.Builder
	if err := page.Execute(&b, st); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		`<progress value="30" max="120" data-table="a"></progress>`,
		`30 / ~120 (25%)`,
		`<span class="table">b</span>`,
		`no estimate`,
		`250ms`,
		`vevent (vtgate API)`,
		`all tables`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q:\n%s", want, html)
		}
	}
	if n := strings.Count(html, "<progress"); n != 1 {
		t.Errorf("%d bars, want 1 (b has no estimate)", n)
	}
}
