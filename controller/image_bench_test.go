package controller

import (
	"fmt"
	"testing"
)

// Benchmarks of applying one command to a large image: the work must be
// proportional to what the command changes, not to the image. Two shapes
// of 100,000 partitions at RF 3 on three brokers: 100 topics of 1,000
// partitions (the scale workload's) and 100,000 topics of one partition.
//
//	go test ./controller -run '^$' -bench 'BenchmarkApply' -benchmem

// benchImage returns an FSM holding topics × partitions at RF 3, with
// three registered brokers, and the topic ids.
func benchImage(b *testing.B, topics, partitions int) (*fsm, [][16]byte) {
	f := newFSM(nil)
	index := uint64(0)
	apply := func(c command) {
		data, err := encodeCommand(c)
		if err != nil {
			b.Fatal(err)
		}
		index++
		if err := f.applyEntry(index, data); err != nil {
			b.Fatal(err)
		}
	}
	apply(initClusterCmd{ClusterID: "bench"})
	for id := int32(1); id <= 3; id++ {
		apply(registerBrokerCmd{ID: id, Host: "h", Port: 9092})
	}
	ids := make([][16]byte, topics)
	var cmd createTopicsCmd
	for t := range topics {
		ids[t] = [16]byte{1, byte(t >> 16), byte(t >> 8), byte(t)}
		rec := topicRecord{Name: fmt.Sprintf("t%d", t), ID: ids[t]}
		for p := range partitions {
			r := int32(p % 3)
			rec.Replicas = append(rec.Replicas, []int32{r + 1, (r+1)%3 + 1, (r+2)%3 + 1})
		}
		cmd.Topics = append(cmd.Topics, rec)
	}
	apply(cmd)
	return f, ids
}

// BenchmarkApplyISRChange applies one AlterPartition-like change (the ISR
// of one partition shrinks and grows back) to an image of 100,000
// partitions.
func BenchmarkApplyISRChange(b *testing.B) {
	for _, shape := range []struct{ topics, partitions int }{{100, 1000}, {100000, 1}} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", shape.topics, shape.partitions), func(b *testing.B) {
			f, ids := benchImage(b, shape.topics, shape.partitions)
			idx := f.current().Index
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := f.current().TopicsByID[ids[len(ids)/2]].Partitions[0]
				isr := p.Replicas
				if i%2 == 0 {
					isr = p.Replicas[:2]
				}
				data, err := encodeCommand(changePartitionsCmd{Changes: []partitionChange{{
					TopicID: ids[len(ids)/2], PartitionEpoch: p.PartitionEpoch,
					Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: isr,
				}}})
				if err != nil {
					b.Fatal(err)
				}
				idx++
				if err := f.applyEntry(idx, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyCreateTopic applies the creation of one topic of one
// partition to an image of 100,000 partitions.
func BenchmarkApplyCreateTopic(b *testing.B) {
	for _, shape := range []struct{ topics, partitions int }{{100, 1000}, {100000, 1}} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", shape.topics, shape.partitions), func(b *testing.B) {
			f, _ := benchImage(b, shape.topics, shape.partitions)
			idx := f.current().Index
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				data, err := encodeCommand(createTopicsCmd{Topics: []topicRecord{{
					Name: fmt.Sprintf("new%d", i), ID: [16]byte{2, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)},
					Replicas: [][]int32{{1, 2, 3}},
				}}})
				if err != nil {
					b.Fatal(err)
				}
				idx++
				if err := f.applyEntry(idx, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
