package broker

// BrokerHeartbeat (api key 63), versions 0–1 (KIP-631).
//
// In KRaft a broker heartbeats to the active controller over the
// controller listener; the controller fences a broker whose session
// (broker.session.timeout.ms) passes without one and unfences a broker
// that heartbeats again. sluice does the same: a broker sends its
// heartbeats to the controller channel of the active controller
// (control_listener.go, the Kafka side of its controller listener, shared
// with raft), over one long-lived connection (controller_heartbeat.go),
// and this handler hands them to the controller together with the
// connection's lifetime: when the sending process dies its kernel closes
// the connection and the controller fences it at once instead of waiting
// for the session to expire (controller/session.go). It is not served on
// the client listener: a client that sends it there has its connection
// closed.
//
// Only sluice brokers send it (client id peerClientIDPrefix + node id);
// the request carries the sender's process incarnation in a tagged field
// (incarnationTag), which the controller matches against the incarnation
// the broker gossips. A request without one is INVALID_REQUEST. A node
// that is not the active controller answers NOT_CONTROLLER. IsFenced is
// the controller's verdict for that process; IsCaughtUp mirrors it, since
// a broker is unfenced only once its registration is in the log it
// replicates; ShouldShutDown is never set. CurrentMetadataOffset, the
// broker's last metadata log index, feeds DescribeQuorum
// (controller/quorum.go). OfflineLogDirs, with the offline replicas in
// another tagged field (offlineReplicasTag, log_dirs_fail.go), reports the
// sender's failed log directories (controller/log_dirs.go). WantFence and
// WantShutDown are ignored: controlled shutdown has its own request
// (07_controlled_shutdown.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// incarnationTag is the tagged field of a BrokerHeartbeat request that
// holds the sending process's 16-byte incarnation. Like appliedIndexTag it
// is numbered far above any tag Kafka will add.
const incarnationTag = 0x51CF

func (b *Broker) handleBrokerHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	hb := controller.Heartbeat{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, MetadataOffset: req.CurrentMetadataOffset}
	found := false
	req.UnknownTags.Each(func(key uint32, val []byte) {
		if key == incarnationTag && len(val) == len(hb.Incarnation) {
			copy(hb.Incarnation[:], val)
			found = true
		}
	})
	if !found {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	hb.Offline = offlineReportOf(req)
	reply, err := b.ctrl.BrokerHeartbeat(ctx, hb, r.Conn.Context())
	if err != nil {
		b.logger.Debug("broker heartbeat refused", "broker", req.BrokerID, "err", fmt.Sprint(err))
		resp.ErrorCode = errorCode(err)
		resp.IsFenced = true
		return resp, nil
	}
	resp.IsFenced = reply.Fenced
	resp.IsCaughtUp = !reply.Fenced
	return resp, nil
}
