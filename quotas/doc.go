// Package quotas holds sluice's rate limits: client quotas (KIP-55, issue
// 18; client.go holds the quotas in force and which one a client is held
// to, mutation.go the controller_mutation_rate token buckets of KIP-599)
// and Kafka's replication throttle (KIP-73), the limit kafka-reassign-partitions.sh
// --throttle sets on the bytes moved to new replicas:
//
//   - the broker configs leader.replication.throttled.rate and
//     follower.replication.throttled.rate (bytes per second, dynamic, per
//     broker or cluster default; Long.MAX_VALUE, the default, means no
//     limit) bound, on each broker, the bytes a leader sends to throttled
//     followers and the bytes a follower fetches for throttled replicas;
//   - the topic configs leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas name the throttled replicas
//     as partition:broker pairs, or "*" for every replica of the topic. On
//     a leader, partition p is throttled when p:<leader id> is listed in
//     the leader list; on a follower when p:<follower id> is in the
//     follower list.
//
// As in Kafka, a replica in the ISR is never throttled, and the throttle
// gates whole fetches rather than cutting them short: while the broker's
// rate is exceeded, throttled partitions are left out of fetches (on the
// follower) or answered without records (on the leader); once it is not,
// a fetch moves as much as it normally would and its bytes are charged.
//
// Rate is a token bucket with debt, one per broker and direction, holding
// at most one second of tokens; it takes the time as an argument, so tests
// step it without a clock.
package quotas
