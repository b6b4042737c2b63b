package grpccodec

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	_ "github.com/vstream-cdc/vstream/gen/canal"
	"github.com/vstream-cdc/vstream/gen/query"
	_ "github.com/vstream-cdc/vstream/gen/topodata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	_ "github.com/vstream-cdc/vstream/gen/vtgate"
	_ "github.com/vstream-cdc/vstream/gen/vtrpc"
)

// row packs values as query.Row does: lengths, with -1 for NULL, and the values
// concatenated.
func row(values ...*string) *query.Row {
	r := &query.Row{}
	for _, v := range values {
		if v == nil {
			r.Lengths = append(r.Lengths, -1)
			continue
		}
		r.Lengths = append(r.Lengths, int64(len(*v)))
		r.Values = append(r.Values, *v...)
	}
	return r
}

func s(v string) *string { return &v }

var fields = []*query.Field{
	{Name: "id", Type: query.Type_INT64, Table: "orders", OrgTable: "orders", Database: "shop", OrgName: "id",
		ColumnLength: 20, Charset: 63, Flags: 49667, ColumnType: "bigint(20)"},
	{Name: "note", Type: query.Type_VARCHAR, Table: "orders", OrgTable: "orders", Database: "shop", OrgName: "note",
		ColumnLength: 1020, Charset: 255, ColumnType: "varchar(255)"},
	{Name: "amount", Type: query.Type_DECIMAL, Table: "orders", ColumnLength: 14, Charset: 63, Decimals: 2,
		ColumnType: "decimal(12,2)"},
}

var vgtid = &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{
	Keyspace: "shop", Shard: "0", Gtid: "MariaDB/0-1-100,1-2-3",
	TablePKs: []*binlogdata.TableLastPK{{
		TableName: "orders",
		Lastpk:    &query.QueryResult{Fields: fields[:1], Rows: []*query.Row{row(s("41"))}},
	}},
}}}

// events has an event of every type vstreamd sends, with the fields it fills for it.
func events() []*binlogdata.VEvent {
	src := &binlogdata.EventSource{File: "mysql-bin.000003", StartPos: 4, EndPos: 1 << 40, ServerId: math.MaxUint32}
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_GTID, Gtid: "MariaDB/0-1-100", Timestamp: 1700000000, CurrentTime: 1700000000123456789},
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, Source: src, EventGtid: "0-1-100",
			CommitParent: 99, SequenceNumber: 100},
		{Type: binlogdata.VEventType_FIELD, Keyspace: "shop", Shard: "0", FieldEvent: &binlogdata.FieldEvent{
			TableName: "orders", Fields: fields, Keyspace: "shop", Shard: "0", EnumSetStringValues: true}},
		{Type: binlogdata.VEventType_ROW, Keyspace: "shop", Shard: "0", Source: src, RowEvent: &binlogdata.RowEvent{
			TableName: "orders", Keyspace: "shop", Shard: "0", Flags: 1, RowChanges: []*binlogdata.RowChange{
				{After: row(s("1"), s("a note ✓"), s("1.25"))},
				{Before: row(s("2"), nil, s("-0.50")), After: row(s("2"), s(""), nil),
					DataColumns:       &binlogdata.RowChange_Bitmap{Count: 3, Cols: []byte{0x05}},
					JsonPartialValues: &binlogdata.RowChange_Bitmap{Count: 3, Cols: []byte{0}}, RowIndex: 7},
				{Before: row(s("3"), s(strings.Repeat("x", 300)), s("0.00"))},
			}}},
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000000},
		{Type: binlogdata.VEventType_VGTID, Vgtid: vgtid},
		{Type: binlogdata.VEventType_DDL, Statement: "ALTER TABLE orders ADD COLUMN x INT", Source: src},
		{Type: binlogdata.VEventType_OTHER, Statement: "GRANT SELECT ON shop.* TO 'r'@'%'"},
		{Type: binlogdata.VEventType_ROWS_QUERY, Statement: "INSERT INTO orders VALUES (1, 'a', 1.25)"},
		{Type: binlogdata.VEventType_HEARTBEAT, CurrentTime: 1, Throttled: true, ThrottledReason: "replica lag"},
		{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
			TableLastPK: vgtid.ShardGtids[0].TablePKs[0], Completed: true}},
		{Type: binlogdata.VEventType_COPY_COMPLETED, Keyspace: "shop", Shard: "0"},
		{Type: binlogdata.VEventType_JOURNAL, Journal: &binlogdata.Journal{Id: -5, MigrationType: binlogdata.MigrationType_SHARDS,
			Tables: []string{"orders"}, LocalPosition: "MariaDB/0-1-1", ShardGtids: vgtid.ShardGtids,
			Participants: []*binlogdata.KeyspaceShard{{Keyspace: "shop", Shard: "-80"}}, SourceWorkflows: []string{"wf"}}},
		{Type: binlogdata.VEventType_ROLLBACK},
		{Type: binlogdata.VEventType_SAVEPOINT, Statement: "SAVEPOINT s1"},
		{Type: binlogdata.VEventType_VERSION},
		{Type: binlogdata.VEventType_PREVIOUS_GTIDS, Gtid: "MariaDB/0-1-99"},
		{Type: binlogdata.VEventType_INSERT, Dml: "INSERT INTO t VALUES (1)"},
		{},
	}
}

