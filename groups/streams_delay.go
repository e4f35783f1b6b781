package groups

// When a streams group computes its target assignment (Kafka 4.4's
// GroupMetadataManager.streamsGroupHeartbeat and its assignment timers):
//
//   - Initial rebalance delay (group.streams.initial.rebalance.delay.ms,
//     the group's streams.initial.rebalance.delay.ms, KAFKA-19829 and
//     KAFKA-19926): a member that joins a group without members starts
//     the delay. Until it ends, the group is Assigning and every member
//     reconciles towards an empty target at epoch max(1, assignment
//     epoch), with the ASSIGNMENT_DELAYED status "Assignment delayed due
//     to the configured initial rebalance delay."; members that join
//     meanwhile do not extend it. When it ends, one target covers every
//     member that joined. A new group's first epoch with a delay is 2, so
//     that the real assignment has an epoch other than the empty one's.
//   - Assignment interval (group.streams.assignment.interval.ms, clamped
//     to group.streams.min/max.assignment.interval.ms, and the group's
//     streams.assignment.interval.ms): a target is computed at most once
//     per interval. A group epoch that moves sooner waits; members keep
//     reconciling towards the last target and are told "Assignment
//     delayed due to the configured assignment interval.". 0 computes
//     every epoch at once.
//
// Kafka fires a timer at the end of either wait; sluice computes the
// target at the first heartbeat or coordinator Tick after it. Neither wait
// is persisted: a coordinator that loads the group computes the target of
// a group epoch ahead of it at the group's first heartbeat.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeatResponse.Status added after the
// first five (streams.go).
const (
	streamsStatusAssignmentDelayed = 5
	// streamsStatusMissingClientTags exists from heartbeat version 1
	// (KAFKA-20744): a version 0 client fails on a code it does not know.
	streamsStatusMissingClientTags = 6
)

// The details of ASSIGNMENT_DELAYED, Kafka's words.
const (
	streamsInitialDelayDetail = "Assignment delayed due to the configured initial rebalance delay."
	streamsIntervalDetail     = "Assignment delayed due to the configured assignment interval."
)

// startInitialDelayLocked starts the initial rebalance delay of a group a
// first member joins. It is called before the join moves the group epoch.
func (sg *streamsGroup) startInitialDelayLocked(settings StreamsGroupSettings, now time.Time) {
	if settings.InitialRebalanceDelay <= 0 {
		return
	}
	if sg.epoch == 0 {
		sg.epoch++ // epoch 1 is the empty target of the delay
	}
	sg.delayUntil = now.Add(settings.InitialRebalanceDelay)
}

// maybeAssignStreamsLocked computes the target assignment if the group
// epoch moved past it and no delay holds it back. It returns the detail
// of the ASSIGNMENT_DELAYED status when one does, else "".
func (c *Coordinator) maybeAssignStreamsLocked(g *group, settings StreamsGroupSettings, now time.Time) string {
	sg := g.streams
	if sg.epoch <= sg.assignmentEpoch {
		return ""
	}
	if !sg.delayUntil.IsZero() {
		if now.Before(sg.delayUntil) {
			return streamsInitialDelayDetail
		}
		sg.delayUntil = time.Time{}
	} else if !sg.assignedAt.IsZero() && now.Before(sg.assignedAt.Add(settings.AssignmentInterval)) {
		return streamsIntervalDetail
	}
	c.assignStreamsLocked(g, settings, now)
	return ""
}

// assignmentDueLocked reports whether a held-back target assignment may
// be computed now. A group loaded by this coordinator and not heartbeated
// since has no settings yet (its standby count, tags and interval come
// with heartbeats): its first heartbeat assigns it.
func (sg *streamsGroup) assignmentDueLocked(now time.Time) bool {
	if sg.epoch <= sg.assignmentEpoch || len(sg.members) == 0 || sg.settings.SessionTimeout <= 0 {
		return false
	}
	if !sg.delayUntil.IsZero() {
		return !now.Before(sg.delayUntil)
	}
	return !now.Before(sg.assignedAt.Add(sg.settings.AssignmentInterval))
}

// targetOf returns the epoch and the tasks member id reconciles towards:
// the target assignment's, or during the initial rebalance delay an empty
// one at epoch max(1, assignment epoch).
func (sg *streamsGroup) targetOf(id string) (int32, streamsTasks) {
	if !sg.delayUntil.IsZero() && sg.epoch > sg.assignmentEpoch {
		return max(1, sg.assignmentEpoch), streamsTasks{}
	}
	return sg.assignmentEpoch, sg.target[id]
}

func streamsStatus(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = code, detail
	return s
}
