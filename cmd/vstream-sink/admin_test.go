package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSnapshotEndpoint(t *testing.T) {
	requests := make(chan []string, 1)
	h := snapshotHandler(requests, 50*time.Millisecond, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name, method, target string
		code                 int
		body                 string
		want                 []string
	}{
		{"request", "POST", "/snapshot?tables=a,%20b", http.StatusAccepted, "snapshot of a, b requested", []string{"a", "b"}},
		{"no tables", "POST", "/snapshot", http.StatusBadRequest, "name the tables", nil},
		{"get", "GET", "/snapshot?tables=a", http.StatusMethodNotAllowed, "POST /snapshot", nil},
		// The buffered request above is not taken: the stream is not connected.
		{"not taken", "POST", "/snapshot?tables=c", http.StatusServiceUnavailable, "not connected", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("%d %q, want %d with %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
			if tc.want != nil {
				if got := <-requests; !slices.Equal(got, tc.want) {
					t.Fatalf("request %v, want %v", got, tc.want)
				}
				requests <- []string{"held"}
			}
		})
	}
}
