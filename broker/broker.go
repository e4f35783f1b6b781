package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
	"github.com/sluicedev/sluice/txn"
)

// metadataDirName is where the controller keeps its raft log inside the first
// log directory; Kafka's KRaft uses the same name, and logstore skips it.
const metadataDirName = "__cluster_metadata-0"

// installFaults is nil in every normal build. Only a build with the tag
// compatfault (fault_compatfault.go) sets it, to a function that may install
// a router hook giving clients deliberately wrong answers: compat's
// fault-detected row uses that build to prove the compatibility rows check
// what clients see, not just exit codes. It runs once, before serving.
var installFaults func(b *Broker)

// Broker is one running sluice node.
type Broker struct {
	cfg    *config.Broker
	logger *slog.Logger
	now    func() time.Time
	dial   func(ctx context.Context, network, addr string) (net.Conn, error) // nil: kgo's dialer

	dir    *logDirs // log.dirs (log_dirs_set.go)
	ctrl   *controller.Controller
	router *protocol.Router
	// listeners are the Kafka listeners (listeners.go), in listeners'
	// order; server and ln are the first one's.
	listeners []*kafkaListener
	server    *protocol.Server
	ln        net.Listener
	// interBroker is the inter-broker listener's name and peerSec the
	// client side of its security (listener_security.go).
	interBroker string
	peerSec     peerSecurity

	// image is the newest metadata image the broker has reconciled with.
	image atomic.Pointer[controller.Image]
	// reconcileMu serializes reconcile (the controller's apply goroutine,
	// and New once before serving); reconcileAll, guarded by it, makes the
	// next reconcile look at every topic (reconcile.go).
	reconcileMu  sync.Mutex
	reconcileAll bool
	// opener opens the logs of the replicas reconcile assigns here, off
	// the apply goroutine (reconcile_open.go).
	opener *logOpener

	pids producerIDs
	// ctrlSec is the controller listener's TLS (controller_security.go),
	// nil when it is PLAINTEXT.
	ctrlSec *controllerSecurity

	// authz is the ACL authorizer (authorize.go).
	authz authorizerState

	// clientThrottle enforces the client byte-rate quotas (client_throttle.go).
	clientThrottle clientThrottle
	// mutationRates are the controller_mutation_rate buckets
	// (mutation_quota.go), charged only while this node is the controller.
	mutationRates *quotas.MutationRates

	// peers is the inter-broker client that forwards controller requests
	// to the active controller's broker (forward.go).
	peers peerClient

	// appliedMu guards applied, which is closed and replaced after every
	// reconciled image so forwarded requests can wait for their effect.
	appliedMu sync.Mutex
	applied   chan struct{}

	// groups is the group coordinator for the __consumer_offsets
	// partitions this node leads (groups.go).
	groups *groups.Coordinator
	// txn is the transaction coordinator for the __transaction_state
	// partitions this node leads (txn.go).
	txn *txn.Coordinator
	// shares is the share-partition state of the partitions this node
	// leads and its share sessions (share_partitions.go).
	shares shareLeader

	// replicas is the follower fetchers and ISR goroutine
	// (replica_manager.go), set between startReplication and
	// stopReplication.
	replicas atomic.Pointer[replicaManager]
	// throttle is the replication throttle (replica_throttle.go).
	throttle replicationThrottle
	// fetchSessions is the incremental fetch session cache
	// (fetch_session.go).
	fetchSessions fetchSessionCache

	mu         sync.RWMutex // guards partitions
	partitions map[logstore.TopicPartition]*partition

	// cleaner compacts the logs of compacted topics (cleaner.go).
	cleaner brokerCleaner

	// metrics is the Prometheus families and their listener (metrics.go),
	// nil when metrics.listener is empty.
	metrics *brokerMetrics

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closed   atomic.Bool
	serveErr chan error
	// halted closes when the broker shuts itself down (Halted), stopped
	// when a shutdown has finished.
	halted, stopped chan struct{}
}

