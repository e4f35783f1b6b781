package broker_test

// Error paths of the admin APIs (topics, partitions, configs, elections,
// reassignments, DescribeCluster) compared with Kafka's: codes and the
// messages the CLI tools print. Helpers are in error_paths_test.go.

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestDescribeClusterEndpointTypes: a controller endpoint type sent to a
// broker is MISMATCHED_ENDPOINT_TYPE and an unknown one
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka's AuthHelper answers (KIP-919).
func TestDescribeClusterEndpointTypes(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		endpointType int8
		want         int16
	}{
		{1, 0},
		{2, kerr.MismatchedEndpointType.Code},
		{0, kerr.UnsupportedEndpointType.Code},
		{5, kerr.UnsupportedEndpointType.Code},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = 1
		req.EndpointType = tc.endpointType
		_, r := c.do(req)
		resp := r.(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.want {
			t.Errorf("endpoint type %d: %s, want %s", tc.endpointType, codeName(resp.ErrorCode), codeName(tc.want))
		}
		if tc.want != 0 && (resp.ErrorMessage == nil || *resp.ErrorMessage == "") {
			t.Errorf("endpoint type %d: no error message", tc.endpointType)
		}
	}
}

// TestConfigResourceNames: config resources are checked as Kafka checks
// them. A topic name that cannot be a topic is INVALID_TOPIC_EXCEPTION,
// not UNKNOWN_TOPIC_OR_PARTITION (Topic.validate in ConfigHelper and
// ControllerConfigurationValidator); altering the empty topic name is
// INVALID_REQUEST ("Default topic resources are not allowed."); and a
// broker-logger resource must name this broker (ConfigHelper).
func TestConfigResourceNames(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	long := strings.Repeat("x", 250)
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		want int16
	}{
		{kmsg.ConfigResourceTypeTopic, "bad/name", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "..", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, long, kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "missing-t", kerr.UnknownTopicOrPartition.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", 0},
		{kmsg.ConfigResourceTypeBrokerLogger, "", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "7", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "x", kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = tc.typ, tc.name
		req.Resources = append(req.Resources, rr)
		_, r := c.do(req)
		if got := r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("describe %v %.20q: %s, want %s", tc.typ, tc.name, codeName(got), codeName(tc.want))
		}
	}
	for _, tc := range []struct {
		name string
		want int16
	}{
		{"bad/name", kerr.InvalidTopicException.Code},
		{"", kerr.InvalidRequest.Code},
		{"missing-t", kerr.UnknownTopicOrPartition.Code},
	} {
		inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
		inc.Version = 1
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		ir.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		inc.Resources = append(inc.Resources, ir)
		_, r := c.do(inc)
		if got := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("incremental alter topic %q: %s, want %s", tc.name, codeName(got), codeName(tc.want))
		}
		alt := kmsg.NewPtrAlterConfigsRequest()
		alt.Version = 2
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		ar.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		alt.Resources = append(alt.Resources, ar)
		_, r = c.do(alt)
		if got := r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("alter topic %q: %s, want %s", tc.name, codeName(got), codeName(tc.want))
		}
	}
}

