package broker

// The cost of the request-path families (metrics_requests.go) per
// answered request: what protocol.Router.Observe adds when
// metrics.listener is set.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func benchObserve(b *testing.B, req *protocol.Request, resp kmsg.Response) {
	m := &brokerMetrics{}
	now := time.Now()
	t := &protocol.RequestTimes{
		Received: now, Start: now.Add(20 * time.Microsecond), Done: now.Add(900 * time.Microsecond),
		SendStart: now.Add(950 * time.Microsecond), SendEnd: now.Add(time.Millisecond), Remote: 500 * time.Microsecond,
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observe(req, resp, t)
		}
	})
}

// BenchmarkRequestMetricsObserve: a Produce answer of three partitions.
func BenchmarkRequestMetricsObserve(b *testing.B) {
	req := &protocol.Request{Header: protocol.Header{APIKey: 0, APIVersion: 11}, Body: kmsg.NewPtrProduceRequest()}
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	for p := range int32(3) {
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition = p
		rt.Partitions = append(rt.Partitions, sp)
	}
	resp.Topics = append(resp.Topics, rt)
	benchObserve(b, req, resp)
}

// BenchmarkRequestMetricsObserveReflect: an answer of ten topics of ten
// partitions whose error codes are found by the reflect plan
// (DescribeProducers, not walked by hand).
func BenchmarkRequestMetricsObserveReflect(b *testing.B) {
	req := &protocol.Request{Header: protocol.Header{APIKey: 61, APIVersion: 0}, Body: kmsg.NewPtrDescribeProducersRequest()}
	resp := kmsg.NewPtrDescribeProducersResponse()
	for range 10 {
		rt := kmsg.NewDescribeProducersResponseTopic()
		for p := range int32(10) {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	benchObserve(b, req, resp)
}
