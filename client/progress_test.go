package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// TestCopyProgress: the copy progress the server sends with a batch reaches OnCopyProgress
// just before the handler gets the batch, once per response; an error from it stops the stream
// as the handler's would.
func TestCopyProgress(t *testing.T) {
	progress := func(copied int64) []*vstreamv1.CopyProgress {
		return []*vstreamv1.CopyProgress{{Table: "t1", RowsCopied: copied, RowsEstimated: 25}}
	}
	_, c := serve(t, func(_ int, st serverStream) error {
		for _, r := range []*vstreamv1.StreamResponse{
			{Events: txn("1", vgtid("MariaDB/0-1-1")), CopyProgress: progress(10)},
			// Progress alone still arrives.
			{CopyProgress: progress(20)},
			{Events: txn("2", vgtid("MariaDB/0-1-2"))},
			{Events: txn("3", vgtid("MariaDB/0-1-3")), CopyProgress: progress(25)},
		} {
			if err := st.Send(r); err != nil {
				return err
			}
		}
		return idle(st)
	}, client.Options{})

	var seen []string
	enough := errors.New("enough")
	req := client.Request{OnCopyProgress: func(_ context.Context, p []*vstreamv1.CopyProgress) error {
		for _, x := range p {
			seen = append(seen, fmt.Sprintf("%s %d/%d", x.GetTable(), x.GetRowsCopied(), x.GetRowsEstimated()))
		}
		if p[0].GetRowsCopied() == 25 {
			return enough
		}
		return nil
	}}
	err := c.Stream(context.Background(), req, func(_ context.Context, events []*binlogdata.VEvent) error {
		seen = append(seen, fmt.Sprintf("batch of %d", len(events)))
		return nil
	})
	if !errors.Is(err, enough) {
		t.Fatalf("Stream() = %v, want OnCopyProgress's error", err)
	}
	want := []string{"t1 10/25", "batch of 6", "t1 20/25", "batch of 6", "t1 25/25"}
	if !slices.Equal(seen, want) {
		t.Errorf("calls %q, want %q", seen, want)
	}
}
