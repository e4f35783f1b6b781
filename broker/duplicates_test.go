package broker_test

// Duplicate entries in one request (issue 14): each API treats a topic,
// partition, resource or group named twice as Kafka does, merging the
// copies or refusing them with INVALID_REQUEST, so a small request cannot
// make a large answer by repetition.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestMetadataDuplicateTopicAnsweredOnce(t *testing.T) {
	n := sluicetest.Start(t, "auto.create.topics.enable=false")
	createTopic(t, n, "md-dup", 3, nil)
	conn := dialRawConn(t, n.Addr())

	for _, name := range []string{"md-dup", "md-missing"} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		for i := 0; i < 1000; i++ {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		size, r := conn.do(req)
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("Metadata naming %s 1000 times: %d topics answered in %d bytes, want 1", name, len(resp.Topics), size)
		}
	}
}

func TestDescribeConfigsDuplicateResourceAnsweredOnce(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "dc-dup", 1, nil)
	conn := dialRawConn(t, n.Addr())

	describe := func(typ kmsg.ConfigResourceType, name string, copies int) (int64, *kmsg.DescribeConfigsResponse) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		req.IncludeSynonyms = true
		req.IncludeDocumentation = true
		for i := 0; i < copies; i++ {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType = typ
			rr.ResourceName = name
			req.Resources = append(req.Resources, rr)
		}
		size, r := conn.do(req)
		if r == nil {
			t.Fatalf("DescribeConfigs of %d copies of %s: response of %d bytes", copies, name, size)
		}
		return size, r.(*kmsg.DescribeConfigsResponse)
	}
	for _, res := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "dc-dup"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeTopic, "dc-missing"}} {
		one, _ := describe(res.typ, res.name, 1)
		size, resp := describe(res.typ, res.name, 1000)
		if len(resp.Resources) != 1 {
			t.Fatalf("DescribeConfigs naming %s 1000 times: %d resources answered in %d bytes (one: %d bytes), want 1", res.name, len(resp.Resources), size, one)
		}
		if size != one {
			t.Fatalf("DescribeConfigs naming %s 1000 times: %d bytes, once: %d bytes", res.name, size, one)
		}
	}
}

func TestListOffsetsDuplicatePartitionInvalid(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "lo-dup", 2, nil)
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lo-dup"
	for _, p := range []int32{0, 1, 0, 0} {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	_, r := dialRawConn(t, n.Addr()).do(req)
	resp := r.(*kmsg.ListOffsetsResponse)
	got := map[int32][]int16{}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			got[sp.Partition] = append(got[sp.Partition], sp.ErrorCode)
		}
	}
	if len(got[0]) != 1 || got[0][0] != kerr.InvalidRequest.Code || len(got[1]) != 1 || got[1][0] != 0 {
		t.Fatalf("ListOffsets of partitions 0, 1, 0, 0: error codes by partition %v, want 0: [%d], 1: [0]", got, kerr.InvalidRequest.Code)
	}
}

func TestDeleteRecordsDuplicatePartitionMerged(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "dr-dup", 1, nil)
	cl := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceBatches(t, cl, "dr-dup", []int32{0}, 4, 10)

	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = 2
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "dr-dup"
	for _, off := range []int64{1, 2} {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition = 0
		rp.Offset = off
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	_, r := dialRawConn(t, n.Addr()).do(req)
	resp := r.(*kmsg.DeleteRecordsResponse)
	var got []kmsg.DeleteRecordsResponseTopicPartition
	for _, st := range resp.Topics {
		got = append(got, st.Partitions...)
	}
	// Kafka keeps the partition's last entry.
	if len(got) != 1 || got[0].ErrorCode != 0 || got[0].LowWatermark != 2 {
		t.Fatalf("DeleteRecords of partition 0 to 1 then 2: %+v, want one answer with low watermark 2", got)
	}
}