// samples are the messages checked byte for byte: every event alone and in the responses
// of the three streaming APIs, and every message type of gen/ with every field set.
func samples(t *testing.T) map[string]proto.Message {
	out := map[string]proto.Message{}
	evs := events()
	for i, ev := range evs {
		out[fmt.Sprintf("VEvent %d %s", i, ev.Type)] = ev
	}
	out["binlogdata.VStreamResponse"] = &binlogdata.VStreamResponse{Events: evs}
	out["vstream.v1.StreamResponse"] = &vstreamv1.StreamResponse{Events: evs}
	out["empty StreamResponse"] = &vstreamv1.StreamResponse{}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		name := string(mt.Descriptor().FullName())
		if strings.HasPrefix(name, "google.") || strings.HasPrefix(name, "grpc.") {
			return true
		}
		m := mt.New()
		fill(t, m, 3)
		out["filled "+name] = m.Interface()
		return true
	})
	return out
}

// fill sets every field of m (one member of each oneof, one entry of each map, two of each
// list) to a non-zero value, recursing depth levels into messages.
func fill(t *testing.T, m protoreflect.Message, depth int) {
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && m.WhichOneof(o) != nil {
			continue
		}
		if fd.Message() != nil && depth == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			mp.Set(scalar(t, fd.MapKey(), i).MapKey(), element(t, mp.NewValue, fd.MapValue(), i, depth))
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				l.Append(element(t, l.NewElement, fd, i+j, depth))
			}
		case fd.Message() != nil:
			fill(t, m.Mutable(fd).Message(), depth-1)
		default:
			m.Set(fd, scalar(t, fd, i))
		}
	}
}

func element(t *testing.T, newValue func() protoreflect.Value, fd protoreflect.FieldDescriptor, i, depth int) protoreflect.Value {
	if fd.Message() == nil {
		return scalar(t, fd, i)
	}
	v := newValue()
	fill(t, v.Message(), depth-1)
	return v
}

// scalar is a value of fd's kind that is not the default, negative where the kind allows,
// so that varint, zigzag and fixed encodings of large values are all exercised.
func scalar(t *testing.T, fd protoreflect.FieldDescriptor, i int) protoreflect.Value {
	n := int64(i + 1)
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n * 100003))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-n << 40)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(math.MaxUint32 - uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(math.MaxUint64 - uint64(n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(-1.5 * float32(n))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(math.Pi * float64(n))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d-é", fd.Name(), n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{0, byte(n), 0xff})
	case protoreflect.MessageKind, protoreflect.GroupKind:
	}
	t.Fatalf("no sample value for %s (%s)", fd.FullName(), fd.Kind())
	return protoreflect.Value{}
}

// TestSameBytesAsProtoMarshal checks wire compatibility: for every sample the generated
// marshaling writes exactly the bytes proto.Marshal does, and decoding them gives back an
// equal message, through the generated methods and through the codec.
func TestSameBytesAsProtoMarshal(t *testing.T) {
	c := encoding.GetCodecV2(Name)
	for name, m := range samples(t) {
		t.Run(name, func(t *testing.T) {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			vt, ok := m.(vtMessage)
			if !ok {
				t.Fatalf("%T has no generated MarshalVT: gen/ lacks the vtprotobuf output", m)
			}
			if n := vt.SizeVT(); n != len(want) {
				t.Errorf("SizeVT %d, proto.Marshal wrote %d bytes", n, len(want))
			}
			got, err := c.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			gotBytes := got.Materialize()
			got.Free()
			if !bytes.Equal(gotBytes, want) {
				t.Fatalf("codec bytes differ from proto.Marshal's:\n got %x\nwant %x", gotBytes, want)
			}
			back := m.ProtoReflect().New().Interface()
			if err := c.Unmarshal(split(want, 7), back); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, m) {
				t.Errorf("decoded message differs:\n got %v\nwant %v", back, m)
			}
		})
	}
}

