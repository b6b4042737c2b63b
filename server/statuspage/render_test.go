package statuspage

import (
	"encoding/json"
	"reflect"
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

// TestPageParts: each part of the page shows what the status holds, and what clients chose
// (a sink's name, a program, an error's text) as text, never markup.
func TestPageParts(t *testing.T) {
	const markup = `<script>document.title='pwned'</script>`
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() Status {
		return Status{Version: "v1", Time: at, Refresh: 5, Source: Source{Addr: "db:3306", Flavor: "mysql", Version: "8.4"},
			Streams: []Stream{}, Readers: []Reader{}, History: []Ended{}}
	}
	cases := []struct {
		name      string
		status    func(*Status)
		want, not []string
	}{
		{name: "nothing yet", status: func(*Status) {},
			want: []string{`No shared binlog reader is running.`, `No stream has ended yet.`, `<span id="history-count">0</span>`},
			not:  []string{`id="sink-count"`, `id="own-readers"`, `<table id="readers">`, `<table id="history">`}},
		{name: "sink", status: func(s *Status) {
			s.Streams = []Stream{{ID: 3, Client: "10.0.0.1:5000", Program: "vstream-sink/orders", Sink: "orders", API: "native", Format: "vevent"}}
			s.Sinks = 1
		}, want: []string{`<span class="sink">sink <b>orders</b></span><code>10.0.0.1:5000</code>`, `sinks: <span id="sink-count">1</span>`}},
		{name: "program", status: func(s *Status) {
			s.Streams = []Stream{{ID: 4, Client: "10.0.0.1:5001", Program: "vstream", API: "native", Format: "vevent"}}
		}, want: []string{`<span class="program">vstream</span><code>10.0.0.1:5001</code>`}, not: []string{`class="sink"`}},
		{name: "sink name is markup", status: func(s *Status) {
			s.Streams = []Stream{{ID: 5, Client: "c", Program: "vstream-sink/" + markup, Sink: markup, API: "native", Format: "vevent"}}
			s.Sinks = 1
		}, want: []string{`sink <b>&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;</b>`}, not: []string{markup}},
		{name: "readers", status: func(s *Status) {
			s.Readers = []Reader{{Kind: "shared", File: "binlog.000007", Position: "MySQL56/" + markup, Streams: 2}, {Kind: "catch-up", Streams: 1}}
			s.OwnReaders = 1
		}, want: []string{`<span id="reader-count">2</span>`, `<tr class="reader" data-kind="shared">`, `<code>binlog.000007</code>`,
			`MySQL56/&lt;script&gt;`, `<td class="num streams">2</td>`, `<tr class="reader" data-kind="catch-up">`,
			`<span class="none">not yet</span>`, `1 stream(s) read the binlog with a connection of their own.`}, not: []string{markup}},
		{name: "history", status: func(s *Status) {
			s.History = []Ended{
				{ID: 9, Client: "c9", Sink: "orders", API: "native", Keyspace: "commerce", Filter: "t", Format: "vevent", Started: at, Ended: at.Add(90 * time.Second),
					Code: "FailedPrecondition", Error: "position purged " + markup, RowsSent: 12, Transactions: 3},
				{ID: 8, Client: "c8", API: "vtgate", Keyspace: "commerce", Format: "vevent", Started: at, Ended: at.Add(time.Second), Code: "Canceled", Error: "context canceled"},
				{ID: 7, Client: "c7", API: "native", Keyspace: "commerce", Format: "json", Started: at, Ended: at, Code: "OK"},
			}
		}, want: []string{`<span id="history-count">3</span>`, `<tr class="ended" data-stream="9">`,
			`<span class="error">FailedPrecondition: position purged &lt;script&gt;`, `<td class="num rows">12</td>`, `<td class="num transactions">3</td>`,
			`2025-01-02 03:04:05<br>to 03:05:35 (1m30s)`, `<span class="sink">sink <b>orders</b></span><code>c9</code>`,
			`<span class="canceled">Canceled: context canceled</span>`, `vevent (vtgate API)`,
			`<tr class="ended" data-stream="7">`, `<span class="clean">clean</span>`}, not: []string{markup}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := base()
			c.status(&st)
			var b strings.Builder
			if err := page.Execute(&b, st); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			for _, w := range c.want {
				if !strings.Contains(html, w) {
					t.Errorf("page lacks %q:\n%s", w, html)
				}
			}
			for _, n := range c.not {
				if strings.Contains(html, n) {
					t.Errorf("page has %q:\n%s", n, html)
				}
			}
			// status.json carries the same, and gives the client's text back as it came.
			j, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			var back Status
			if err := json.Unmarshal(j, &back); err != nil {
				t.Fatal(err)
			}
			back.Refresh = st.Refresh // the page's alone
			if !reflect.DeepEqual(st, back) {
				t.Errorf("status.json round trip:\nsent %+v\nread %+v\n%s", st, back, j)
			}
		})
	}
}
