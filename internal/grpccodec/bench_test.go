package grpccodec

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// batch is a response like those of bench/'s binlog benchmark: transactions of 100 rows
// of ten columns, each with its BEGIN, FIELD, ROW, COMMIT and VGTID events.
func batch() *vstreamv1.StreamResponse {
	resp := &vstreamv1.StreamResponse{}
	evs := events()
	for txn := 0; txn < 4; txn++ {
		r := &binlogdata.RowEvent{TableName: "orders", Keyspace: "bench", Shard: "0"}
		for i := 0; i < 100; i++ {
			id := fmt.Sprint(txn*100 + i)
			r.RowChanges = append(r.RowChanges, &binlogdata.RowChange{After: row(s(id), s("customer-"+id),
				s("1.25"), s("7"), s("0.3333333333333333"), s("paid"), s("2024-01-02 03:04:05.678"),
				s("2024-01-02 03:04:05.678"), s("a note of modest length for each order"), s("\x07"))})
		}
		resp.Events = append(resp.Events, evs[1], evs[2],
			&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: r}, evs[4], evs[5])
	}
	return resp
}

// BenchmarkCodec compares the codec with what gRPC's default codec does (proto.Size and
// proto.MarshalAppend, proto.Unmarshal) on the same response, in the same run.
func BenchmarkCodec(b *testing.B) {
	m := batch()
	wire, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	frames := split(wire, 16384) // HTTP/2 frames as gRPC reads them
	b.Run("marshal/proto", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			// What gRPC's default codec does: size, then marshal into a pooled buffer.
			pool := mem.DefaultBufferPool()
			buf := pool.Get(proto.Size(m))
			if _, err := (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend((*buf)[:0], m); err != nil {
				b.Fatal(err)
			}
			pool.Put(buf)
		}
	})
	b.Run("marshal/vtproto", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			data, err := Codec{}.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			data.Free()
		}
	})
	b.Run("unmarshal/proto", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf := frames.MaterializeToBuffer(mem.DefaultBufferPool())
			if err := proto.Unmarshal(buf.ReadOnlyData(), &vstreamv1.StreamResponse{}); err != nil {
				b.Fatal(err)
			}
			buf.Free()
		}
	})
	b.Run("unmarshal/vtproto", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := (Codec{}).Unmarshal(frames, &vstreamv1.StreamResponse{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
