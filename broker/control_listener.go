package broker

// The controller channel: the Kafka-protocol side of the controller
// listener (controller.listener.names), where brokers send the active
// controller what only brokers may send.
//
// Kafka serves the inter-broker controller APIs only on the controller
// listener: a client that sends one on a client listener has its
// connection closed (the API is not enabled there), and the listener's
// ApiVersions does not list it. sluice does the same. The client
// (PLAINTEXT) listener's router (handlers.go) does not register
// ControlledShutdown (7), AlterPartition (56), BrokerHeartbeat (63) or
// AllocateProducerIds (67), so protocol.Router closes the connection of a
// client that sends one and leaves them out of ApiVersions. They are
// registered on a second router, served by a second protocol.Server on
// the Kafka side of the controller listener: the raft port, which raft
// shares by the first byte of each connection (controller/channel.go,
// Consul's pattern), so no new port is opened. The admin requests a broker
// forwards to the active controller (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders,
// AlterPartitionReassignments) travel the same channel, as Kafka's
// brokers forward them to the controller listener; clients still send
// them to the client listener. The channel also answers Metadata (3), which
// franz-go, the brokers' client, asks for at least hourly even when it
// has nothing to look up; its answer is the client listener's. Like
// Kafka's controller listener (ControllerApis, measured on 4.1.1), it
// lists SaslHandshake and SaslAuthenticate and answers both
// ILLEGAL_SASL_STATE, as the client listener does: neither has SASL.
//
// Every request on the channel is a peer's: it is answered by the local
// controller and never forwarded again, and its answer carries this
// node's applied raft index (forward.go). On the client listener no
// request is a peer's, whatever its client id says.
//
// Who serves it: every clustered node, on its raft listener; only the
// active controller, always a voter, answers anything but
// NOT_CONTROLLER, and brokers dial it at its controller.quorum.voters
// address (controllerAddr), or at its raft address for a voter that
// AddRaftVoter added (quorum.go). A cluster of one has no controller listener
// and needs none: it is its own active controller, so nothing is sent
// over the network, and its client listener refuses these APIs exactly as
// a clustered node's does.
//
// Connections to the channel are opened by Options.RaftDial (a net.Dialer
// when nil), which also opens raft's: the controller listener is one port,
// so whatever cuts raft between two nodes (sluicetest's CutRaft and
// DropRaft, a firewall rule on the raft port) cuts heartbeats and
// forwarded requests between them too, and a cut of the Kafka port no
// longer does.
//
// A PLAINTEXT controller listener is as open as Kafka's: any process that
// can reach the raft port can speak raft or the channel. An SSL one
// (controller_security.go) requires the cluster's client certificate on
// both, and this node presents its own when it dials.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// controllerChannelShutdownTimeout bounds the wait for the channel's
// in-flight requests when the broker stops.
const controllerChannelShutdownTimeout = 5 * time.Second

// registerControllerHandlers registers on r the APIs served on the
// controller channel, every one to peer brokers (peerAPI).
func (b *Broker) registerControllerHandlers(r *protocol.Router) {
	r.Register(3, 0, 13, b.handleMetadata)
	r.Register(7, 1, 3, b.peerAPI(b.handleControlledShutdown))
	r.Register(17, 0, 1, b.handleSaslHandshake)
	r.Register(19, 2, 7, b.peerAPI(b.handleCreateTopics))
	r.Register(20, 1, 6, b.peerAPI(b.handleDeleteTopics))
	r.Register(30, 1, 3, b.peerAPI(b.handleCreateACLs))
	r.Register(31, 1, 3, b.peerAPI(b.handleDeleteACLs))
	r.Register(33, 0, 2, b.peerAPI(b.handleAlterConfigs))
	r.Register(36, 0, 2, b.handleSaslAuthenticate)
	r.Register(37, 0, 3, b.peerAPI(b.handleCreatePartitions))
	r.Register(43, 0, 2, b.peerAPI(b.handleElectLeaders))
	r.Register(44, 0, 1, b.peerAPI(b.handleIncrementalAlterConfigs))
	r.Register(45, 0, 1, b.peerAPI(b.handleAlterPartitionReassignments))
	r.Register(49, 0, 1, b.peerAPI(b.handleAlterClientQuotas))
	r.Register(51, 0, 0, b.peerAPI(b.handleAlterUserScramCredentials))
	r.Register(56, 0, 3, b.peerAPI(b.handleAlterPartition))
	r.Register(57, 0, 2, b.peerAPI(b.handleUpdateFeatures))
	r.Register(63, 0, 1, b.peerAPI(b.handleBrokerHeartbeat))
	r.Register(67, 0, 0, b.peerAPI(b.handleAllocateProducerIDs))
	b.registerQuorumControllerHandlers(r) // quorum.go
}

