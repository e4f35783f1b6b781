//go:build compatfault

package broker

// Fault injection for compat's fault-detected row; compiled only with
// -tags compatfault, never into a normal build.
//
// SLUICE_FAULT=wrong-leader makes Metadata (key 3) and
// DescribeTopicPartitions (key 75) report leader faultLeaderID, a node that
// does not exist, for every partition this node leads. Exit codes of the
// tools reading metadata do not change; only a row that checks the answer
// notices. Any other non-empty value stops the broker at start.

import (
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// faultLeaderID is the leader the wrong-leader fault reports.
const faultLeaderID = 7

func init() { installFaults = installCompatFaults }

func installCompatFaults(b *Broker) {
	switch mode := os.Getenv("SLUICE_FAULT"); mode {
	case "":
		return
	case "wrong-leader":
		b.logger.Warn("compatfault: injecting a fault: every partition reports a wrong leader",
			"SLUICE_FAULT", mode, "leader", faultLeaderID)
		b.router.Hook = b.wrongLeaderHook
	default:
		panic(fmt.Sprintf("compatfault: unknown SLUICE_FAULT %q (known: wrong-leader)", mode))
	}
}

// wrongLeaderHook runs the real handler, then rewrites the leader. Hooks get
// no context; the handlers use one only to bound topic auto-creation.
func (b *Broker) wrongLeaderHook(req *protocol.Request) (kmsg.Response, error, bool) {
	var handler protocol.Handler
	switch req.Header.APIKey {
	case 3:
		handler = b.handleMetadata
	case 75:
		handler = b.handleDescribeTopicPartitions
	default:
		return nil, nil, false
	}
	resp, err := handler(context.Background(), req)
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if p := &r.Topics[i].Partitions[j]; p.Leader == b.cfg.NodeID {
					p.Leader = faultLeaderID
				}
			}
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if p := &r.Topics[i].Partitions[j]; p.LeaderID == b.cfg.NodeID {
					p.LeaderID = faultLeaderID
				}
			}
		}
	}
	return resp, err, true
}