func TestDeleteTopicsDuplicateInvalid(t *testing.T) {
	n := sluicetest.Start(t)
	for _, name := range []string{"dt-names", "dt-v6", "dt-ids"} {
		createTopic(t, n, name, 1, nil)
	}
	conn := dialRawConn(t, n.Addr())
	ids := topicIDs(t, n)

	check := func(desc string, resp *kmsg.DeleteTopicsResponse, wantMessage string) {
		t.Helper()
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("%s: %d answers %+v, want one INVALID_REQUEST", desc, len(resp.Topics), resp.Topics)
		}
		if m := resp.Topics[0].ErrorMessage; wantMessage != "" && (m == nil || *m != wantMessage) {
			t.Fatalf("%s: message %v, want %q", desc, m, wantMessage)
		}
	}

	v5 := kmsg.NewPtrDeleteTopicsRequest()
	v5.Version = 5
	v5.TimeoutMillis = 10000
	v5.TopicNames = []string{"dt-names", "dt-names", "dt-names"}
	_, r := conn.do(v5)
	check("v5 naming dt-names three times", r.(*kmsg.DeleteTopicsResponse), "Duplicate topic name.")

	v6 := kmsg.NewPtrDeleteTopicsRequest()
	v6.Version = 6
	v6.TimeoutMillis = 10000
	for i := 0; i < 2; i++ {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("dt-v6")
		v6.Topics = append(v6.Topics, rt)
	}
	_, r = conn.do(v6)
	check("v6 naming dt-v6 twice", r.(*kmsg.DeleteTopicsResponse), "Duplicate topic name.")

	v6.Topics = nil
	for i := 0; i < 2; i++ {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = ids["dt-ids"]
		v6.Topics = append(v6.Topics, rt)
	}
	_, r = conn.do(v6)
	check("v6 giving dt-ids' id twice", r.(*kmsg.DeleteTopicsResponse), "Duplicate topic id.")

	// An entry with both a name and an id, or neither, is refused.
	v6.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("dt-v6"), TopicID: ids["dt-v6"]}}
	_, r = conn.do(v6)
	check("v6 giving dt-v6's name and id", r.(*kmsg.DeleteTopicsResponse), "You may not specify both topic name and topic id.")
	v6.Topics = []kmsg.DeleteTopicsRequestTopic{{}}
	_, r = conn.do(v6)
	check("v6 giving neither name nor id", r.(*kmsg.DeleteTopicsResponse), "Neither topic name nor id were specified.")

	// None of them was deleted.
	after := topicIDs(t, n)
	for _, name := range []string{"dt-names", "dt-v6", "dt-ids"} {
		if _, ok := after[name]; !ok {
			t.Fatalf("topic %s was deleted by a request that named it twice", name)
		}
	}
}

// topicIDs returns the id of every topic, by name.
func topicIDs(t *testing.T, n *sluicetest.Node) map[string][16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := n.Admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][16]byte{}
	for name, d := range topics {
		out[name] = d.ID
	}
	return out
}

// topicConfig returns the value of key for topic, as DescribeConfigs
// reports it.
func topicConfig(t *testing.T, n *sluicetest.Node, topic, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := n.Admin().DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	t.Fatalf("topic %s has no config %s", topic, key)
	return ""
}

