package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// errFound stops a stream once a subcommand has what it came for.
var errFound = errors.New("found")

// firstPosition streams req until its first VGTID and returns it with the batch it came in.
func firstPosition(ctx context.Context, c *client.Client, req client.Request) (*binlogdata.VGtid, []*binlogdata.VEvent, error) {
	var (
		got  *binlogdata.VGtid
		seen []*binlogdata.VEvent
	)
	err := c.Stream(ctx, req, func(_ context.Context, events []*binlogdata.VEvent) error {
		seen = append(seen, events...)
		for _, ev := range events {
			if ev.GetType() == binlogdata.VEventType_VGTID {
				got = ev.GetVgtid()
				return errFound
			}
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return got, seen, nil
	}
	return nil, nil, err
}

// positionCmd prints the server's current position: the first VGTID of a stream started at
// "current", as JSON that --position takes back.
func positionCmd(ctx context.Context, c *client.Client, cfg *config, stdout io.Writer) error {
	req := native(cfg.request)
	req.Position = currentOf(req.Position)
	req.EventTypes = []binlogdata.VEventType{binlogdata.VEventType_VGTID}
	v, _, err := firstPosition(ctx, c, req)
	if err != nil {
		return err
	}
	b, err := protojson.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode position: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", compactJSON(b))
	return err
}

// native is the request in the native format: a subcommand reads VEvents whatever --format
// says (only they can be limited to the event types it needs).
func native(req client.Request) client.Request {
	req.Format, req.FormatOptions, req.OnMessages = "", nil, nil
	return req
}

// currentOf is "current" in the keyspace of p.
func currentOf(p *binlogdata.VGtid) *binlogdata.VGtid {
	ks := ""
	if sg := p.GetShardGtids(); len(sg) > 0 {
		ks = sg[0].GetKeyspace()
	}
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: ks, Gtid: "current"}}}
}

// tableInfo is one line of vstream tables.
type tableInfo struct {
	name string
	key  []string
	why  string // why the table cannot be copied by key; "" when it can
}

// tablesCmd lists the tables the filter selects and the key each is copied by, or why it has
// none. The native API has no call that describes tables, so it asks the copy itself: a copy
// of every selected table (in chunks of one row, only its LASTPK events asked for) lists them
// in its first position, and a copy of each table alone names its key in the first LASTPK,
// or is refused with the server's reason. Nothing is printed of the rows. The listing copy
// takes tables without a key too, which it copies in one read: when the first selected table
// is such a table, listing reads it whole (the rows are not sent).
func tablesCmd(ctx context.Context, c *client.Client, cfg *config, stdout io.Writer) error {
	base := listing(cfg.request)
	names, err := selectedTables(ctx, c, base)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	w := &errWriter{w: stdout}
	for _, name := range names {
		info, err := describe(ctx, c, base, name)
		if err != nil {
			return err
		}
		switch {
		case info.why != "":
			w.printf("%s\tnot copyable: %s\n", info.name, info.why)
		case len(info.key) == 0:
			w.printf("%s\tcopyable (empty table; its key is named once it has rows)\n", info.name)
		default:
			w.printf("%s\tcopyable by key (%s)\n", info.name, strings.Join(info.key, ", "))
		}
	}
	return w.err
}

// listing is req as the listing copy asks it: one-row chunks, only FIELD and LASTPK events.
func listing(req client.Request) client.Request {
	base := native(req)
	base.Position = copyOf(base.Position)
	base.CopyChunkRows = 1
	base.EventTypes = []binlogdata.VEventType{binlogdata.VEventType_FIELD, binlogdata.VEventType_LASTPK}
	return base
}

