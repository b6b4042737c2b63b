package vstreamer

import (
	"errors"
	"sync"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// TestBatchSender hands batches to a copy chunk's sender: they go out in order, one send at
// a time, and wait returns only once all are sent; a failed send is returned by the next
// push and by wait, and the batches after it are dropped; a panic in the send ends the
// stream as a panic of the copy, naming the table.
func TestBatchSender(t *testing.T) {
	batch := func(n int) []*binlogdata.VEvent {
		return []*binlogdata.VEvent{{Type: binlogdata.VEventType_ROW, Timestamp: int64(n)}}
	}
	t.Run("in order", func(t *testing.T) {
		var mu sync.Mutex
		var got []int64
		busy := false
		o := &outbox{send: func(evs []*binlogdata.VEvent) error {
			mu.Lock()
			if busy {
				t.Error("two sends at once")
			}
			busy = true
			got = append(got, evs[0].Timestamp)
			mu.Unlock()
			mu.Lock()
			busy = false
			mu.Unlock()
			return nil
		}}
		b := o.newBatchSender("t", nil)
		for i := range 100 {
			next, err := b.push(batch(i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(next) != 0 {
				t.Fatalf("push returned a batch of %d events, want an empty one", len(next))
			}
		}
		if err := b.wait(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 100 {
			t.Fatalf("sent %d batches, want 100", len(got))
		}
		for i, ts := range got {
			if ts != int64(i) {
				t.Fatalf("batch %d sent as the %d-th", ts, i)
			}
		}
		if err := b.wait(); err != nil {
			t.Fatalf("second wait: %v", err)
		}
	})
	t.Run("failed send", func(t *testing.T) {
		boom := errors.New("client gone")
		sent := 0
		o := &outbox{send: func([]*binlogdata.VEvent) error {
			sent++
			return boom
		}}
		b := o.newBatchSender("t", nil)
		if _, err := b.push(batch(0), nil); err != nil {
			t.Fatalf("first push: %v", err)
		}
		var err error
		for i := 1; i < 1000 && err == nil; i++ {
			_, err = b.push(batch(i), nil)
		}
		if !errors.Is(err, boom) {
			t.Fatalf("push after a failed send: %v, want %v", err, boom)
		}
		if err := b.wait(); !errors.Is(err, boom) {
			t.Fatalf("wait: %v, want %v", err, boom)
		}
		if sent != 1 {
			t.Errorf("%d sends, want 1: batches after a failed send are dropped", sent)
		}
	})
	t.Run("panic", func(t *testing.T) {
		o := &outbox{send: func([]*binlogdata.VEvent) error { panic("encoder bug") }}
		b := o.newBatchSender("orders", nil)
		if _, err := b.push(batch(0), nil); err != nil {
			t.Fatal(err)
		}
		var pe *PanicError
		if err := b.wait(); !errors.As(err, &pe) || pe.Stage != StageCopy || pe.Table != "orders" || pe.Value != "encoder bug" {
			t.Fatalf("wait: %v, want a panic of the copy of orders", err)
		}
	})
}
