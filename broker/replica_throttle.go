package broker

// The replication throttle (KIP-73) as kafka-reassign-partitions.sh
// --throttle sets it; the rules are in package quotas. This node keeps one
// byte-rate bucket for what it sends as leader to throttled followers and
// one for what it fetches as follower for throttled replicas, their limits
// refreshed from the metadata image on every reconcile (dynamic broker
// config for this node, then the cluster default, then the static config).
// A replica in the ISR is never throttled.

import (
	"slices"
	"strconv"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/quotas"
)

// Replication throttle config keys.
const (
	leaderThrottleRateKey       = "leader.replication.throttled.rate"
	followerThrottleRateKey     = "follower.replication.throttled.rate"
	leaderThrottledReplicasKey  = "leader.replication.throttled.replicas"
	followerThrottleReplicasKey = "follower.replication.throttled.replicas"
)

// replicationThrottle is a broker's two replication byte-rate buckets.
type replicationThrottle struct {
	leader, follower quotas.Rate
}

// updateThrottles sets both buckets' limits, and the throttle of moves
// between log dirs, from img.
func (b *Broker) updateThrottles(img *controller.Image) {
	now := b.now()
	b.throttle.leader.SetRate(b.throttleRate(img, leaderThrottleRateKey), now)
	b.throttle.follower.SetRate(b.throttleRate(img, followerThrottleRateKey), now)
	b.updateMoveThrottle(img)
}

// throttleRate resolves a throttle rate config for this node.
func (b *Broker) throttleRate(img *controller.Image, key string) int64 {
	for _, name := range []string{b.brokerConfigName(), ""} {
		if v, ok := img.BrokerConfig(name)[key]; ok {
			return quotas.ParseRate(v)
		}
	}
	if v, ok := b.cfg.Get(key); ok {
		return quotas.ParseRate(v)
	}
	return quotas.Unlimited
}

func (b *Broker) brokerConfigName() string {
	return strconv.Itoa(int(b.cfg.NodeID))
}

// leaderThrottled reports whether this leader's answer to follower's fetch
// of partition of topic t is throttled: the partition is listed for this
// node in leader.replication.throttled.replicas and the follower is not in
// the ISR.
func (b *Broker) leaderThrottled(t *controller.Topic, p *partition, follower int32) bool {
	v := t.Configs[leaderThrottledReplicasKey]
	if v == "" || !quotas.ThrottledReplicas(v, p.tp.Partition, b.cfg.NodeID) {
		return false
	}
	return !p.inISR(follower)
}

// followerThrottled reports whether this follower's fetches of p are
// throttled: listed for this node in follower.replication.throttled.replicas
// and this node not in the ISR. It reads only the metadata image, never
// partition.mu, because the fetcher calls it holding fetcher.mu.
func (b *Broker) followerThrottled(p *partition) bool {
	img := b.metadata()
	if img == nil {
		return false
	}
	t := img.TopicsByID[p.topicID]
	if t == nil {
		return false
	}
	v := t.Configs[followerThrottleReplicasKey]
	if v == "" || !quotas.ThrottledReplicas(v, p.tp.Partition, b.cfg.NodeID) {
		return false
	}
	mp := topicPartition(t, p.tp.Partition)
	return mp == nil || !slices.Contains(mp.ISR, b.cfg.NodeID)
}

// inISR reports whether id is in the partition's ISR as this node knows it.
func (p *partition) inISR(id int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.isr, id)
}
