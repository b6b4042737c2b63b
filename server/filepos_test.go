package server

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/server/encoder/canalproto"
	"github.com/vstream-cdc/vstream/server/encoder/drs"
	"github.com/vstream-cdc/vstream/server/encoder/streamsets"
	"github.com/vstream-cdc/vstream/vstreamer"
)

func filePosConfig() vstreamer.Config {
	cfg := dbConfig()
	cfg.Positions = vstreamer.PositionsFilePos
	return cfg
}

// TestFilePosAPIs runs every API of a server streaming file positions: each works, with
// FilePos positions, or refuses with InvalidArgument saying what to use instead.
func TestFilePosAPIs(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS fpa (id INT PRIMARY KEY, v VARCHAR(10))")
	cc := dial(t, serve(t, filePosConfig(), Options{}))
	rules := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "fpa"}}}
	const insteadOfCopy = `start from "current" or a FilePos/<file>:<offset> position, or run vstreamd with --positions gtid`
	n := 0
	insert := func() {
		n++
		testkit.MustExec(t, db, "INSERT INTO fpa VALUES ("+itoa(n)+", 'x')")
	}

	// Native API, vevent and every format: a row arrives with a FilePos position, or the
	// format is refused.
	refused := map[string]bool{canalproto.Name: true, drs.NameJSON: true, drs.NameJSONC: true, streamsets.Name: true}
	for _, format := range Formats {
		t.Run("Stream/"+format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			start := startMsg("current", rules)
			start.GetStart().Format = format
			if err := st.Send(start); err != nil {
				t.Fatal(err)
			}
			first, err := st.Recv()
			if refused[format] {
				if s := status.Convert(err); s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), "--positions gtid") ||
					!strings.Contains(s.Message(), "streamsets with offset=file") {
					t.Fatalf("got %v %q, want InvalidArgument saying what to use", s.Code(), s.Message())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			insert()
			for r := first; ; {
				pos := r.GetPosition()
				for _, ev := range r.GetEvents() {
					if ev.GetType() == binlogdata.VEventType_VGTID {
						pos = ev.GetVgtid()
					}
				}
				if pos != nil {
					if g := pos.GetShardGtids()[0].GetGtid(); !strings.HasPrefix(g, "FilePos/") {
						t.Fatalf("position %q is not a file position", g)
					}
				}
				if len(r.GetMessages()) > 0 || hasType(types(r.GetEvents()), binlogdata.VEventType_ROW) {
					break
				}
				if r, err = st.Recv(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Run("Stream/offset=file", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := startMsg("current", rules)
		start.GetStart().Format = "streamsets"
		start.GetStart().FormatOptions = map[string]string{"offset": "file"}
		if err := st.Send(start); err != nil {
			t.Fatal(err)
		}
		// The start at "current" is sent before the row is written.
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		insert()
		for {
			r, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if len(r.GetMessages()) > 0 {
				break
			}
		}
	})
	t.Run("Stream/copy", func(t *testing.T) {
		s := firstError(t, cc, context.Background(), startMsg("", rules))
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), insteadOfCopy) {
			t.Fatalf("got %v %q", s.Code(), s.Message())
		}
	})
	t.Run("Stream/GTID position", func(t *testing.T) {
		s := firstError(t, cc, context.Background(), startMsg("MariaDB/0-1-1", rules))
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), "give FilePos/<file>:<offset>") {
			t.Fatalf("got %v %q", s.Code(), s.Message())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Run("vtgate VStream", func(t *testing.T) {
		st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: "current"}}},
			Filter: rules,
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Recv()
		if err != nil || !strings.HasPrefix(r.GetEvents()[0].GetVgtid().GetShardGtids()[0].GetGtid(), "FilePos/") {
			t.Fatalf("first response %v, %v: want a FilePos VGTID", r, err)
		}
		// A copy through vtgate's API is refused too.
		st, err = vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: ""}}},
			Filter: rules,
		})
		if err == nil {
			_, err = st.Recv()
		}
		if s := status.Convert(err); s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), insteadOfCopy) {
			t.Fatalf("copy: got %v %q", s.Code(), s.Message())
		}
	})
	t.Run("tablet VStream", func(t *testing.T) {
		st, err := queryservice.NewQueryClient(cc).VStream(ctx, &binlogdata.VStreamRequest{Position: "current", Filter: rules})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) == 0 {
			r, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, types(r.GetEvents())[0].String())
		}
		insert()
		for !hasType(got, "ROW") {
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			for _, ev := range r.GetEvents() {
				got = append(got, ev.GetType().String())
				if g := ev.GetGtid(); ev.GetType() == binlogdata.VEventType_GTID && !strings.HasPrefix(g, "FilePos/") {
					t.Fatalf("GTID %q", g)
				}
			}
		}
	})
	qc := queryservice.NewQueryClient(cc)
	reads := map[string]func() error{
		"VStreamRows": func() error {
			st, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Query: "select * from fpa"})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
		"VStreamTables": func() error {
			st, err := qc.VStreamTables(ctx, &binlogdata.VStreamTablesRequest{})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
		"VStreamResults": func() error {
			st, err := qc.VStreamResults(ctx, &binlogdata.VStreamResultsRequest{Query: "select * from fpa"})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
		"BinlogDumpGTID": func() error {
			st, err := qc.BinlogDumpGTID(ctx, &binlogdata.BinlogDumpGTIDRequest{Flags: 1})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			s := status.Convert(read())
			if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), name) || !strings.Contains(s.Message(), "--positions gtid") {
				t.Fatalf("got %v %q, want InvalidArgument naming %s and --positions gtid", s.Code(), s.Message(), name)
			}
		})
	}
}

func hasType[T interface {
	~string | binlogdata.VEventType
}](evs []T, typ T) bool {
	return slices.Contains(evs, typ)
}

func itoa(n int) string { return strconv.Itoa(n) }

func types(evs []*binlogdata.VEvent) []binlogdata.VEventType {
	out := make([]binlogdata.VEventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.GetType()
	}
	return out
}
