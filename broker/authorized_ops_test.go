package broker_test

// Authorized operations (KIP-430) as a client sees them. These nodes have
// no authorizer (authorizer.class.name is empty), so they answer as Kafka
// 4.x does without one (AuthHelper.authorizedOperations with no
// authorizer; acls_test.go checks them with ACLs): when the request
// asks for them, every operation the resource type supports
// (AclEntry.supportedOperations), bit n for the operation with code n;
// when it does not, or for an entry in error that Kafka leaves alone,
// Integer.MIN_VALUE.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's bitfields without an authorizer, spelled out from the operation
// codes (READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
// CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
// IDEMPOTENT_WRITE 12).
const (
	wantTopicOps   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // 3576, 8 operations
	wantClusterOps int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // 8096, 7 operations
	wantGroupOps   int32 = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11                      // 3400, 5 operations
	opsOmitted     int32 = math.MinInt32
)

// TestAuthorizedOperations: Metadata, DescribeCluster, DescribeGroups,
// ConsumerGroupDescribe and DescribeTopicPartitions fill the authorized
// operations as Kafka without an authorizer does, with and without the
// include flags.
func TestAuthorizedOperations(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "ops-t", 2, nil)
	c := dialRawConn(t, n.Addr())
	check := func(what string, got, want int32) {
		t.Helper()
		if got != want {
			t.Errorf("%s: authorized operations %d, want %d", what, got, want)
		}
	}

	// Metadata: the cluster's operations only in v8–v10, the topic's from
	// v8, for a topic that exists and for a missing one asked for by name;
	// a topic asked for by an unknown id (v12+, in a request of its own, as
	// Kafka ignores the names of a request that has ids) is left alone.
	metadata := func(v int16, include bool, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		req.AllowAutoTopicCreation = false
		req.IncludeClusterAuthorizedOperations = include && v <= 10
		req.IncludeTopicAuthorizedOperations = include
		req.Topics = topics
		_, r := c.do(req)
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != len(topics) {
			t.Fatalf("metadata v%d: %d topics answered, want %d", v, len(resp.Topics), len(topics))
		}
		return resp
	}
	for _, v := range []int16{8, 10, 12, 13} {
		for _, include := range []bool{false, true} {
			var topics []kmsg.MetadataRequestTopic
			for _, name := range []string{"ops-t", "ops-missing"} {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				topics = append(topics, rt)
			}
			resp := metadata(v, include, topics...)
			wantCluster, wantTopic := opsOmitted, opsOmitted
			if include {
				wantTopic = wantTopicOps
				if v <= 10 {
					wantCluster = wantClusterOps
				}
			}
			check(metaWhat(v, include, "cluster"), resp.AuthorizedOperations, wantCluster)
			for _, mt := range resp.Topics {
				if *mt.Topic == "ops-missing" && mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("metadata v%d: ops-missing answered %s", v, codeName(mt.ErrorCode))
				}
				check(metaWhat(v, include, *mt.Topic), mt.AuthorizedOperations, wantTopic)
			}
			if v >= 12 {
				rt := kmsg.NewMetadataRequestTopic()
				rt.TopicID = [16]byte{1, 2, 3}
				mt := metadata(v, include, rt).Topics[0]
				if mt.ErrorCode != kerr.UnknownTopicID.Code {
					t.Fatalf("metadata v%d: unknown topic id answered %s", v, codeName(mt.ErrorCode))
				}
				check(metaWhat(v, include, "unknown topic id"), mt.AuthorizedOperations, opsOmitted)
			}
		}
	}

	// DescribeCluster.
	for _, include := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = include
		_, r := c.do(req)
		want := opsOmitted
		if include {
			want = wantClusterOps
		}
		check(flagWhat("describe cluster", include), r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations, want)
	}

	// DescribeTopicPartitions has no flag: always filled, for a missing
	// topic too (DescribeTopicPartitionsRequestHandler).
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 100
	for _, name := range []string{"ops-t", "ops-missing"} {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		dtp.Topics = append(dtp.Topics, rt)
	}
	_, r := c.do(dtp)
	for _, st := range r.(*kmsg.DescribeTopicPartitionsResponse).Topics {
		check("describe topic partitions "+*st.Topic, st.AuthorizedOperations, wantTopicOps)
	}

	// A classic group with one member, and a KIP-848 consumer group.
	findGroupCoordinator(t, c, "ops-g")
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 5
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "ops-g", 30000, 30000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	var jr *kmsg.JoinGroupResponse
	whileLoading(func() int16 {
		_, r := c.do(join)
		jr = r.(*kmsg.JoinGroupResponse)
		return jr.ErrorCode
	})
	if jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		_, r := c.do(join)
		jr = r.(*kmsg.JoinGroupResponse)
	}
	if jr.ErrorCode != 0 {
		t.Fatalf("join ops-g: %s", codeName(jr.ErrorCode))
	}
	joinConsumerGroup(t, c, "ops-cg", "ops-t")

	// DescribeGroups: filled for each group answered without error — before
	// v6 that includes an unknown group, answered Dead; from v6 an unknown
	// group is GROUP_ID_NOT_FOUND and left alone.
	for _, v := range []int16{3, 5, 6} {
		for _, include := range []bool{false, true} {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version = v
			req.Groups = []string{"ops-g", "ops-unknown"}
			req.IncludeAuthorizedOperations = include
			_, r := c.do(req)
			for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
				want := opsOmitted
				if include && g.ErrorCode == 0 {
					want = wantGroupOps
				}
				if g.Group == "ops-unknown" && (v >= 6) != (g.ErrorCode == kerr.GroupIDNotFound.Code) {
					t.Fatalf("describe groups v%d: ops-unknown answered %s", v, codeName(g.ErrorCode))
				}
				check(metaWhat(v, include, "describe groups "+g.Group), g.AuthorizedOperations, want)
			}
		}
	}

	// ConsumerGroupDescribe: the same, a classic or unknown group being
	// GROUP_ID_NOT_FOUND.
	for _, include := range []bool{false, true} {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"ops-cg", "ops-unknown"}
		req.IncludeAuthorizedOperations = include
		_, r := c.do(req)
		groups := r.(*kmsg.ConsumerGroupDescribeResponse).Groups
		if len(groups) != 2 || groups[0].ErrorCode != 0 || groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("consumer group describe: %+v", groups)
		}
		want := opsOmitted
		if include {
			want = wantGroupOps
		}
		check(flagWhat("consumer group describe ops-cg", include), groups[0].AuthorizedOperations, want)
		check(flagWhat("consumer group describe ops-unknown", include), groups[1].AuthorizedOperations, opsOmitted)
	}
}

