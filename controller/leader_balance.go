package controller

import (
	"context"
	"slices"
	"time"
)

// Automatic leader rebalance (auto.leader.rebalance.enable). After a broker
// fails and returns, the partitions it led are led elsewhere and stay so:
// elections move leadership only away from a broker, never back. Every
// leader.imbalance.check.interval.seconds the active controller measures,
// for every broker, the share of the partitions it is the preferred replica
// of (the first assigned) that it does not lead; when that share exceeds
// leader.imbalance.per.broker.percentage, those partitions whose preferred
// replica is live and in the ISR elect it, in one ChangePartitions command.
// This is the rule of Kafka's ZooKeeper controller, which the brokers'
// configs describe; KRaft elects every imbalanced partition regardless of
// the percentage.

// defaultLeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds'
// default, used when Config leaves the interval zero.
const defaultLeaderImbalanceCheckInterval = 300 * time.Second

// leaderBalanceTicker returns the channel that fires when the leadership
// loop should check leader balance, and the function that stops it. The
// channel is nil (never fires) when automatic rebalance is off.
func (c *Controller) leaderBalanceTicker() (<-chan time.Time, func()) {
	if !c.cfg.AutoLeaderRebalance {
		return nil, func() {}
	}
	interval := c.cfg.LeaderImbalanceCheckInterval
	if interval <= 0 {
		interval = defaultLeaderImbalanceCheckInterval
	}
	t := time.NewTicker(interval)
	return t.C, t.Stop
}

// balanceLeaders runs one automatic rebalance check on the active
// controller; a failure is logged and the next check tries again.
func (c *Controller) balanceLeaders(ctx context.Context) {
	members := c.members()
	c.decide.Lock()
	defer c.decide.Unlock()
	if c.requireLeader() != nil {
		return
	}
	img := c.Image()
	changes := planLeaderBalance(img, liveness(img, c.unavailable(img, members)), c.cfg.LeaderImbalancePerBrokerPercentage)
	if len(changes) == 0 {
		return
	}
	if err := c.apply(ctx, changePartitionsCmd{Changes: changes}); err != nil {
		c.log.Warn("automatic leader rebalance failed", "partitions", len(changes), "err", err)
		return
	}
	c.log.Info("automatic leader rebalance elected preferred replicas", "partitions", len(changes))
}

// planLeaderBalance decides the preferred-replica elections of one
// rebalance check. For each broker b with P partitions whose preferred
// replica is b, of which N are led by another broker or by none, b is
// imbalanced when N/P > percentage/100; then each of those N partitions
// whose preferred replica is live and in the ISR elects it (ISR unchanged,
// leader epoch bumped). Partitions are listed in topic-name order.
func planLeaderBalance(img *Image, live liveFunc, percentage int) []partitionChange {
	preferred := map[int32]int{}  // broker -> partitions it is preferred for
	notLeading := map[int32]int{} // broker -> those it does not lead
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			pr := preferredReplica(p)
			if pr == -1 {
				continue
			}
			preferred[pr]++
			if p.Leader != pr {
				notLeading[pr]++
			}
		}
	}
	imbalanced := func(b int32) bool {
		return preferred[b] > 0 && notLeading[b]*100 > percentage*preferred[b]
	}
	var changes []partitionChange
	for _, t := range sortedTopics(img) {
		for _, p := range t.Partitions {
			pr := preferredReplica(p)
			if pr == -1 || p.Leader == pr || !imbalanced(pr) {
				continue
			}
			if !live(pr) || !slices.Contains(p.ISR, pr) {
				continue
			}
			changes = append(changes, changeOf(t.ID, p, pr, p.ISR))
		}
	}
	return changes
}