// Options tunes a Broker for tests and embedding.
type Options struct {
	Logger *slog.Logger
	// Listener, if set, is used instead of listening on the configured
	// address of the first Kafka listener (tests pass a 127.0.0.1:0
	// listener).
	Listener net.Listener
	// Listeners, if set, are used instead of listening on the configured
	// address of the Kafka listeners they name (listeners' names, upper
	// case); Listener wins for the first.
	Listeners map[string]net.Listener
	Now       func() time.Time
	// Dial, if set, opens this broker's connections to other brokers'
	// Kafka listeners: its replica fetchers and the requests it forwards
	// to the controller (tests cut links between nodes with it).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// GossipAllowed and RaftDial, if set, filter this node's gossip
	// packets and open its raft connections (controller.Config), so tests
	// can cut gossip or raft links apart from the Kafka ones.
	GossipAllowed func(to string) bool
	RaftDial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New opens the log directory and the metadata log and starts serving. When
// it returns without error the broker answers requests on Addr. ctx bounds
// the whole start; joining the cluster (controller.Open) is also bounded by
// initial.broker.registration.timeout.ms, counted from when the logs are
// loaded.
func New(ctx context.Context, cfg *config.Broker, opts Options) (*Broker, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(cfg.LogDirs) == 0 {
		return nil, errors.New("broker: log.dirs is empty")
	}
	b := &Broker{
		cfg:        cfg,
		logger:     opts.Logger,
		now:        opts.Now,
		dial:       opts.Dial,
		partitions: make(map[logstore.TopicPartition]*partition),
		serveErr:   make(chan error, 1),
		halted:     make(chan struct{}),
		stopped:    make(chan struct{}),
		applied:    make(chan struct{}),
		peers:      peerClient{ctrlDial: opts.RaftDial},
		mutationRates: quotas.NewMutationRates(int(cfg.ControllerQuotaWindowNum),
			time.Duration(cfg.ControllerQuotaWindowSizeSecs)*time.Second),
	}
	voters, err := controller.ParseVoters(strings.Join(cfg.ControllerQuorumVoters, ","))
	if err != nil {
		return nil, fmt.Errorf("broker: controller.quorum.voters: %w", err)
	}
	_, raftListener, err := splitListeners(cfg)
	if err != nil {
		return nil, err
	}
	// The cluster's own traffic: the controller listener's TLS and the
	// gossip keyring (controller_security.go).
	if b.ctrlSec, err = newControllerSecurity(cfg, b.logger); err != nil {
		return nil, err
	}
	gossipKeys, err := gossipKeys(cfg)
	if err != nil {
		return nil, err
	}

	listeners, err := openListeners(cfg, opts)
	if err != nil {
		return nil, err
	}
	b.listeners, b.ln = listeners, listeners[0].ln
	closeListeners := func() {
		for _, l := range listeners {
			l.ln.Close()
		}
	}
	if b.metrics, err = b.newMetrics(); err != nil {
		closeListeners()
		return nil, err
	}
	if b.metrics != nil {
		closeKafka := closeListeners
		closeListeners = func() {
			closeKafka()
			b.metrics.close(context.Background())
		}
	}
	b.interBroker = b.interBrokerListener().cfg.Name
	if b.peerSec, err = newPeerSecurity(cfg, b.interBrokerListener()); err != nil {
		closeListeners()
		return nil, err
	}

	// Each log dir loads its logs with num.recovery.threads.per.data.dir
	// goroutines, indexed as the broker's defaults say until the metadata
	// gives each topic's configs (logstore.Options.LoadConfig).
	loadCfg := logstore.DefaultConfig()
	loadCfg.IndexIntervalBytes, loadCfg.SegmentIndexBytes = cfg.LogIndexIntervalBytes, cfg.LogIndexSizeMaxBytes
	dir, err := openLogDirs(cfg.LogDirs, logstore.Options{Logger: b.logger, Now: b.now,
		RecoveryThreads: int(cfg.NumRecoveryThreadsPerDataDir), LoadConfig: loadCfg}, b.logger)
	if err != nil {
		closeListeners()
		return nil, fmt.Errorf("broker: log.dirs: %w", err)
	}
	b.dir = dir
	b.opener = newLogOpener()
	go b.runOpener()
	dir.configureMoves(cfg)

	b.groups = b.newGroupCoordinator()
	b.txn = b.newTxnCoordinator()
	host, port := b.advertised()
	var raftAddr string
	if raftListener != nil && isVoter(voters, cfg.NodeID) {
		raftAddr = net.JoinHostPort(raftListener.Host, strconv.Itoa(int(raftListener.Port)))
	}
	// Joining is timed from here, once the logs are loaded, as Kafka
	// times only the registration: a node with many partitions on a slow
	// disk may take minutes to load them and must still be able to start.
	joinTimeout := time.Duration(cfg.InitialBrokerRegistrationTimeoutMs) * time.Millisecond
	if joinTimeout <= 0 {
		joinTimeout = time.Minute
	}
	joinCtx, cancelJoin := context.WithTimeout(ctx, joinTimeout)
	ctrl, err := controller.Open(joinCtx, controller.Config{
		NodeID:                   cfg.NodeID,
		Dir:                      filepath.Join(cfg.LogDirs[0], metadataDirName),
		Host:                     host,
		Port:                     port,
		Endpoints:                b.advertisedEndpoints(),
		Rack:                     cfg.BrokerRack,
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		BrokerPartitions:         brokerPartitionLimit(cfg, b.logger),
		ValidateTopicConfig:      config.ValidateTopicConfig,
		ValidateBrokerConfig:     config.ValidateBrokerDynamic,
		IsListConfig:             isListConfig,
		OnApply:                  b.onApply,
		Logger:                   b.logger, // the controller adds component=controller itself
		Voters:                   voters,
		RaftAddr:                 raftAddr,
		GossipAddr:               cfg.GossipListener,
		GossipJoin:               cfg.GossipJoin,
		UncleanLeaderElection:    cfg.UncleanLeaderElection,
		MinInsyncReplicas:        int(cfg.MinInsyncReplicas),
		CleanShutdown:            dir.HadCleanShutdown(),

		AutoLeaderRebalance:                cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval:       time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		LeaderImbalancePerBrokerPercentage: int(cfg.LeaderImbalancePerBrokerPercentage),

		SessionTimeout:    time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval: time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		GossipAllowed:     opts.GossipAllowed,
		RaftDial:          opts.RaftDial,
		ListenerTLS:       b.ctrlSec.listenerTLS(),
		GossipKeys:        gossipKeys,
		Heartbeats:        newHeartbeatClient(b.dialController, b.controllerAddr, cfg.NodeID, time.Duration(cfg.BrokerSessionTimeoutMs)*time.Millisecond),
		OfflineReplicas:   func() controller.OfflineReport { return dir.offlineReport(b.metadata(), cfg.NodeID) },
	})
	cancelJoin()
	if err != nil {
		b.stopOpener()
		dir.Close(nil)
		closeListeners()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("broker: not registered with the cluster within initial.broker.registration.timeout.ms=%d (its logs were loaded first, untimed): %w",
				cfg.InitialBrokerRegistrationTimeoutMs, err)
		}
		return nil, fmt.Errorf("broker: metadata: %w", err)
	}
	b.ctrl = ctrl
	b.metrics.opened(ctrl)
	dir.writeMeta(ctrl.ClusterID(), cfg.NodeID, b.now())
	b.reconcile(ctrl.Image())
	dir.started.Store(true) // from now on a replica the metadata adds is new
	// The authorizer notes how far the metadata log goes now, so its
	// first checks wait until the ACLs logged after the snapshot are
	// applied (authorize.go).
	b.authorizer()
	b.removeOrphans()
	// The logs reconcile queued are opened before the node serves.
	_ = b.opener.wait(context.Background(), func(logstore.TopicPartition) bool { return true })
	// A move a previous process left unfinished starts again from the
	// replica's open log, so only now that every log is open.
	dir.resumeMoves()
	// Every assigned partition's log is open now, so the recovery figures
	// are final: operators (and the binary's tests) read them here.
	rs := dir.RecoveryStats()
	b.logger.Info("log dir opened", "dirs", strings.Join(cfg.LogDirs, ","), "clean_shutdown", dir.HadCleanShutdown(),
		"partitions", len(dir.Partitions()), "segments_scanned", rs.SegmentsScanned, "bytes_truncated", rs.BytesTruncated)

	b.router = protocol.NewRouter(b.logger)
	// ApiVersions v5 checks the cluster and node a client names (KIP-1242).
	b.router.SetIdentity(func() (string, int32) { return b.ClusterID(), b.cfg.NodeID })
	b.registerHandlers()
	if b.metrics != nil {
		b.router.Hook = b.metrics.countRequest // metrics.go; never handles
		b.router.Observe = b.metrics.observe   // metrics_requests.go
	}
	if installFaults != nil {
		installFaults(b)
	}
	if err := b.newServers(); err != nil {
		ctrl.Close()
		b.stopOpener()
		dir.Close(nil)
		closeListeners()
		return nil, err
	}
	b.server = b.listeners[0].server

	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.startReplication(runCtx)
	b.serveControllerChannel(runCtx)
	b.serveListeners(runCtx)
	b.metrics.start()
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		b.runGroups(runCtx)
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runTxn(runCtx)
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runShareCoordinator(runCtx) // share_coordinator.go
	}()
	go func() {
		defer b.wg.Done()
		b.maintain(runCtx)
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.removeDeletedSegments(runCtx)
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runCleaner(runCtx)
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runLogDirFailures(runCtx)
	}()
	return b, nil
}