func TestAlterConfigsDuplicateResourceInvalid(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "ac-dup", 1, nil)
	conn := dialRawConn(t, n.Addr())
	before := topicConfig(t, n, "ac-dup", "retention.ms")

	legacy := kmsg.NewPtrAlterConfigsRequest()
	legacy.Version = 1
	for _, v := range []string{"1000", "2000"} {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeTopic
		rr.ResourceName = "ac-dup"
		rr.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr(v)}}
		legacy.Resources = append(legacy.Resources, rr)
	}
	_, r := conn.do(legacy)
	for i, sr := range r.(*kmsg.AlterConfigsResponse).Resources {
		if sr.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("AlterConfigs naming ac-dup twice: answer %d has error %d, want INVALID_REQUEST", i, sr.ErrorCode)
		}
	}
	if n := len(r.(*kmsg.AlterConfigsResponse).Resources); n != 2 {
		t.Fatalf("AlterConfigs naming ac-dup twice: %d answers, want 2", n)
	}

	incr := kmsg.NewPtrIncrementalAlterConfigsRequest()
	incr.Version = 1
	for _, v := range []string{"3000", "4000"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeTopic
		rr.ResourceName = "ac-dup"
		rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(v)}}
		incr.Resources = append(incr.Resources, rr)
	}
	_, r = conn.do(incr)
	resources := r.(*kmsg.IncrementalAlterConfigsResponse).Resources
	if len(resources) != 2 {
		t.Fatalf("IncrementalAlterConfigs naming ac-dup twice: %d answers, want 2", len(resources))
	}
	for i, sr := range resources {
		if sr.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("IncrementalAlterConfigs naming ac-dup twice: answer %d has error %d, want INVALID_REQUEST", i, sr.ErrorCode)
		}
	}

	// One resource setting one key twice.
	incr.Resources = incr.Resources[:1]
	incr.Resources[0].Configs = append(incr.Resources[0].Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("5000")})
	_, r = conn.do(incr)
	resources = r.(*kmsg.IncrementalAlterConfigsResponse).Resources
	if len(resources) != 1 || resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("IncrementalAlterConfigs setting retention.ms twice: %+v, want INVALID_REQUEST", resources)
	}
	legacy.Resources = legacy.Resources[:1]
	legacy.Resources[0].Configs = append(legacy.Resources[0].Configs, kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: kmsg.StringPtr("6000")})
	_, r = conn.do(legacy)
	if res := r.(*kmsg.AlterConfigsResponse).Resources; len(res) != 1 || res[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("AlterConfigs setting retention.ms twice: %+v, want INVALID_REQUEST", res)
	}

	if after := topicConfig(t, n, "ac-dup", "retention.ms"); after != before {
		t.Fatalf("retention.ms changed from %s to %s by refused requests", before, after)
	}
}

// commitOffset commits offset 1 of topic's partition 0 for group.
func commitOffset(t *testing.T, n *sluicetest.Node, group, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1, Metadata: strings.Repeat("m", 100)})
	resp, err := n.Admin().CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s: %v", group, err)
	}
}

func TestGroupAPIsDuplicateGroupAnsweredOnce(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "grp-dup", 1, nil)
	commitOffset(t, n, "g-dup", "grp-dup")
	conn := dialRawConn(t, n.Addr())

	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version = 5
	for i := 0; i < 100; i++ {
		describe.Groups = append(describe.Groups, "g-dup")
	}
	_, r := conn.do(describe)
	if got := len(r.(*kmsg.DescribeGroupsResponse).Groups); got != 1 {
		t.Fatalf("DescribeGroups naming g-dup 100 times: %d answers, want 1", got)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 7
	fetch.Group = "g-dup"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "grp-dup", Partitions: []int32{0, 0, 0}}, {Topic: "grp-dup", Partitions: []int32{0}}}
	_, r = conn.do(fetch)
	count := 0
	for _, st := range r.(*kmsg.OffsetFetchResponse).Topics {
		for _, sp := range st.Partitions {
			count++
			if sp.Offset != 1 {
				t.Fatalf("OffsetFetch: partition %d at %d, want 1", sp.Partition, sp.Offset)
			}
		}
	}
	if count != 1 {
		t.Fatalf("OffsetFetch v7 naming partition 0 four times: %d answers, want 1", count)
	}

	fetch8 := kmsg.NewPtrOffsetFetchRequest()
	fetch8.Version = 8
	for i := 0; i < 3; i++ {
		fetch8.Groups = append(fetch8.Groups, kmsg.OffsetFetchRequestGroup{Group: "g-dup", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "grp-dup", Partitions: []int32{0, 0}}}})
	}
	_, r = conn.do(fetch8)
	groups := r.(*kmsg.OffsetFetchResponse).Groups
	if len(groups) != 1 || len(groups[0].Topics) != 1 || len(groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch v8 naming g-dup three times: %+v, want one group, one partition", groups)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"g-dup", "g-dup", "g-none", "g-none"}
	_, r = conn.do(del)
	res := r.(*kmsg.DeleteGroupsResponse).Groups
	if len(res) != 2 || res[0].Group != "g-dup" || res[0].ErrorCode != 0 || res[1].Group != "g-none" || res[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups of g-dup, g-dup, g-none, g-none: %+v, want g-dup deleted and g-none not found, once each", res)
	}
}
