package broker

// The pure parts of metrics_requests.go: Kafka's request and error names,
// the quantile estimate from buckets, the error-code walk.

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRequestAndErrorNames(t *testing.T) {
	follower := kmsg.NewPtrFetchRequest()
	follower.Version, follower.ReplicaID = 14, 2
	consumer := kmsg.NewPtrFetchRequest()
	consumer.Version, consumer.ReplicaID = 14, -1
	v15 := kmsg.NewPtrFetchRequest()
	v15.Version, v15.ReplicaID, v15.ReplicaState.ID = 15, -1, 3
	for _, c := range []struct {
		key  int16
		body kmsg.Request
		want string
	}{
		{1, follower, "FetchFollower"}, {1, consumer, "FetchConsumer"}, {1, v15, "FetchFollower"},
		{0, kmsg.NewPtrProduceRequest(), "Produce"}, {22, kmsg.NewPtrInitProducerIDRequest(), "InitProducerId"},
		{36, kmsg.NewPtrSASLAuthenticateRequest(), "SaslAuthenticate"}, {45, kmsg.NewPtrAlterPartitionAssignmentsRequest(), "AlterPartitionReassignments"},
	} {
		if got, _ := requestName(c.key, c.body); got != c.want {
			t.Errorf("requestName(%d) = %q, want %q", c.key, got, c.want)
		}
	}
	for code, want := range map[int16]string{0: "NONE", 6: "NOT_LEADER_OR_FOLLOWER", 3: "UNKNOWN_TOPIC_OR_PARTITION", -1: "UNKNOWN_SERVER_ERROR", 30000: "UNKNOWN_SERVER_ERROR"} {
		if got := errorName(code); got != want {
			t.Errorf("errorName(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestBucketQuantile(t *testing.T) {
	var b [numBounds + 1]uint64
	if got := bucketQuantile(0.99, b[:], 0); got != 0 {
		t.Errorf("no observation: %v", got)
	}
	// 100 observations in (1, 2.5] ms: the median interpolates halfway.
	b[4] = 100
	if got := bucketQuantile(0.5, b[:], 100); math.Abs(got-1.75) > 1e-9 {
		t.Errorf("median of 100 in (1, 2.5]: %v, want 1.75", got)
	}
	// One in +Inf above them: the 0.999 quantile is the highest bound.
	b[numBounds] = 1
	if got := bucketQuantile(0.999, b[:], 101); got != latencyBounds[numBounds-1] {
		t.Errorf("0.999 with one in +Inf: %v", got)
	}
}

func TestCountErrorsWalk(t *testing.T) {
	var errs [maxErrorCode + 1]atomic.Uint64
	// DescribeProducers goes through the reflect plan: a code per
	// partition, none at the top level.
	resp := kmsg.NewPtrDescribeProducersResponse()
	rt := kmsg.NewDescribeProducersResponseTopic()
	for _, code := range []int16{0, 0, kerr.NotLeaderForPartition.Code} {
		rp := kmsg.NewDescribeProducersResponseTopicPartition()
		rp.ErrorCode = code
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	countErrors(resp, &errs)
	if n := errs[1].Load(); n != 2 {
		t.Errorf("NONE counted %d times, want 2", n)
	}
	if n := errs[kerr.NotLeaderForPartition.Code+1].Load(); n != 1 {
		t.Errorf("NOT_LEADER_OR_FOLLOWER counted %d times, want 1", n)
	}
	// A top-level code only (ApiVersions).
	av := kmsg.NewPtrApiVersionsResponse()
	av.ErrorCode = kerr.UnsupportedVersion.Code
	countErrors(av, &errs)
	if n := errs[kerr.UnsupportedVersion.Code+1].Load(); n != 1 {
		t.Errorf("UNSUPPORTED_VERSION counted %d times, want 1", n)
	}
}
