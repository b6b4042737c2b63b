package statuspage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/server/statuspage"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// TestHistorySinksReaders, through a real server: a stream that ended is in the history
// with its error, one opened by the Go client with vstream-sink's identity is listed as a
// sink, and two streams at the server's head share one reader, which counts them.
func TestHistorySinksReaders(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS hs", "CREATE TABLE hs (id INT PRIMARY KEY, v VARCHAR(10))")
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A sink's stream, through the Go client as vstream-sink opens it; its name is markup.
	const sinkName = `orders<b>x</b>`
	cl, err := client.Dial(f.addr, client.Options{Identity: "vstream-sink/" + sinkName, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sinkDone := make(chan error, 1)
	go func() {
		sinkDone <- cl.Stream(ctx, client.Request{Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "hs"}}}},
			func(context.Context, []*binlogdata.VEvent) error { return nil })
	}()
	// A second stream at the head, with no identity.
	other := f.open(t, ctx, "current", &binlogdata.Rule{Match: "hs"})
	var st statuspage.Status
	testkit.WaitFor(t, 30*time.Second, "both streams on one shared reader", func() bool {
		st = f.status(t)
		return len(st.Streams) == 2 && st.Streams[0].Reader != "" && st.Streams[1].Reader != "" &&
			len(st.Readers) == 1 && st.Readers[0].Streams == 2
	})
	sink, plain := st.Streams[0], st.Streams[1]
	if sink.Sink == "" {
		sink, plain = plain, sink
	}
	if sink.Sink != sinkName || sink.Program != "vstream-sink/"+sinkName || sink.Client == "" {
		t.Errorf("the sink's stream: %+v", sink)
	}
	if plain.Sink != "" || plain.Program != "" || st.Sinks != 1 {
		t.Errorf("the other stream: %+v (sinks %d)", plain, st.Sinks)
	}
	r := st.Readers[0]
	if r.Kind != vstreamer.ReaderShared || r.Streams != 2 || sink.Reader != vstreamer.ReaderShared || plain.Reader != vstreamer.ReaderShared || st.OwnReaders != 0 {
		t.Errorf("readers %+v; streams' readers %q %q", st.Readers, sink.Reader, plain.Reader)
	}
	// The reader's position moves with the binlog once a transaction passes.
	testkit.MustExec(t, db, "INSERT INTO hs VALUES (1, 'a')")
	testkit.WaitFor(t, 30*time.Second, "the row", func() bool { return other.count(binlogdata.VEventType_ROW) == 1 })
	testkit.WaitFor(t, 30*time.Second, "the reader's position", func() bool {
		st = f.status(t)
		return len(st.Readers) == 1 && isPosition(st.Readers[0].Position) && st.Readers[0].File != ""
	})
	page, _ := get(t, f.page+"/")
	for _, want := range []string{
		`sink <b>orders&lt;b&gt;x&lt;/b&gt;</b>`, `sinks: <span id="sink-count">1</span>`,
		`<tr class="reader" data-kind="shared">`, `<td class="num streams">2</td>`, st.Readers[0].Position,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, sinkName) {
		t.Errorf("the sink's name is markup on the page:\n%s", page)
	}

	// A stream the server ends with an error: its filter's regular expression is invalid.
	f.open(t, ctx, "current", &binlogdata.Rule{Match: "/(<i>"})
	var ended statuspage.Ended
	testkit.WaitFor(t, 30*time.Second, "the failed stream in the history", func() bool {
		st = f.status(t)
		for _, e := range st.History {
			if e.Filter == "/(<i>" {
				ended = e
				return true
			}
		}
		return false
	})
	if ended.Code != "InvalidArgument" || ended.Error == "" || ended.Keyspace != "commerce" || ended.Format != "vevent" ||
		!ended.Ended.After(ended.Started) && !ended.Ended.Equal(ended.Started) {
		t.Errorf("the failed stream: %+v", ended)
	}

	// The sink's stream ends when its client goes (cleanly, or canceled as the server saw
	// it); it is in the history as the sink, with the row and transaction it sent.
	cancel()
	if err := <-sinkDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the sink's stream ended: %v", err)
	}
	testkit.WaitFor(t, 30*time.Second, "the open streams to end", func() bool {
		st = f.status(t)
		return len(st.Streams) == 0 && len(st.History) == 3
	})
	var gone *statuspage.Ended
	for i, e := range st.History {
		if e.Sink == sinkName {
			gone = &st.History[i]
		}
	}
	if gone == nil || gone.RowsSent != 1 || gone.Transactions != 1 || (gone.Code != "OK" && gone.Code != "Canceled") || !isPosition(gone.Position) {
		t.Errorf("the sink in the history: %+v", gone)
	}
	page, _ = get(t, f.page+"/")
	for _, want := range []string{`<span id="history-count">3</span>`, `<span class="error">InvalidArgument: `, `/(&lt;i&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<i>") {
		t.Errorf("the filter is markup in the history:\n%s", page)
	}
}
