package broker

// Share groups (KIP-932) in the broker: the registration of their APIs
// and the gate every one of them shares.
//
// Kafka serves the share-group APIs only while the share.version feature
// is finalized at level 1 or more (KafkaApis.isShareGroupProtocolEnabled):
// below it every one of them answers UNSUPPORTED_VERSION, and they are
// advertised all the same. sluice does the same with its finalized
// share.version (featureLevel, features.go). Tests enable share groups
// without the feature through shareGroupsForced (export_share_test.go).
//
// ShareGroupHeartbeat (76) and ShareGroupDescribe (77) are the group
// coordinator's (package groups, share*.go); ShareFetch (78) and
// ShareAcknowledge (79) the share partitions'.

import (
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/groups"
)

// shareGroupsForced makes shareGroupsEnabled true whatever share.version
// says; only tests set it, for the share-group code that works before the
// feature's level is offered.
var shareGroupsForced atomic.Bool

// shareGroupsEnabled reports whether share groups are served: share.version
// is finalized at 1 or more, as in Kafka.
func (b *Broker) shareGroupsEnabled() bool {
	return shareGroupsForced.Load() || b.featureLevel("share.version") >= 1
}

// registerShareHandlers registers the share-group APIs (KIP-932):
// ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78),
// ShareAcknowledge (79), the share coordinator's state APIs (83-87) and
// the share-group offset admin APIs (90-92). Kafka 4.4 serves version 1 of
// 76 and 77 only (version 0 was the early-access protocol of Kafka 4.0).
func (b *Broker) registerShareHandlers(r quotaRouter) {
	r.Register(76, 1, 1, b.handleShareGroupHeartbeat)
	r.Register(77, 1, 1, b.handleShareGroupDescribe)
	r.Register(78, 1, 2, b.handleShareFetch)       // 78_share_fetch.go
	r.Register(79, 1, 2, b.handleShareAcknowledge) // 79_share_acknowledge.go
	r.Register(83, 0, 0, b.handleInitializeShareGroupState)
	r.Register(84, 0, 0, b.handleReadShareGroupState)
	r.Register(85, 0, 1, b.handleWriteShareGroupState)
	r.Register(86, 0, 0, b.handleDeleteShareGroupState)
	r.Register(87, 0, 1, b.handleReadShareGroupStateSummary)

	r.Register(90, 0, 1, b.handleDescribeShareGroupOffsets) // 90_describe_share_group_offsets.go
	r.Register(91, 0, 0, b.handleAlterShareGroupOffsets)    // 91_alter_share_group_offsets.go
	r.Register(92, 0, 0, b.handleDeleteShareGroupOffsets)   // 92_delete_share_group_offsets.go
}

// shareGroupSettings returns the session timeout, heartbeat interval and
// assignment interval a share group runs with now: its
// share.session.timeout.ms, share.heartbeat.interval.ms and
// share.assignment.interval.ms group configs where set, else the broker's
// group.share.* values (group.share.assignment.interval.ms as altered
// dynamically for this broker or the cluster, else as configured, capped
// to group.share.min/max.assignment.interval.ms). The heartbeat handler
// reads them on every heartbeat, so a change applies from each member's
// next heartbeat; they are also groups.Config.ShareGroupSettings (members
// restored at a load, changes made outside a heartbeat).
func (b *Broker) shareGroupSettings(group string) groups.ShareGroupSettings {
	var set map[string]string
	img := b.metadata()
	if img != nil {
		set = img.GroupConfigs[group]
	}
	t := b.cfg.ShareGroupTimeouts(set)
	interval, ok := set["share.assignment.interval.ms"]
	if !ok {
		perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
		if interval, ok = perBroker["group.share.assignment.interval.ms"]; !ok {
			interval = clusterDefault["group.share.assignment.interval.ms"]
		}
	}
	return groups.ShareGroupSettings{
		SessionTimeout:     time.Duration(t.SessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval:  time.Duration(t.HeartbeatIntervalMs) * time.Millisecond,
		AssignmentInterval: b.cfg.ShareGroupAssignmentInterval(interval),
	}
}
