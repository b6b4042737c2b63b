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

// TestSnapshotEndpoint: POST /snapshot hands the request to the stream of the pipeline it
// names, which may be left out when there is one; the errors say what to fix.
func TestSnapshotEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, method, target string
		pipelines            []string
		code                 int
		body                 string
		// to is the pipeline that must get want.
		to   string
		want *client.Snapshot
	}{
		{"request", "POST", "/snapshot?tables=a,%20b", []string{"one"}, http.StatusAccepted, "snapshot of a, b requested", "one", &client.Snapshot{Tables: []string{"a", "b"}}},
		{"where", "POST", "/snapshot?tables=a&where=id%3E5", []string{"one"}, http.StatusAccepted, "snapshot of a requested", "one", &client.Snapshot{Tables: []string{"a"}, Where: "id>5"}},
		{"the one pipeline named", "POST", "/snapshot?tables=a&pipeline=one", []string{"one"}, http.StatusAccepted, "snapshot of a requested", "one", &client.Snapshot{Tables: []string{"a"}}},
		{"one of two", "POST", "/snapshot?tables=c&pipeline=audit", []string{"orders", "audit"}, http.StatusAccepted, "snapshot of c requested", "audit", &client.Snapshot{Tables: []string{"c"}}},
		{"two, none named", "POST", "/snapshot?tables=c", []string{"orders", "audit"}, http.StatusBadRequest, "name the pipeline: POST /snapshot?pipeline=P&tables=t1,t2, P one of audit, orders", "", nil},
		{"unknown pipeline", "POST", "/snapshot?tables=c&pipeline=nope", []string{"orders", "audit"}, http.StatusNotFound, `no pipeline "nope": the pipelines are audit, orders`, "", nil},
		{"no tables", "POST", "/snapshot", []string{"one"}, http.StatusBadRequest, "name the tables", "", nil},
		{"get", "GET", "/snapshot?tables=a", []string{"one"}, http.StatusMethodNotAllowed, "POST /snapshot", "", nil},
		// The channel is full: the stream is not connected.
		{"not taken", "POST", "/snapshot?tables=c", []string{"one"}, http.StatusServiceUnavailable, "not connected", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chans := map[string]chan client.Snapshot{}
			requests := map[string]chan<- client.Snapshot{}
			for _, n := range tc.pipelines {
				chans[n] = make(chan client.Snapshot, 1)
				requests[n] = chans[n]
			}
			if tc.code == http.StatusServiceUnavailable {
				chans["one"] <- client.Snapshot{}
			}
			h := snapshotHandler(requests, 50*time.Millisecond, slog.New(slog.DiscardHandler))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("%d %q, want %d with %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
			for n, ch := range chans {
				if tc.code == http.StatusServiceUnavailable {
					break
				}
				select {
				case got := <-ch:
					if n != tc.to || !slices.Equal(got.Tables, tc.want.Tables) || got.Where != tc.want.Where {
						t.Fatalf("pipeline %s got %+v, want %s to get %+v", n, got, tc.to, tc.want)
					}
				default:
					if n == tc.to {
						t.Fatalf("pipeline %s got no request", n)
					}
				}
			}
		})
	}
}