// TestMarshalIntoUsedBuffers: the codec's pool does not clear the buffers it hands out, so a
// message marshalled into buffers that held other bytes must still come out exactly as
// proto.Marshal writes it, at several sizes.
func TestMarshalIntoUsedBuffers(t *testing.T) {
	c := encoding.GetCodecV2(Name)
	full := batch()
	for _, n := range []int{1, 3, 10, len(full.Events)} {
		m := &vstreamv1.StreamResponse{Events: full.Events[:n]}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%d bytes", len(want)), func(t *testing.T) {
			for range 3 {
				dirtyBuffers(len(want))
				got, err := c.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				gotBytes := got.Materialize()
				got.Free()
				if !bytes.Equal(gotBytes, want) {
					t.Fatalf("codec bytes differ from proto.Marshal's:\n got %x\nwant %x", gotBytes, want)
				}
			}
		})
	}
}

// TestUnmarshalFramesIntoUsedBuffers: a message that came in several frames is gathered
// into a buffer of the same uncleared pool before it is decoded, so it must decode to the
// message sent whatever the pool's buffers held before, at several sizes and frame sizes.
func TestUnmarshalFramesIntoUsedBuffers(t *testing.T) {
	c := encoding.GetCodecV2(Name)
	full := batch()
	for _, n := range []int{3, 10, len(full.Events)} {
		m := &vstreamv1.StreamResponse{Events: full.Events[:n]}
		wire, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, frame := range []int{7, 1000, 16384} {
			t.Run(fmt.Sprintf("%d bytes in %d-byte frames", len(wire), frame), func(t *testing.T) {
				dirtyBuffers(len(wire))
				var frames mem.BufferSlice
				for off := 0; off < len(wire); off += frame {
					frames = append(frames, mem.SliceBuffer(wire[off:min(off+frame, len(wire))]))
				}
				got := &vstreamv1.StreamResponse{}
				if err := c.Unmarshal(frames, got); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, m) {
					t.Fatalf("decoded message differs from the one sent:\n got %v\nwant %v", got, m)
				}
			})
		}
	}
}

// dirtyBuffers fills buffers of Pool's size class for n bytes with 0xff and gives them back, so
// that the next Gets of that size hand out buffers holding other bytes.
func dirtyBuffers(n int) {
	for range 4 {
		b := Pool.Get(n)
		for i := range *b {
			(*b)[i] = 0xff
		}
		Pool.Put(b)
	}
}

// TestDirtyPoolSizes: Get hands out the length asked for, in a capacity of the next power of
// two, and Put keeps only buffers of such a capacity.
func TestDirtyPoolSizes(t *testing.T) {
	p := &dirtyPool{}
	for _, tt := range []struct{ n, wantCap int }{{1, 1}, {2, 2}, {3, 4}, {1024, 1024}, {1025, 2048}, {300000, 1 << 19}} {
		b := p.Get(tt.n)
		if len(*b) != tt.n || cap(*b) != tt.wantCap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", tt.n, len(*b), cap(*b), tt.n, tt.wantCap)
		}
		p.Put(b)
	}
	// A buffer of another capacity is dropped, never handed out for a size it cannot hold.
	odd := make([]byte, 3000)
	p.Put(&odd)
	if b := p.Get(2049); cap(*b) != 4096 {
		t.Errorf("Get(2049) after Put of a 3000-byte buffer: cap %d, want 4096", cap(*b))
	}
}