// splitListeners picks the Kafka listener, the first one not named in
// controller.listener.names, and the controller (raft) listener, the first
// one that is; raft is nil when there is none.
func splitListeners(cfg *config.Broker) (kafka config.Listener, raft *config.Listener, err error) {
	controllerNames := cfg.ControllerListenerNames()
	found := false
	for i, l := range cfg.Listeners {
		if slices.Contains(controllerNames, strings.ToUpper(l.Name)) {
			if raft == nil {
				raft = &cfg.Listeners[i]
			}
			continue
		}
		if !found {
			kafka, found = l, true
		}
	}
	if !found {
		return config.Listener{}, nil, errors.New("broker: listeners has no Kafka listener (every one is a controller listener)")
	}
	return kafka, raft, nil
}

func isVoter(voters []controller.Voter, id int32) bool {
	for _, v := range voters {
		if v.ID == id {
			return true
		}
	}
	return false
}

// onApply is the controller's OnApply: it reconciles the node with img and
// then wakes whoever waits for an image (waitApplied).
func (b *Broker) onApply(img *controller.Image) {
	b.reconcile(img)
	b.appliedMu.Lock()
	close(b.applied)
	b.applied = make(chan struct{})
	b.appliedMu.Unlock()
}

// waitApplied blocks until the reconciled image has applied the raft index
// index, or ctx ends.
func (b *Broker) waitApplied(ctx context.Context, index uint64) error {
	for {
		b.appliedMu.Lock()
		ch := b.applied
		b.appliedMu.Unlock()
		if img := b.metadata(); img != nil && img.Index >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Addr is the address the first Kafka listener is bound to.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// NodeID is this broker's node.id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// ClusterID is the id of the cluster this broker belongs to.
func (b *Broker) ClusterID() string { return b.ctrl.ClusterID() }

// ListedBrokers are the ids of the brokers this node's Metadata answers
// list now (registered and unfenced in the metadata it has applied), in
// order.
func (b *Broker) ListedBrokers() []int32 {
	var ids []int32
	for _, br := range sortedBrokers(b.metadata()) {
		ids = append(ids, br.ID)
	}
	return ids
}

// RecoveryStats reports how much of the log was scanned at start-up because
// the previous stop was not clean.
func (b *Broker) RecoveryStats() logstore.RecoveryStats { return b.dir.RecoveryStats() }

// Close shuts the broker down cleanly: no new connections, in-flight
// requests answered, logs synced and checkpointed, the clean-shutdown marker
// written.
func (b *Broker) Close() error {
	return b.shutdown(true)
}

// Crash stops the broker the way kill -9 would leave its files: nothing is
// synced, checkpointed or marked clean. Only tests use it.
func (b *Broker) Crash() error {
	return b.shutdown(false)
}

func (b *Broker) shutdown(clean bool) error {
	if !b.closed.CompareAndSwap(false, true) {
		<-b.stopped // another shutdown runs: return once it has finished
		return nil
	}
	defer close(b.stopped)
	if clean {
		// Leaderships move to other in-sync replicas while this node still
		// answers, so clients find the new leaders at once.
		b.controlledShutdown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	// Long-polling joins and syncs are answered (NOT_COORDINATOR) so the
	// server's drain of in-flight requests does not wait for them.
	b.groups.Close()
	// Marker writers stop; a new coordinator completes their transactions.
	b.txn.Close()
	if clean {
		if err := b.shutdownServers(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	b.cancel()
	if !clean {
		b.shutdownServers(ctx)
	}
	b.stopReplication()
	b.peers.close()
	b.wg.Wait()
	if err := b.metrics.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := b.ctrl.Close(); err != nil {
		errs = append(errs, err)
	}
	b.stopOpener() // no reconcile queues a log any more
	if clean {
		// The producer tables as of the log end, so the next start
		// replays nothing (as Kafka's clean shutdown does).
		b.mu.RLock()
		for _, p := range b.partitions {
			if err := p.snapshotProducers(); err != nil {
				b.logger.Warn("cannot snapshot producer state", "partition", p.tp.String(), "err", err)
			}
		}
		b.mu.RUnlock()
		if err := b.dir.Close(b.highWatermarks()); err != nil {
			errs = append(errs, err)
		}
	} else {
		b.dir.Abandon()
	}
	return errors.Join(errs...)
}

// maintain runs the periodic log work: retention (removeDeletedSegments
// removes the deleted segments' files when due), the high-watermark /
// recovery-point checkpoints and producer expiry.
func (b *Broker) maintain(ctx context.Context) {
	retention := time.Duration(b.cfg.LogRetentionCheckIntervalMs) * time.Millisecond
	if retention <= 0 {
		retention = 5 * time.Minute
	}
	checkpoint := time.Duration(b.cfg.LogFlushOffsetCheckpointIntervalMs) * time.Millisecond
	if checkpoint <= 0 {
		checkpoint = time.Minute
	}
	retentionT := time.NewTicker(retention)
	checkpointT := time.NewTicker(checkpoint)
	flushT := time.NewTicker(b.flushCheckInterval())
	defer flushT.Stop()
	expireT := time.NewTicker(b.producerExpiryCheckInterval())
	defer retentionT.Stop()
	defer checkpointT.Stop()
	defer expireT.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retentionT.C:
			b.RunRetention()
		case <-expireT.C:
			b.expireProducers()
		case <-flushT.C:
			if err := b.dir.FlushDue(b.now()); err != nil {
				b.logger.Warn("log flush failed", "err", err)
			}
		case <-checkpointT.C:
			if err := b.dir.Checkpoint(b.highWatermarks()); err != nil {
				b.logger.Warn("checkpoint failed", "err", err)
			}
		}
	}
}

// removeDeletedSegments removes the files of deleted segments (retention,
// DeleteRecords, truncation, cleaning) file.delete.delay.ms after they
// were renamed *.deleted, as Kafka's scheduler does, rather than at the
// next retention check: it sleeps until the Dir notes a deletion or the
// next one falls due, and each pass visits only the logs with one pending.
// Its own goroutine, so a long retention pass over every log does not hold
// removals back. Deletions still pending at shutdown leave *.deleted files
// that the next start removes.
func (b *Broker) removeDeletedSegments(ctx context.Context) {
	// minWait keeps a clock that lags the timer (a test's) from spinning.
	const minWait = 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, err := b.dir.RemoveDueDeletes(b.now())
		if err != nil {
			b.logger.Warn("removing deleted segment files failed", "err", err)
		}
		wait := time.Hour // nothing pending: until a deletion is noted
		if !next.IsZero() {
			wait = max(next.Sub(b.now()), minWait)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-b.dir.DeletesNoticed():
		case <-timer.C:
		}
	}
}

// flushCheckInterval is how often the logs are checked for a flush due by
// their flush.ms: log.flush.scheduler.interval.ms, but at least once a
// second. Kafka's default scheduler interval (Long.MAX_VALUE) means its
// flusher never runs, so a topic's flush.ms does nothing there unless the
// broker also sets log.flush.scheduler.interval.ms; sluice makes flush.ms
// do what its documentation says. The check of a log with the default
// flush.ms is one comparison.
func (b *Broker) flushCheckInterval() time.Duration {
	const atLeastEvery = time.Second
	v, _ := b.cfg.Get("log.flush.scheduler.interval.ms")
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 || ms >= atLeastEvery.Milliseconds() {
		return atLeastEvery
	}
	return time.Duration(ms) * time.Millisecond
}

// expireProducers drops, on every replica, the producers without an open
// transaction that have not written for producer.id.expiration.ms.
func (b *Broker) expireProducers() {
	b.mu.RLock()
	parts := make([]*partition, 0, len(b.partitions))
	for _, p := range b.partitions {
		parts = append(parts, p)
	}
	b.mu.RUnlock()
	for _, p := range parts {
		p.expireProducers()
	}
}

// RunRetention applies retention to every log now and removes deleted
// segment files whose delay has passed. The maintenance loop calls it every
// log.retention.check.interval.ms; tests call it directly.
func (b *Broker) RunRetention() {
	err := b.dir.Maintain(b.now(), func(tp logstore.TopicPartition) int64 {
		if p := b.partition(tp); p != nil {
			return p.highWatermark()
		}
		return 0
	})
	if err != nil {
		b.logger.Warn("log maintenance failed", "err", err)
	}
}

func (b *Broker) highWatermarks() map[logstore.TopicPartition]int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	hws := make(map[logstore.TopicPartition]int64, len(b.partitions))
	for tp, p := range b.partitions {
		hws[tp] = p.highWatermark()
	}
	return hws
}

func (b *Broker) partition(tp logstore.TopicPartition) *partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.partitions[tp]
}
