package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Config configures one node's controller.
type Config struct {
	// NodeID is this broker's node.id; also its raft server id.
	NodeID int32
	// Dir holds the raft log, stable store and snapshots. The broker passes
	// <first log dir>/__cluster_metadata-0, where KRaft keeps its log.
	Dir string
	// Host, Port and Rack are this broker's Kafka endpoint, registered as a
	// broker so clients can find it in Metadata responses.
	Host string
	Port int32
	Rack string
	// Endpoints are every advertised Kafka listener of this broker,
	// registered with it (Broker.Endpoints) and gossiped as a serf tag;
	// Host and Port are the inter-broker listener's. Empty: Host and
	// Port are the one listener.
	Endpoints []Endpoint

	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when a CreateTopics request says -1.
	// Values below 1 mean 1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// BrokerPartitions bounds the partition replicas CreateTopics and
	// CreatePartitions may place on one broker (partition_limits.go); the
	// zero value is no limit.
	BrokerPartitions BrokerPartitionLimit

	// ValidateTopicConfig and ValidateBrokerConfig check one config value
	// before it is written; nil accepts everything. A returned error's text
	// becomes the INVALID_CONFIG error message.
	ValidateTopicConfig  func(key, value string) error
	ValidateBrokerConfig func(key, value string) error
	// IsListConfig reports whether a config is a list, which
	// IncrementalAlterConfigs APPEND and SUBTRACT require; nil treats every
	// config as a list.
	IsListConfig func(resourceType int8, key string) bool

	// OnApply is called synchronously, in log order, after every applied
	// command and after a snapshot restore, with the new image. It runs on
	// raft's apply goroutine, so it must not block for long and must not call
	// back into methods that apply commands.
	OnApply func(img *Image)

	// Logger receives the controller's logs; raft's own are forwarded at
	// warn and above. Nil means slog.Default().
	Logger *slog.Logger

	// Voters are the raft voters, controller.quorum.voters (ParseVoters).
	// Empty means a cluster of one: raft over an in-memory transport, no
	// serf, no port opened. Otherwise every node runs serf and raft over
	// TCP; a node listed here is a voter, any other node a non-voter that
	// the active controller adds when serf reports it.
	Voters []Voter
	// RaftAddr is the host:port raft listens on. A voter defaults to its
	// address in Voters (which is also what it advertises); a non-voter to
	// an ephemeral port on Host, advertised through serf.
	RaftAddr string
	// GossipAddr is serf's host:port (gossip.listener); port 0 picks one.
	// Empty means Host with an ephemeral port.
	GossipAddr string
	// GossipJoin are serf seed addresses (gossip.join). They may include
	// this node's own GossipAddr, so every node can be given the same list.
	GossipJoin []string
	// UncleanLeaderElection is the static unclean.leader.election.enable,
	// used when neither the topic nor a dynamic broker config sets it.
	UncleanLeaderElection bool
	// MinInsyncReplicas is the static min.insync.replicas, used as
	// UncleanLeaderElection is; it decides when eligible leader replicas
	// are tracked (elr.go). Values below 1 mean 1.
	MinInsyncReplicas int
	// CleanShutdown reports that this node's log dir was shut down
	// cleanly before this process started (its .kafka_cleanshutdown
	// marker was present); a process started without it leaves every
	// ISR and eligible leader replica set when it registers (elr.go).
	CleanShutdown bool

	// AutoLeaderRebalance is auto.leader.rebalance.enable: the active
	// controller checks leader balance every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds; zero means 300s) and moves
	// leadership back to preferred replicas on brokers whose imbalance
	// exceeds LeaderImbalancePerBrokerPercentage
	// (leader.imbalance.per.broker.percentage), leader_balance.go.
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int

	// SessionTimeout and HeartbeatInterval are broker.session.timeout.ms
	// and broker.heartbeat.interval.ms (session.go, heartbeat.go); zero
	// means DefaultSessionTimeout and DefaultHeartbeatInterval. Heartbeats
	// carries this node's heartbeats to an active controller on another
	// node; nil means they fail, so only the active controller's own
	// broker keeps a session.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	Heartbeats        HeartbeatTransport
	// OfflineReplicas, if set, is this broker's report of its failed log
	// directories, sent with every heartbeat (log_dirs.go).
	OfflineReplicas func() OfflineReport

	// GossipAllowed and RaftDial let tests cut this node's gossip and raft
	// links (netfilter.go): GossipAllowed is asked before every gossip
	// packet or stream to a host:port, RaftDial opens raft's outgoing
	// connections. Both nil in normal use.
	GossipAllowed func(to string) bool
	RaftDial      func(ctx context.Context, network, addr string) (net.Conn, error)

	// ListenerTLS, when set, secures the controller listener: raft and
	// the controller channel speak TLS with client certificates required
	// (channel.go). Nil: plaintext, as a PLAINTEXT controller listener.
	ListenerTLS *ListenerTLS
	// GossipKeys, when set, encrypt and authenticate serf's gossip
	// (memberlist's keyring, AES-GCM): the first key encrypts, every key
	// decrypts, so keys can be rotated by rolling restarts. Each is 16,
	// 24 or 32 bytes. A node without one of them is not admitted.
	GossipKeys [][]byte
}

