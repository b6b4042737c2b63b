package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/client"
)

func TestSnapshotEndpoint(t *testing.T) {
	requests := make(chan client.Snapshot, 1)
	h := snapshotHandler(requests, 50*time.Millisecond, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name, method, target string
		code                 int
		body                 string
		want                 *client.Snapshot
	}{
		{"request", "POST", "/snapshot?tables=a,%20b", http.StatusAccepted, "snapshot of a, b requested", &client.Snapshot{Tables: []string{"a", "b"}}},
		{"where", "POST", "/snapshot?tables=a&where=id%3E5", http.StatusAccepted, "snapshot of a requested", &client.Snapshot{Tables: []string{"a"}, Where: "id>5"}},
		{"no tables", "POST", "/snapshot", http.StatusBadRequest, "name the tables", nil},
		{"get", "GET", "/snapshot?tables=a", http.StatusMethodNotAllowed, "POST /snapshot", nil},
		// The channel is full: the stream is not connected.
		{"not taken", "POST", "/snapshot?tables=c", http.StatusServiceUnavailable, "not connected", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == http.StatusServiceUnavailable {
				requests <- client.Snapshot{}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("%d %q, want %d with %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
			if tc.want != nil {
				if got := <-requests; !slices.Equal(got.Tables, tc.want.Tables) || got.Where != tc.want.Where {
					t.Fatalf("request %+v, want %+v", got, *tc.want)
				}
			}
		})
	}
}