// TestAdminErrorMessages: the messages a CLI prints for a missing topic or
// partition in ElectLeaders and AlterPartitionReassignments, a cancel with
// nothing to cancel, and a consumer-group heartbeat to a missing group are
// Kafka's (ReplicationControlManager.electLeader and
// alterPartitionReassignment, Errors.NO_REASSIGNMENT_IN_PROGRESS,
// GroupMetadataManager.getOrMaybeCreateConsumerGroup).
func TestAdminErrorMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	msg := func(m *string) string {
		if m == nil {
			return "<nil>"
		}
		return *m
	}
	check := func(what string, code int16, m *string, wantCode int16, want string) {
		t.Helper()
		if code != wantCode || msg(m) != want {
			t.Errorf("%s: %s %q, want %s %q", what, codeName(code), msg(m), codeName(wantCode), want)
		}
	}

	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Version = 2
	elect.TimeoutMillis = 10000
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "missing-t", Partitions: []int32{0}}, {Topic: "codes-t", Partitions: []int32{7}}}
	_, r := c.do(elect)
	er := r.(*kmsg.ElectLeadersResponse)
	if len(er.Topics) != 2 {
		t.Fatalf("elect leaders: %d topics", len(er.Topics))
	}
	p := er.Topics[0].Partitions[0]
	check("elect missing topic", p.ErrorCode, p.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "No such topic as missing-t")
	p = er.Topics[1].Partitions[0]
	check("elect missing partition", p.ErrorCode, p.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "No such partition as codes-t-7")

	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.TimeoutMillis = 10000
	alter.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{
		{Topic: "missing-t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}},
		{Topic: "codes-t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 7}, {Partition: 0}}},
	}
	_, r = c.do(alter)
	ar := r.(*kmsg.AlterPartitionAssignmentsResponse)
	if len(ar.Topics) != 2 || len(ar.Topics[1].Partitions) != 2 {
		t.Fatalf("alter reassignments: %+v", ar)
	}
	ap := ar.Topics[0].Partitions[0]
	check("reassign missing topic", ap.ErrorCode, ap.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named missing-t.")
	ap = ar.Topics[1].Partitions[0]
	check("reassign missing partition", ap.ErrorCode, ap.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "Unable to find partition codes-t:7.")
	ap = ar.Topics[1].Partitions[1]
	check("cancel without reassignment", ap.ErrorCode, ap.ErrorMessage, kerr.NoReassignmentInProgress.Code, "No partition reassignment is in progress.")

	findGroupCoordinator(t, c, "cg-missing")
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version = 1
	hb.Group, hb.MemberID, hb.MemberEpoch = "cg-missing", "member-1", 3
	var hr *kmsg.ConsumerGroupHeartbeatResponse
	whileLoading(func() int16 {
		_, r := c.do(hb)
		hr = r.(*kmsg.ConsumerGroupHeartbeatResponse)
		return hr.ErrorCode
	})
	check("heartbeat to a missing consumer group", hr.ErrorCode, hr.ErrorMessage, kerr.GroupIDNotFound.Code, "Consumer group cg-missing not found.")
}

// TestCreateTopicsRepeatedAssignment: a manual assignment that names a
// partition twice is INVALID_REPLICA_ASSIGNMENT, as Kafka's
// ReplicationControlManager.createTopic answers ("Found multiple manual
// partition assignments for partition 0"), and nothing is created; sluice
// took the last of them.
func TestCreateTopicsRepeatedAssignment(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "repeated-asg", -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{
		{Partition: 0, Replicas: []int32{1}},
		{Partition: 0, Replicas: []int32{1}},
	}
	req.Topics = append(req.Topics, rt)
	_, r := c.do(req)
	st := r.(*kmsg.CreateTopicsResponse).Topics[0]
	want := "Found multiple manual partition assignments for partition 0"
	if st.ErrorCode != kerr.InvalidReplicaAssignment.Code || st.ErrorMessage == nil || *st.ErrorMessage != want {
		t.Fatalf("repeated partition: %s %v, want INVALID_REPLICA_ASSIGNMENT %q", codeName(st.ErrorCode), st.ErrorMessage, want)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.AllowAutoTopicCreation = false
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("repeated-asg")}}
	_, r = c.do(md)
	if mt := r.(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("the refused topic exists: %s", codeName(mt.ErrorCode))
	}
}

// TestIncrementalAlterConfigsListOpMessages: APPEND or SUBTRACT on a topic
// config that is not a list carries the message of Kafka's
// ConfigurationControlManager; on a broker config, that of its
// ConfigAdminManager. Both are INVALID_CONFIG.
func TestIncrementalAlterConfigsListOpMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		typ        kmsg.ConfigResourceType
		name, key  string
		op         kmsg.IncrementalAlterConfigOp
		wantPrefix string
	}{
		{kmsg.ConfigResourceTypeTopic, "codes-t", "retention.ms", kmsg.IncrementalAlterConfigOpAppend, "Can't APPEND to key retention.ms because its type is not LIST."},
		{kmsg.ConfigResourceTypeTopic, "codes-t", "retention.ms", kmsg.IncrementalAlterConfigOpSubtract, "Can't SUBTRACT to key retention.ms because its type is not LIST."},
		{kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", kmsg.IncrementalAlterConfigOpAppend, "Config value append is not allowed for config key: log.retention.ms"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = tc.typ, tc.name
		rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: tc.key, Op: tc.op, Value: kmsg.StringPtr("1000")}}
		req.Resources = append(req.Resources, rr)
		_, r := c.do(req)
		res := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if res.ErrorCode != kerr.InvalidConfig.Code || res.ErrorMessage == nil || *res.ErrorMessage != tc.wantPrefix {
			msg := "<nil>"
			if res.ErrorMessage != nil {
				msg = *res.ErrorMessage
			}
			t.Errorf("%v %s %v: %s %q, want INVALID_CONFIG %q", tc.typ, tc.key, tc.op, codeName(res.ErrorCode), msg, tc.wantPrefix)
		}
	}
}

// TestDeleteTopicsDisabledByVersion: with delete.topic.enable=false Kafka's
// ControllerApis.deleteTopics answers INVALID_REQUEST ("Topic deletion is
// disabled.") before v3, which has no TOPIC_DELETION_DISABLED, and
// TOPIC_DELETION_DISABLED from v3.
func TestDeleteTopicsDisabledByVersion(t *testing.T) {
	n := sluicetest.Start(t, "delete.topic.enable=false")
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		v    int16
		want int16
	}{
		{1, kerr.InvalidRequest.Code},
		{2, kerr.InvalidRequest.Code},
		{3, kerr.TopicDeletionDisabled.Code},
		{6, kerr.TopicDeletionDisabled.Code},
	} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = tc.v
		req.TimeoutMillis = 10000
		req.TopicNames = []string{"codes-t"}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("codes-t")}}
		_, r := c.do(req)
		resp := r.(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != tc.want {
			got := "no topic"
			if len(resp.Topics) > 0 {
				got = codeName(resp.Topics[0].ErrorCode)
			}
			t.Errorf("v%d: %s, want %s", tc.v, got, codeName(tc.want))
		}
	}
}

// TestCreatePartitionsNoIncreaseMessages: a CreatePartitions count that is
// not an increase is INVALID_PARTITIONS with the messages of Kafka's KRaft
// controller (ReplicationControlManager.createPartitions), not those of
// the old ZooKeeper admin code.
func TestCreatePartitionsNoIncreaseMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 2, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		count int32
		want  string
	}{
		{2, "Topic already has 2 partition(s)."},
		{1, "The topic codes-t currently has 2 partition(s); 1 would not be an increase."},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		req.TimeoutMillis = 10000
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "codes-t", Count: tc.count}}
		_, r := c.do(req)
		st := r.(*kmsg.CreatePartitionsResponse).Topics[0]
		if st.ErrorCode != kerr.InvalidPartitions.Code || st.ErrorMessage == nil || *st.ErrorMessage != tc.want {
			msg := "<nil>"
			if st.ErrorMessage != nil {
				msg = *st.ErrorMessage
			}
			t.Errorf("count %d: %s %q, want INVALID_PARTITIONS %q", tc.count, codeName(st.ErrorCode), msg, tc.want)
		}
	}
}