// TestAuthorizedOperationsKadm: kadm's Metadata with WithAuthorizedOps and
// its DescribeGroups / DescribeConsumerGroups decode the operations a
// client of Kafka without an authorizer gets.
func TestAuthorizedOperationsKadm(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "ops-k", 1, nil)
	adm := n.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	m, err := adm.Metadata(kadm.WithAuthorizedOps(ctx), "ops-k")
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "kadm topic", m.Topics["ops-k"].AuthorizedOperations, wantTopicOps)

	c := dialRawConn(t, n.Addr())
	joinConsumerGroup(t, c, "ops-kg", "ops-k")
	dg, err := adm.DescribeGroups(ctx, "ops-kg")
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "kadm describe groups", dg["ops-kg"].AuthorizedOperations, wantGroupOps)
	dcg, err := adm.DescribeConsumerGroups(ctx, "ops-kg")
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "kadm describe consumer groups", dcg["ops-kg"].AuthorizedOperations, wantGroupOps)
}

// wantOps checks that kadm decoded exactly the operations of bitfield want.
func wantOps(t *testing.T, what string, got []kadm.ACLOperation, want int32) {
	t.Helper()
	w := kadm.DecodeACLOperations(want)
	slices.Sort(got)
	if !slices.Equal(got, w) {
		t.Errorf("%s: operations %v, want %v", what, got, w)
	}
}

func metaWhat(v int16, include bool, what string) string {
	return fmt.Sprintf("%s v%d", flagWhat(what, include), v)
}

func flagWhat(what string, include bool) string {
	if include {
		return what + " (asked)"
	}
	return what + " (not asked)"
}

// joinConsumerGroup makes member "ops-member" of KIP-848 group subscribed
// to topic, through c, once the group's coordinator has loaded.
func joinConsumerGroup(t *testing.T, c *rawConn, group, topic string) {
	t.Helper()
	findGroupCoordinator(t, c, group)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version = 1
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "ops-member", 30000
	hb.SubscribedTopicNames = []string{topic}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if code := whileLoading(func() int16 {
		_, r := c.do(hb)
		return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}); code != 0 {
		t.Fatalf("heartbeat %s: %s", group, codeName(code))
	}
}
