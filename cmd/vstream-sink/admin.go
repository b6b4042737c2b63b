package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/client"
)

// snapshotWait bounds how long a snapshot request waits for the stream to take it: the
// stream takes requests while it is connected.
const snapshotWait = 10 * time.Second

// snapshotHandler serves POST /snapshot?tables=a,b[&where=cond][&pipeline=name]: the running
// stream of the pipeline copies the tables again (a Snapshot request; where, a filter rule's
// WHERE, picks the rows), their rows reaching the broker as snapshot records between the
// changes, which go on. requests holds each pipeline's channel by name; pipeline may be left
// out when there is one. 202 once the stream took the request, 503 when it is not connected
// within wait.
func snapshotHandler(requests map[string]chan<- client.Snapshot, wait time.Duration, log *slog.Logger) http.Handler {
	names := slices.Sorted(maps.Keys(requests))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST /snapshot?tables=t1,t2 copies the tables again on the running stream", http.StatusMethodNotAllowed)
			return
		}
		var tables []string
		for t := range strings.SplitSeq(r.URL.Query().Get("tables"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				tables = append(tables, t)
			}
		}
		if len(tables) == 0 {
			http.Error(w, "name the tables: POST /snapshot?tables=t1,t2", http.StatusBadRequest)
			return
		}
		name := r.URL.Query().Get("pipeline")
		if name == "" {
			if len(names) != 1 {
				http.Error(w, fmt.Sprintf("name the pipeline: POST /snapshot?pipeline=P&tables=t1,t2, P one of %s", strings.Join(names, ", ")), http.StatusBadRequest)
				return
			}
			name = names[0]
		}
		ch, ok := requests[name]
		if !ok {
			http.Error(w, fmt.Sprintf("no pipeline %q: the pipelines are %s", name, strings.Join(names, ", ")), http.StatusNotFound)
			return
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case ch <- client.Snapshot{Tables: tables, Where: r.URL.Query().Get("where")}:
			log.Info("snapshot requested", "pipeline", name, "tables", tables, "where", r.URL.Query().Get("where"))
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, "snapshot of %s requested: its rows follow in the stream; vstream_copy_rows_copied on vstreamd shows its progress\n", strings.Join(tables, ", "))
		case <-t.C:
			http.Error(w, "the stream is not connected to vstreamd: try again", http.StatusServiceUnavailable)
		case <-r.Context().Done():
		}
	})
}