// selectedTables lists, sorted, the tables the listing request's filter selects: a copy of
// them all names them in its first position.
func selectedTables(ctx context.Context, c *client.Client, base client.Request) ([]string, error) {
	all := base
	all.CopyTablesWithoutKey = true
	v, events, err := firstPosition(ctx, c, all)
	if err != nil {
		return nil, err
	}
	// The position names the tables still to copy; a table copied by then (an empty one,
	// copied at once) is named by its FIELD event.
	var names []string
	for _, sg := range v.GetShardGtids() {
		for _, tp := range sg.GetTablePKs() {
			names = append(names, tp.GetTableName())
		}
	}
	for _, ev := range events {
		if fe := ev.GetFieldEvent(); fe != nil {
			names = append(names, fe.GetTableName())
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// tablesCheckTimeout bounds the start-up check of --tables: a server that does not answer
// in time is left to the stream, which reports it.
const tablesCheckTimeout = 5 * time.Second

// warnUnmatched warns about each --tables rule that selects no table of the server now: such
// a stream prints nothing until a table of that name is created, which a mistyped name never
// is. It asks the server as vstream tables does: a copy of the rule's tables, which the
// server refuses, saying so, when there are none.
func warnUnmatched(ctx context.Context, c *client.Client, cfg *config, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, tablesCheckTimeout)
	defer cancel()
	for _, rule := range cfg.tableRules {
		req := listing(cfg.request)
		req.Filter = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: rule}}}
		req.CopyTablesWithoutKey = true
		_, _, err := firstPosition(ctx, c, req)
		if st := status.Convert(err); err != nil && st.Code() == codes.InvalidArgument &&
			(strings.Contains(st.Message(), "not present") || strings.Contains(st.Message(), "selects no table")) {
			fmt.Fprintf(stderr, "vstream: warning: --tables %q matches no table on the server now, so nothing of it is streamed until one exists: %s\n", rule, st.Message())
		}
		// Any other answer is the stream's to report.
	}
}

// describe copies one table to its first chunk: the LASTPK of that chunk names the key.
func describe(ctx context.Context, c *client.Client, req client.Request, name string) (tableInfo, error) {
	info := tableInfo{name: name}
	req.TablesToCopy = []string{name}
	_, events, err := firstPosition(ctx, c, req)
	if status.Code(err) == codes.FailedPrecondition {
		info.why = status.Convert(err).Message()
		return info, nil
	}
	if err != nil {
		return info, fmt.Errorf("describe %s: %w", name, err)
	}
	for _, ev := range events {
		if lp := ev.GetLastPKEvent().GetTableLastPK(); lp != nil && lp.GetTableName() == name {
			info.key = names(lp.GetLastpk().GetFields())
		}
		if fe := ev.GetFieldEvent(); fe != nil && fe.GetTableName() == name && len(info.key) == 0 {
			for _, f := range fe.GetFields() {
				if f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0 {
					info.key = append(info.key, f.GetName())
				}
			}
		}
	}
	return info, nil
}

func names(fields []*query.Field) []string {
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		out = append(out, f.GetName())
	}
	return out
}

// copyOf is a copy-first position in the keyspace of p.
func copyOf(p *binlogdata.VGtid) *binlogdata.VGtid {
	ks := ""
	if sg := p.GetShardGtids(); len(sg) > 0 {
		ks = sg[0].GetKeyspace()
	}
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: ks}}}
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// subcommand runs vstream tables or vstream position.
func subcommand(ctx context.Context, name string, cfg *config, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// A subcommand asks once: a server that cannot answer is reported, not retried forever.
	c, err := client.Dial(cfg.server, client.Options{Token: cfg.token, Logger: log, MaxRetries: 3, AckInterval: -1, Identity: "vstream", TLS: cfg.tls})
	if err != nil {
		fmt.Fprintf(stderr, "vstream %s: %v\n", name, err)
		return 1
	}
	defer func() { _ = c.Close() }()
	if name == "tables" {
		err = tablesCmd(ctx, c, cfg, stdout)
	} else {
		err = positionCmd(ctx, c, cfg, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vstream %s: vstreamd %s: %v\n", name, cfg.server, err)
		return 1
	}
	return 0
}
