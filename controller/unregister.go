package controller

// UnregisterBroker (KIP-631's API 64, `kafka-cluster.sh unregister`):
// removing a broker's registration from the metadata image, as KRaft's
// ReplicationControlManager.unregisterBroker does, so that a broker that
// is gone for good no longer shows as a fenced broker.
//
// Kafka unregisters any registered broker, live or not, in one step that
// also takes it out of every ISR and moves its leaderships
// (handleBrokerUnregistered). sluice does the same in two logged
// commands: a FenceBroker (the fencing path every failure takes, with its
// elections) unless the broker is fenced already, then an
// UnregisterBroker that removes the now fenced registration. A broker
// that is still alive registers again at its next heartbeat, as a KRaft
// broker does; its replica assignments are kept (Kafka keeps them too),
// so its partitions stay under-replicated until they are reassigned.
// A broker that is a raft non-voter also leaves the raft configuration
// (removeNonVoter), so it stops being listed as an observer of the
// quorum. An unknown id is BROKER_ID_NOT_REGISTERED with Kafka's message.

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// unregisterBrokerCmd removes broker ID's registration, decided against
// its registration Epoch; the broker must be fenced.
type unregisterBrokerCmd struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

func (unregisterBrokerCmd) commandType() commandType { return cmdUnregisterBroker }

func applyUnregisterBroker(b *imageBuilder, index uint64, payload []byte) error {
	var c unregisterBrokerCmd
	decodePayload(cmdUnregisterBroker, index, payload, &c)
	old, ok := b.base.Brokers[c.ID]
	if !ok {
		return errBrokerNotRegistered(c.ID)
	}
	if old.Epoch != c.Epoch {
		return fmt.Errorf("%w: broker %d has epoch %d, command was decided at %d", kerr.StaleBrokerEpoch, c.ID, old.Epoch, c.Epoch)
	}
	if !old.Fenced {
		return fmt.Errorf("%w: broker %d is not fenced", kerr.InvalidRequest, c.ID)
	}
	delete(b.brokers(), c.ID)
	return nil
}

func errBrokerNotRegistered(id int32) error {
	return fmt.Errorf("%w: Broker ID %d is not currently registered", kerr.BrokerIDNotRegistered, id)
}

// UnregisterBroker removes broker id from the metadata image, fencing it
// first if it is not fenced. It returns NOT_CONTROLLER off the active
// controller and BROKER_ID_NOT_REGISTERED for an id the image does not
// hold; other errors are those of Controller.apply.
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	if err := c.unregisterBroker(ctx, id); err != nil {
		return err
	}
	// A raft membership change needs no decide lock (reconcile.go).
	c.removeNonVoter(id)
	return nil
}

func (c *Controller) unregisterBroker(ctx context.Context, id int32) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	b := c.Image().Brokers[id]
	if b == nil {
		return errBrokerNotRegistered(id)
	}
	if !b.Fenced {
		if err := c.fenceBroker(ctx, id, nil, false); err != nil {
			return err
		}
		if b = c.Image().Brokers[id]; b == nil {
			return errBrokerNotRegistered(id)
		}
	}
	if err := c.apply(ctx, unregisterBrokerCmd{ID: id, Epoch: b.Epoch}); err != nil {
		return err
	}
	c.log.Info("unregistered broker", "broker", id, "epoch", b.Epoch)
	return nil
}

// removeNonVoter takes node id out of the raft configuration if it is a
// non-voter there, so the leader stops replicating the metadata log to a
// broker that is gone and DescribeQuorum stops listing it as an observer
// (a KRaft observer is listed only while it fetches). A broker that is
// still alive is added back by the next reconcile. Voters are left to
// RemoveRaftVoter. Failures are logged: the registration is gone either
// way.
func (c *Controller) removeNonVoter(id int32) {
	if c.gossip == nil {
		return
	}
	servers, err := c.raftConfiguration()
	if err != nil {
		c.log.Warn("read raft configuration failed", "err", err)
		return
	}
	if !slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raftServerID(id) && s.Suffrage != raft.Voter }) {
		return
	}
	if err := c.node.raft.RemoveServer(raftServerID(id), 0, raftMembershipTimeout).Error(); err != nil {
		c.log.Warn("remove raft non-voter of an unregistered broker failed", "broker", id, "err", err)
	}
}