// serveControllerChannel serves the controller channel until ctx ends,
// then waits (within controllerChannelShutdownTimeout) for its requests in
// flight, so none outlives the controller it calls. It does nothing for
// a cluster of one.
func (b *Broker) serveControllerChannel(ctx context.Context) {
	ln := b.ctrl.ControllerListener()
	if ln == nil {
		return
	}
	logger := b.logger.With("component", "network", "listener", "controller")
	r := protocol.NewRouter(logger)
	b.registerControllerHandlers(r)
	// connections.max.idle.ms applies to every listener, as in Kafka;
	// a heartbeat connection is never idle that long.
	srv := &protocol.Server{
		Router:         r,
		MaxRequestSize: b.cfg.SocketRequestMaxBytes,
		IdleTimeout:    time.Duration(max(b.cfg.ConnectionsMaxIdleMs, 0)) * time.Millisecond,
		// One queued.max.request.bytes for both listeners: anyone who
		// reaches the controller listener can send requests too.
		// Connection limits stay off here: peers on one host share an
		// IP, and the listener serves only brokers.
		ShareBudgetWith: b.server,
		Logger:          logger,
	}
	// On an SSL controller listener the channel's connections run their
	// TLS handshake here, client certificate required.
	b.ctrlSec.secureChannel(srv)
	b.metrics.controlListener(r, srv, b.cfg.ControllerListenerNames()[0]) // metrics_requests.go
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := srv.Serve(ctx, ln)
		if err != nil && ctx.Err() == nil && !errors.Is(err, protocol.ErrServerClosed) {
			b.logger.Error("controller channel stopped serving", "err", err)
		}
		sctx, cancel := context.WithTimeout(context.Background(), controllerChannelShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			b.logger.Warn("controller channel: requests still in flight at shutdown", "err", err)
		}
	}()
}

// controllerAddr is node id's controller listener as host:port, from
// controller.quorum.voters, or "" if id is not a voter (and so cannot be
// the active controller).
func (b *Broker) controllerAddr(id int32) string {
	b.peers.votersOnce.Do(func() {
		voters, err := controller.ParseVoters(strings.Join(b.cfg.ControllerQuorumVoters, ","))
		if err != nil {
			return // New refused this configuration already
		}
		b.peers.voters = make(map[int32]string, len(voters))
		for _, v := range voters {
			b.peers.voters[v.ID] = v.Addr
		}
	})
	return b.peers.voters[id]
}

// dialController opens a controller-channel connection to the controller
// listener at addr, through Options.RaftDial.
func (b *Broker) dialController(ctx context.Context, network, addr string) (net.Conn, error) {
	if b.ctrlSec != nil {
		return b.ctrlSec.dial(ctx, b.peers.ctrlDial, network, addr)
	}
	return controller.DialController(ctx, b.peers.ctrlDial, network, addr)
}

// errNoControllerAddr is a request for a controller whose listener is not
// in controller.quorum.voters.
func errNoControllerAddr(id int32) error {
	return fmt.Errorf("broker: node %d has no controller listener in controller.quorum.voters", id)
}
