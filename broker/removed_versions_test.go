package broker_test

// The versions Kafka 4.0 removed (KIP-896) that sluice served until issue
// 20: OffsetCommit v0–1, OffsetFetch v0 and WriteTxnMarkers v0. ApiVersions
// lists the keys from the versions a Kafka 4.4 broker lists them from
// (OffsetCommit 2, OffsetFetch 1, WriteTxnMarkers 1), a request at a
// removed version has its connection closed, as Kafka's socket server
// closes it for a version it does not enable (none of the three answers
// has a top-level error code at those versions), and the oldest version
// left still works.

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKIP896RemovedVersions(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)

	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatal(err)
	}
	want := map[int16][2]int16{8: {2, 10}, 9: {1, 10}, 27: {1, 2}}
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("ApiVersions lists %s %d–%d, want %d–%d as Kafka 4.4", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	for key := range want {
		t.Errorf("ApiVersions does not list %s", kmsg.NameForKey(key))
	}

	commit := func(v int16) *kmsg.OffsetCommitRequest {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = v
		req.Group, req.Generation = "old-versions", -1
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "codes-t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		return req
	}
	fetch := func(v int16) *kmsg.OffsetFetchRequest {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		req.Group = "old-versions"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "codes-t", Partitions: []int32{0}}}
		return req
	}
	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.Version = 0
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "codes-t", Partitions: []int32{0}}}
	markers.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	for _, req := range []kmsg.Request{commit(0), commit(1), fetch(0), markers} {
		if err := expectClosed(n.Addr(), req); err != nil {
			t.Errorf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
	}

	// The oldest versions left: a simple consumer's commit at v2, read
	// back at v1 (errors per partition, no top-level error code).
	c := dialRawConn(t, n.Addr())
	findGroupCoordinator(t, c, "old-versions")
	if code := whileLoading(func() int16 {
		_, r := c.do(commit(2))
		return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}); code != 0 {
		t.Fatalf("OffsetCommit v2: %s", codeName(code))
	}
	_, r := c.do(fetch(1))
	got := r.(*kmsg.OffsetFetchResponse)
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 || got.Topics[0].Partitions[0].ErrorCode != 0 || got.Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("OffsetFetch v1 of the v2 commit: %+v, want offset 1", got.Topics)
	}
}
