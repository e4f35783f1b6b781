package broker

// Authorized operations (KIP-430): the int32 bitfields that Metadata,
// DescribeCluster, DescribeGroups, ConsumerGroupDescribe and
// DescribeTopicPartitions return for a topic, the cluster or a group, bit
// n set when the principal may perform the ACL operation whose code is n
// (READ 3 … IDEMPOTENT_WRITE 12), as Kafka's Utils.to32BitField encodes it.
//
// They are Kafka's AuthHelper.authorizedOperations: of the operations the
// resource type supports (AclEntry.supportedOperations: 8 for a topic, 7
// for the cluster, 5 for a group), those the request's principal is
// allowed on the named resource (authorize.go, requestAuthz.ops). Without
// an authorizer (authorizer.class.name empty) that is every supported
// operation, as in Kafka.
//
// When a request does not ask for them, the field keeps Kafka's schema
// default, Integer.MIN_VALUE, which kmsg's Default() already sets; so
// does an entry Kafka answers in error (a group not found, a topic asked
// for by an unknown id).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
)

// opsBits returns the bitfield with the bit of each operation's code set.
func opsBits(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << uint(op)
	}
	return bits
}

// topicAuthorizedOps is the bitfield of operations the request may
// perform on the named topic.
func (b *Broker) topicAuthorizedOps(r *protocol.Request, topic string) int32 {
	return b.authorizerFor(r).ops(kmsg.ACLResourceTypeTopic, topic)
}

// clusterAuthorizedOps is the bitfield of operations the request may
// perform on the cluster: 0 when it may not DESCRIBE the cluster, as
// Kafka's Metadata and DescribeCluster answer (AuthHelper
// computeDescribeClusterResponse, KafkaApis.handleTopicMetadataRequest).
func (b *Broker) clusterAuthorizedOps(r *protocol.Request) int32 {
	z := b.authorizerFor(r)
	if !z.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return 0
	}
	return z.ops(kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// groupAuthorizedOps is the bitfield of operations the request may
// perform on the named group.
func (b *Broker) groupAuthorizedOps(r *protocol.Request, group string) int32 {
	return b.authorizerFor(r).ops(kmsg.ACLResourceTypeGroup, group)
}
