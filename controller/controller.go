package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when a CreateTopics request says -1.
	// Values below 1 mean 1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16

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
}

// Controller is one node's view of the metadata log and, when this node is
// the raft leader, the active controller that decides changes to it.
//
// Lock order: decide, then fsm.mu. decide is held across a whole admin
// operation (validate against the current image, then apply through raft) so
// two concurrent operations cannot both pass validation against the same
// image; raft apply and OnApply never take decide.
type Controller struct {
	cfg         Config
	log         *slog.Logger
	fsm         *fsm
	node        *raftNode
	incarnation [16]byte

	decide sync.Mutex

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
// formed cluster: raft is running, the image has caught up with the log on
// disk, the cluster has an id, and this broker is registered with its current
// endpoint. ctx bounds the wait. On the first start in an empty Dir, Open
// bootstraps a one-voter raft configuration and writes the InitCluster
// command with a new cluster id.
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
		ready:       make(chan struct{}),
		// raft blocks sending leadership changes; a buffer keeps it from
		// waiting on monitorLeadership while that waits for a barrier.
		notify: make(chan bool, 8),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	node, err := startRaft(cfg.Dir, cfg.NodeID, c.fsm, c.notify, c.log)
	if err != nil {
		return nil, err
	}
	c.node = node
	go c.monitorLeadership()

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

// Close stops raft and the leadership loop. It is safe to call more than
// once; later calls return the first call's result.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		c.leaderReady.Store(false)
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

// monitorLeadership follows raft's leadership notifications, running
// establishLeadership in its own goroutine for as long as this node leads so
// that a lost leadership can cancel it. It owns that goroutine and waits for
// it before returning.
func (c *Controller) monitorLeadership() {
	defer close(c.done)
	var stopLeading func() // non-nil while establishLeadership may run
	stepDown := func() {
		c.leaderReady.Store(false)
		if stopLeading != nil {
			stopLeading()
			stopLeading = nil
		}
	}
	for {
		select {
		case isLeader := <-c.notify:
			if !isLeader {
				stepDown()
				c.log.Info("lost controller leadership")
			} else if stopLeading == nil {
				stopLeading = c.startLeading()
			}
		case <-c.stop:
			stepDown()
			return
		}
	}
}

// startLeading runs establishLeadership in a goroutine and returns the
// function that cancels it and waits for it to end.
func (c *Controller) startLeading() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.establishLeadership(ctx)
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// establishLeadership prepares a new raft leader to act as active
// controller. The barrier makes the FSM apply every entry of earlier terms,
// so the image the controller decides on is complete; only then is the
// cluster initialised if this is its first leader.
func (c *Controller) establishLeadership(ctx context.Context) {
	start := time.Now()
	if err := c.node.raft.Barrier(0).Error(); err != nil {
		c.log.Warn("leadership barrier failed", "err", err)
		return
	}
	if ctx.Err() != nil {
		return
	}
	c.leaderReady.Store(true)
	if c.Image().ClusterID == "" {
		id := NewClusterID()
		c.decide.Lock()
		err := c.apply(ctx, initClusterCmd{ClusterID: id})
		c.decide.Unlock()
		if err != nil {
			c.log.Warn("initialise cluster failed", "err", err)
			c.leaderReady.Store(false)
			return
		}
		c.log.Info("initialised new cluster", "cluster_id", id)
	}
	c.log.Info("became active controller", "cluster_id", c.ClusterID(),
		"index", c.Image().Index, "took", time.Since(start))
	c.readyOnce.Do(func() { close(c.ready) })
}

// registerSelf registers this broker if the image does not already hold its
// current endpoint. Registering only on change keeps restarts from growing
// the log; the broker epoch therefore changes only with the endpoint.
func (c *Controller) registerSelf(ctx context.Context) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if b, ok := c.Image().Brokers[c.cfg.NodeID]; ok && !b.Fenced &&
		b.Host == c.cfg.Host && b.Port == c.cfg.Port && b.Rack == c.cfg.Rack {
		return nil
	}
	if err := c.requireLeader(); err != nil {
		return fmt.Errorf("controller: register broker %d: %w", c.cfg.NodeID, err)
	}
	err := c.apply(ctx, registerBrokerCmd{
		ID:          c.cfg.NodeID,
		Host:        c.cfg.Host,
		Port:        c.cfg.Port,
		Rack:        c.cfg.Rack,
		Incarnation: c.incarnation,
	})
	if err != nil {
		return fmt.Errorf("controller: register broker %d: %w", c.cfg.NodeID, err)
	}
	return nil
}

// errNotController is returned by admin operations on a node that is not the
// active controller; Kafka clients retry NOT_CONTROLLER after refreshing
// metadata.
var errNotController = fmt.Errorf("%w: this node is not the active controller", kerr.NotController)

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
		case isNotLeader(err):
			return fmt.Errorf("%w: %v", kerr.NotController, err)
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
		default:
			c.log.Error("metadata command failed", "command", cmd.commandType(), "err", err)
			return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
		}
	}
	if err, ok := fut.Response().(error); ok && err != nil {
		return err
	}
	return nil
}
