package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionKeyOf is the context key of a record's sink.Record.PartitionKey.
type partitionKeyOf struct{}

// withPartitionKey carries pk to the partitioner in the record's context.
func withPartitionKey(ctx context.Context, pk []byte) context.Context {
	return context.WithValue(ctx, partitionKeyOf{}, pk)
}

func partitionKey(r *kgo.Record) []byte {
	if r.Context == nil {
		return nil
	}
	pk, _ := r.Context.Value(partitionKeyOf{}).([]byte)
	return pk
}

// keyPartitioner partitions a record that carries a partition key as one with that key
// would be (Kafka's murmur2 hash, as the Java client's default partitioner), and any other
// as franz-go's sticky key partitioner does: by its key, so one key's records go to one
// partition either way.
type keyPartitioner struct{ inner kgo.Partitioner }

func newKeyPartitioner() kgo.Partitioner {
	return keyPartitioner{inner: kgo.StickyKeyPartitioner(nil)}
}

func (p keyPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &keyTopicPartitioner{inner: p.inner.ForTopic(topic)}
}

type keyTopicPartitioner struct{ inner kgo.TopicPartitioner }

func (p *keyTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return partitionKey(r) != nil || p.inner.RequiresConsistency(r)
}

func (p *keyTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if pk := partitionKey(r); pk != nil {
		return p.inner.Partition(&kgo.Record{Topic: r.Topic, Key: pk}, n)
	}
	return p.inner.Partition(r, n)
}

// OnNewBatch lets the sticky partitioner move on for records with no key.
func (p *keyTopicPartitioner) OnNewBatch() {
	if nb, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
