package broker

// Authorized operations (KIP-430): the int32 bitfields that Metadata,
// DescribeCluster, DescribeGroups, ConsumerGroupDescribe and
// DescribeTopicPartitions return for a topic, the cluster or a group, bit
// n set when the principal may perform the ACL operation whose code is n
// (READ 3 … IDEMPOTENT_WRITE 12), as Kafka's Utils.to32BitField encodes it.
//
// sluice has no authorizer yet (ACLs are issue 19), so every principal is
// allowed everything, as in Kafka without authorizer.class.name: its
// AuthHelper.authorizedOperations then answers every operation the
// resource type supports (AclEntry.supportedOperations): 8 for a topic, 7
// for the cluster, 5 for a group. Once ACLs exist, these become the
// operations the request's principal is allowed on the named resource,
// computed here, in one place for every handler.
//
// When a request does not ask for them, the field keeps Kafka's schema
// default, Integer.MIN_VALUE, which kmsg's Default() already sets; so
// does an entry Kafka answers in error (a group not found, a topic asked
// for by an unknown id).

import "github.com/twmb/franz-go/pkg/kmsg"

// opsBits returns the bitfield with the bit of each operation's code set.
func opsBits(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << uint(op)
	}
	return bits
}

// The operations each resource type supports (AclEntry.supportedOperations
// in Kafka 4.x), as bitfields.
var (
	topicOps = opsBits(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	clusterOps = opsBits(kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
		kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)
	groupOps = opsBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
)

// topicAuthorizedOps is the bitfield of operations allowed on the named
// topic: all a topic supports, until ACLs exist.
func topicAuthorizedOps(string) int32 { return topicOps }

// clusterAuthorizedOps is the bitfield of operations allowed on the
// cluster: all the cluster supports, until ACLs exist. (Kafka answers 0
// to a principal without DESCRIBE on the cluster.)
func clusterAuthorizedOps() int32 { return clusterOps }

// groupAuthorizedOps is the bitfield of operations allowed on the named
// group: all a group supports, until ACLs exist.
func groupAuthorizedOps(string) int32 { return groupOps }
