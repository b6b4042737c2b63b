package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// TestCopyFlagsRefused: copy pacing flags out of range get InvalidArgument saying which flag
// and what to give instead.
func TestCopyFlagsRefused(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{}))
	copyWith := func(flags *vstreamv1.Flags) *vstreamv1.StreamRequest {
		return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}}, Flags: flags}}}
	}
	for _, c := range []struct {
		flags *vstreamv1.Flags
		msg   string
	}{
		{&vstreamv1.Flags{CopyParallelism: 17}, "copy_parallelism 17: want 1 to 16"},
		{&vstreamv1.Flags{CopyParallelism: -2}, "copy_parallelism -2: want 1 to 16"},
		{&vstreamv1.Flags{CopyMaxRowsPerSecond: -1}, "copy_max_rows_per_second -1: want a positive number"},
		{&vstreamv1.Flags{CopyMaxReplicationLag: durationpb.New(-time.Second)}, "copy_max_replication_lag -1s: want a positive duration"},
		{&vstreamv1.Flags{CopyMaxReplicationLag: &durationpb.Duration{Seconds: 1, Nanos: -5}}, "copy_max_replication_lag"},
	} {
		s := firstError(t, cc, context.Background(), copyWith(c.flags))
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%v: got %v %q, want InvalidArgument with %q", c.flags, s.Code(), s.Message(), c.msg)
		}
	}
}