// split cuts b into buffers of n bytes, as gRPC hands over a message that came in several
// frames.
func split(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > n {
		out = append(out, mem.SliceBuffer(b[:n]))
		b = b[n:]
	}
	return append(out, mem.SliceBuffer(b))
}

// TestRegistered checks that importing the package makes it gRPC's "proto" codec.
func TestRegistered(t *testing.T) {
	if c, ok := encoding.GetCodecV2("proto").(Codec); !ok {
		t.Fatalf("gRPC's proto codec is %T, want grpccodec.Codec", c)
	}
}

// TestLargeMessagePooled checks a message over gRPC's pooling threshold: written into a
// pooled buffer of exactly its size, with the same bytes.
func TestLargeMessagePooled(t *testing.T) {
	r := &binlogdata.RowEvent{TableName: "orders"}
	for i := 0; i < 2000; i++ {
		r.RowChanges = append(r.RowChanges, &binlogdata.RowChange{After: row(s(fmt.Sprint(i)), s("a note"), nil)})
	}
	m := &vstreamv1.StreamResponse{Events: []*binlogdata.VEvent{{Type: binlogdata.VEventType_ROW, RowEvent: r}}}
	want, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if mem.IsBelowBufferPoolingThreshold(len(want)) {
		t.Fatalf("sample of %d bytes is below the pooling threshold", len(want))
	}
	got, err := Codec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Free()
	if len(got) != 1 || got.Len() != len(want) || !bytes.Equal(got.Materialize(), want) {
		t.Fatalf("got %d buffers of %d bytes, want one of %d equal to proto.Marshal's", len(got), got.Len(), len(want))
	}
}

// TestUnmarshalResets checks that decoding into a used message replaces its content, as
// proto.Unmarshal does, rather than merging into it.
func TestUnmarshalResets(t *testing.T) {
	m := &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Statement: "old", Keyspace: "ks"}
	b, err := proto.Marshal(&binlogdata.VEvent{Type: binlogdata.VEventType_OTHER, Statement: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil {
		t.Fatal(err)
	}
	want := &binlogdata.VEvent{Type: binlogdata.VEventType_OTHER, Statement: "new"}
	if !proto.Equal(m, want) {
		t.Fatalf("got %v, want %v", m, want)
	}
}

// TestFallback checks messages without generated methods (gRPC's health service) and
// values that are not messages at all.
func TestFallback(t *testing.T) {
	m := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	if _, ok := any(m).(vtMessage); ok {
		t.Fatal("sample has generated methods: pick one without")
	}
	want, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Codec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Materialize(), want) {
		t.Fatalf("got %x, want %x", got.Materialize(), want)
	}
	back := &healthpb.HealthCheckResponse{}
	if err := (Codec{}).Unmarshal(split(want, 1), back); err != nil || !proto.Equal(back, m) {
		t.Fatalf("got %v, %v; want %v", back, err, m)
	}
	if _, err := (Codec{}).Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
	if err := (Codec{}).Unmarshal(split(want, 1), new(int)); err == nil {
		t.Error("Unmarshal into an int: no error")
	}
}

// TestUnmarshalBadInput checks that truncated or malformed bytes give an error, not a
// panic or a partial message passed off as whole.
func TestUnmarshalBadInput(t *testing.T) {
	good, err := proto.Marshal(&vstreamv1.StreamResponse{Events: events()})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"truncated":       good[:len(good)-3],
		"bad wire type":   {0x0f},
		"length past end": {0x0a, 0x7f, 0x01},
		"overlong varint": {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"field number 0":  {0x00, 0x01},
		"nested past end": {0x0a, 0x02, 0x12, 0x05},
	} {
		t.Run(name, func(t *testing.T) {
			if err := (Codec{}).Unmarshal(split(b, 4), &vstreamv1.StreamResponse{}); err == nil {
				t.Fatal("no error")
			}
			if err := proto.Unmarshal(b, &vstreamv1.StreamResponse{}); err == nil {
				t.Fatal("proto.Unmarshal accepts it too: not a bad input")
			}
		})
	}
}