// Controller is one node's view of the metadata log and, when this node is
// the raft leader, the active controller that decides changes to it.
//
// Lock order: decide, then fsm.mu. decide is held across a whole admin
// operation or reconcile step (validate against the current image, then
// apply through raft) so two concurrent decisions cannot both pass
// validation against the same image; raft apply and OnApply never take
// decide.
type Controller struct {
	cfg         Config
	log         *slog.Logger
	fsm         *fsm
	node        *raftNode
	gossip      *gossip // nil for a cluster of one
	incarnation [16]byte
	// sessions (the active controller's view of broker heartbeats) and
	// heartbeats (this node's own) are nil for a cluster of one.
	sessions   *sessionTable
	heartbeats *heartbeater
	// quorum is the active controller's view of each node's metadata
	// log, for DescribeQuorum (quorum.go).
	quorum quorumProgress

	// reconcileCh pokes the leadership loop to reconcile membership now;
	// one pending poke is enough since reconcile reads the whole state.
	reconcileCh chan struct{}

	decide sync.Mutex

	// offlineReports are brokers' reports of failed log directories not
	// yet in the image (log_dirs.go), guarded by offlineMu.
	offlineMu      sync.Mutex
	offlineReports map[int32]OfflineReport

	// leaderReady is true while this node is raft leader and its image has
	// caught up with every entry of earlier terms (the leadership barrier
	// passed); decisions are only made then, never on a stale image.
	leaderReady atomic.Bool
	// ready is closed the first time leadership is established.
	ready     chan struct{}
	readyOnce sync.Once

	notify    chan bool
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open starts this node's controller and returns once the node is part of a
// formed cluster: raft is running, the image has caught up with the log,
// the cluster has an id, and this broker is registered with its current
// endpoint and unfenced. ctx bounds the wait.
//
// A lone node (no Voters) bootstraps a one-voter raft configuration on the
// first start in an empty Dir, elects itself at once and writes the
// InitCluster command with a new cluster id, then registers itself.
//
// In a cluster Open returns once the active controller has registered and
// unfenced this process (a new registration per process start, matched by
// its incarnation): that command was written after this node joined, so
// seeing it applied means the local image has caught up with the leader's
// log at the time of joining. A non-voter gets there once the leader has
// added it to raft and replicated the log (or a snapshot) to it.
func Open(ctx context.Context, cfg Config) (*Controller, error) {
	if cfg.Dir == "" {
		return nil, errors.New("controller: Config.Dir is required")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("controller: invalid node id %d", cfg.NodeID)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("controller: open: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	c := &Controller{
		cfg:         cfg,
		log:         logger.With("component", "controller", "node", cfg.NodeID),
		fsm:         newFSM(cfg.OnApply),
		incarnation: newUUID(),
		reconcileCh: make(chan struct{}, 1),
		ready:       make(chan struct{}),
		// raft blocks sending leadership changes; a buffer keeps it from
		// waiting on monitorLeadership while that waits for a barrier.
		notify: make(chan bool, 8),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	opts := raftOptions{dir: cfg.Dir, nodeID: cfg.NodeID, fsm: c.fsm, notify: c.notify, logger: c.log, dial: cfg.RaftDial, tls: cfg.ListenerTLS}
	if cfg.clustered() {
		opts.voters = cfg.Voters
		opts.advertiseAddr = cfg.voterAddr(cfg.NodeID)
		opts.bindAddr = cfg.RaftAddr
		if opts.bindAddr == "" {
			opts.bindAddr = opts.advertiseAddr
		}
		if opts.bindAddr == "" {
			opts.bindAddr = net.JoinHostPort(hostOrLoopback(cfg.Host), "0")
		}
	}
	node, err := startRaft(opts)
	if err != nil {
		return nil, err
	}
	c.node = node
	c.fsm.elections.raft.Store(node.raft)
	if cfg.clustered() {
		// serf starts before the leadership loop, which reads c.gossip.
		gossipAddr := cfg.GossipAddr
		if gossipAddr == "" {
			gossipAddr = net.JoinHostPort(hostOrLoopback(cfg.Host), "0")
		}
		c.gossip, err = startGossip(gossipAddr, cfg.NodeID, c.tags(string(node.addr)), cfg.GossipJoin, c.pokeReconcile, cfg.GossipAllowed, cfg.GossipKeys, c.log)
		if err != nil {
			node.shutdown()
			return nil, err
		}
	}
	if cfg.clustered() {
		if c.cfg.SessionTimeout <= 0 {
			c.cfg.SessionTimeout = DefaultSessionTimeout
		}
		if c.cfg.HeartbeatInterval <= 0 {
			c.cfg.HeartbeatInterval = DefaultHeartbeatInterval
		}
		c.sessions = newSessionTable(c.cfg.SessionTimeout)
		c.startHeartbeats()
	}
	go c.monitorLeadership()

	if !cfg.clustered() {
		select {
		case <-c.ready:
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("controller: waiting for leadership: %w", ctx.Err())
		}
		if err := c.registerSelf(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	if err := c.fsm.waitFor(ctx, c.joined); err != nil {
		c.Close()
		return nil, fmt.Errorf("controller: waiting to join the cluster (leader %d): %w", c.ActiveControllerID(), err)
	}
	return c, nil
}

// joined reports whether img shows this process registered and unfenced.
func (c *Controller) joined(img *Image) bool {
	b := img.Brokers[c.cfg.NodeID]
	return img.ClusterID != "" && b != nil && !b.Fenced && b.Incarnation == c.incarnation &&
		b.Host == c.cfg.Host && b.Port == c.cfg.Port && b.Rack == c.cfg.Rack && slices.Equal(b.Endpoints, c.cfg.Endpoints)
}

// hostOrLoopback is host, or the loopback address if host is empty (bind
// all interfaces), which is not an address other nodes could dial.
func hostOrLoopback(host string) string {
	if host == "" || host == "0.0.0.0" || host == "::" {
		return "127.0.0.1"
	}
	return host
}

// GossipAddr returns the address serf listens on, which other nodes can
// use as a seed, or "" for a cluster of one.
func (c *Controller) GossipAddr() string {
	if c.gossip == nil {
		return ""
	}
	return c.gossip.addr()
}

// Close stops raft, serf and the leadership loop. In a cluster it first
// hands raft leadership to another voter if this node leads, then leaves
// serf gracefully so the new active controller fences this broker at once
// instead of waiting for the failure detector. (A broker should call
// ControlledShutdown before, so its partitions already have other
// leaders.) It is safe to call more than once; later calls return the
// first call's result.
func (c *Controller) Close() error { return c.close(true) }

// close stops the controller; graceful=false is a crash as other nodes see
// it (no leadership transfer, no serf leave), which tests use.
func (c *Controller) close(graceful bool) error {
	c.closeOnce.Do(func() {
		if graceful && c.gossip != nil && c.leaderReady.Load() && len(c.cfg.Voters) > 1 {
			if err := c.node.raft.LeadershipTransfer().Error(); err != nil {
				c.log.Warn("controller leadership transfer failed", "err", err)
			}
		}
		c.leaderReady.Store(false)
		c.stopHeartbeats()
		if c.gossip != nil {
			c.gossip.shutdown(graceful)
		}
		// Shut raft down while monitorLeadership still drains notify, so a
		// final leadership-lost notification never blocks the shutdown.
		c.closeErr = c.node.shutdown()
		close(c.stop)
		<-c.done
	})
	return c.closeErr
}

// Image returns the current metadata image. It is immutable; never modify it.
func (c *Controller) Image() *Image { return c.fsm.current() }

// ClusterID returns the cluster id, fixed by the first InitCluster command.
func (c *Controller) ClusterID() string { return c.Image().ClusterID }

// ActiveControllerID returns the node id of the raft leader, which is the
// active controller, or -1 if there is none right now.
func (c *Controller) ActiveControllerID() int32 {
	_, id := c.node.raft.LeaderWithID()
	if id == "" {
		return -1
	}
	return nodeIDOf(id)
}

// errNotController is returned by admin operations on a node that is not the
// active controller; Kafka clients retry NOT_CONTROLLER after refreshing
// metadata.
var errNotController = fmt.Errorf("%w: this node is not the active controller", kerr.NotController)

// ErrOutcomeUnknown marks a decision whose outcome is not known: the command
// went into the raft log (or the request to the active controller went out)
// but no answer came back, because leadership was lost or the answer was.
// It may have been committed, and may still be. Callers must not act as if
// it was rejected: a partition leader keeps its proposed ISR in its high
// watermark until metadata tells it what happened (KIP-497). An error that
// carries it also carries the Kafka code a client gets (NOT_CONTROLLER, so
// clients retry against the next controller, or REQUEST_TIMED_OUT).
var ErrOutcomeUnknown = errors.New("controller: outcome unknown")

// requireLeader returns NOT_CONTROLLER unless this node may decide now.
func (c *Controller) requireLeader() error {
	if !c.leaderReady.Load() {
		return errNotController
	}
	return nil
}

// apply writes one command through raft and returns once the FSM applied it
// (so OnApply has run), with the FSM's rejection error if it rejected it.
// Every error carries a Kafka error code.
//
// ctx bounds the wait to enter raft's queue. The wait for commit is not
// cancellable (hashicorp/raft futures take no context), but it is bounded:
// a leader that cannot commit loses its lease and fails the future with
// ErrLeadershipLost, and shutdown fails every pending future.
func (c *Controller) apply(ctx context.Context, cmd command) error {
	data, err := encodeCommand(cmd)
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
	}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		if timeout = time.Until(deadline); timeout <= 0 {
			return fmt.Errorf("%w: %v", kerr.RequestTimedOut, context.DeadlineExceeded)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	}
	fut := c.node.raft.Apply(data, timeout)
	if err := fut.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
			// The entry may be in the log of a quorum already: the
			// next leader may commit it.
			c.log.Warn("metadata command outcome unknown", "command", cmd.commandType(), "err", err)
			return fmt.Errorf("%w: %w: %v", kerr.NotController, ErrOutcomeUnknown, err)
		case isNotLeader(err):
			// Refused before it entered the log.
			return fmt.Errorf("%w: %v", kerr.NotController, err)
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
		default:
			c.log.Error("metadata command failed", "command", cmd.commandType(), "err", err)
			return fmt.Errorf("%w: %w: %v", kerr.UnknownServerError, ErrOutcomeUnknown, err)
		}
	}
	if err, ok := fut.Response().(error); ok && err != nil {
		return err
	}
	return nil
}
