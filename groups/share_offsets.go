package groups

// The group side of the share-group offset admin APIs (KIP-932, Kafka
// 4.4's GroupMetadataManager / GroupCoordinatorShard):
// DescribeShareGroupOffsets with no topics lists the partitions a share
// group has initialized; AlterShareGroupOffsets and
// DeleteShareGroupOffsets change share-partition state only while the
// group has no members; DeleteGroups of a share group deletes the state of
// every partition the group initialized first.
//
// The share-partition state itself is the broker's (package share, through
// its Persister): these methods take what to do to it as a function, call
// it holding the group's write lock (so no member joins meanwhile and no
// other change of the group is written in between) but not its state
// lock, and record the outcome in the group's
// ShareGroupStatePartitionMetadata.
//
// Where sluice differs from Kafka: an altered partition is recorded
// initialized once its state is set, not first initializing (Kafka writes
// the initializing record before calling the persister, so a coordinator
// failover in between leaves it to be initialized again); a deleted
// topic's partitions leave the initialized set once their state is
// deleted, without passing through the deleting set.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareTopicResult is the outcome of DeleteShareGroupOffsets for one topic.
type ShareTopicResult struct {
	Code    int16
	Message string
}

// shareAdminGroup finds the share group name for an offset admin API:
// INVALID_GROUP_ID ("The group id is invalid.") for an empty id,
// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, and GROUP_ID_NOT_FOUND
// ("Group %s not found." / "Group %s is not a share group.") for a group
// that does not exist or is of another type. With create, a group that
// does not exist (or holds nothing yet) becomes an empty share group, as
// Kafka 4.4's alterShareGroupOffsets creates one. The caller holds
// nothing; the group is returned with neither lock held.
func (c *Coordinator) shareAdminGroup(name string, create bool) (*group, int16, string) {
	return c.shareAdminGroupOf(name, create, false)
}

// shareAdminGroupOf is shareAdminGroup; with lenient an empty id is looked
// up as any other (DescribeShareGroupOffsets and DeleteGroups do not refuse
// it).
func (c *Coordinator) shareAdminGroupOf(name string, create, lenient bool) (*group, int16, string) {
	if name == "" && !lenient {
		return nil, kerr.InvalidGroupID.Code, "The group id is invalid."
	}
	g, err := c.group(name, create)
	if err != nil {
		return nil, errCode(err), ""
	}
	if g == nil {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", name)
	}
	return g, 0, ""
}

// checkShareAdminLocked checks g under g.mu: loaded, alive, a share group
// (made one when create and g holds nothing yet).
func (c *Coordinator) checkShareAdminLocked(g *group, create bool) (int16, string) {
	switch {
	case g.unloaded:
		return kerr.NotCoordinator.Code, ""
	case g.state == stateDead:
		return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", g.name)
	case g.share == nil && create && g.isBlankLocked():
		g.share = newShareGroup()
		g.protocolType = "share"
		g.share.dirty.epoch = true // the group's record, so that it is loaded again
	case g.share == nil:
		return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a share group.", g.name)
	}
	return 0, ""
}

// checkShareStateChangeLocked is checkShareAdminLocked for the APIs that
// change share-partition state (AlterShareGroupOffsets,
// DeleteShareGroupOffsets), which also need the group to have no members:
// NON_EMPTY_GROUP ("The group is not empty.") otherwise.
func (c *Coordinator) checkShareStateChangeLocked(g *group, create bool) (int16, string) {
	if code, msg := c.checkShareAdminLocked(g, create); code != 0 {
		return code, msg
	}
	if len(g.share.members) > 0 {
		return kerr.NonEmptyGroup.Code, "The group is not empty."
	}
	return 0, ""
}

// allPartitions lists partitions 0 to n-1 of a topic with n partitions,
// those a topic whose state is being deleted may have state in.
func allPartitions(n int32) []int32 {
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	return all
}

// InitializedSharePartitions returns the partitions whose share-partition
// state share group name has initialized (Kafka's
// initializedShareGroupPartitions), what DescribeShareGroupOffsets
// describes when it names no topics. A group that does not exist, or is
// not a share group, has none; the code is NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS when this coordinator cannot answer for
// it.
func (c *Coordinator) InitializedSharePartitions(name string) (SharePartitions, int16) {
	g, code, _ := c.shareAdminGroupOf(name, false, true)
	if code == kerr.GroupIDNotFound.Code {
		return SharePartitions{}, 0
	}
	if code != 0 {
		return nil, code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unloaded {
		return nil, kerr.NotCoordinator.Code
	}
	out := SharePartitions{}
	if g.share == nil || g.state == stateDead {
		return out, 0
	}
	for id, t := range g.share.state.initialized {
		out[id] = slices.Clone(t.partitions)
	}
	return out, 0
}

// ShareOffsetsCoordinator reports whether this coordinator answers for
// group name (0), or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS;
// whether the group exists does not matter
// (DescribeShareGroupOffsets of named topics reads the state whatever the
// group).
func (c *Coordinator) ShareOffsetsCoordinator(name string) int16 {
	_, code, _ := c.shareAdminGroupOf(name, false, true)
	if code == kerr.GroupIDNotFound.Code {
		return 0
	}
	return code
}

// AlterShareOffsets handles the group side of AlterShareGroupOffsets
// (Kafka 4.4): the group is found or created as an empty share group; a
// group of another type is GROUP_ID_NOT_FOUND and one with members
// NON_EMPTY_GROUP ("The group is not empty."). Then set is called with the
// group epoch to set the share-partition state of parts (the partitions of
// existing topics the request names; names maps their ids to names) and
// returns each partition's error; the partitions set without error are
// recorded initialized. It returns set's errors, or a top-level code and
// message.
func (c *Coordinator) AlterShareOffsets(ctx context.Context, name string, parts SharePartitions, names map[[16]byte]string,
	set func(ctx context.Context, groupEpoch int32) map[[16]byte]map[int32]error) (map[[16]byte]map[int32]error, int16, string) {
	// Kafka creates the group only with the record of the partitions it
	// initializes: an alter of nothing but unknown partitions leaves no
	// group behind.
	create := len(parts) > 0
	g, code, msg := c.shareAdminGroup(name, create)
	if code == kerr.GroupIDNotFound.Code && !create {
		return nil, 0, ""
	}
	if code != 0 {
		return nil, code, msg
	}
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if g.share == nil && !create && !g.unloaded && g.isBlankLocked() {
		g.mu.Unlock()
		return nil, 0, ""
	}
	if code, msg := c.checkShareStateChangeLocked(g, create); code != 0 {
		g.mu.Unlock()
		return nil, code, msg
	}
	epoch := g.share.epoch
	g.mu.Unlock()

	var errs map[[16]byte]map[int32]error
	if len(parts) > 0 {
		errs = set(ctx, epoch)
	}

	g.mu.Lock()
	if g.unloaded || g.share == nil || g.state == stateDead {
		g.mu.Unlock()
		return errs, 0, ""
	}
	sg := g.share
	for _, id := range sortedTopicIDs(parts) {
		var done []int32
		for _, p := range parts[id] {
			if errs[id][p] == nil {
				done = append(done, p)
			}
		}
		if len(done) == 0 {
			continue
		}
		sg.state.initialized[id] = shareInitTopic{name: names[id], partitions: mergeParts(sg.state.initialized[id].partitions, done)}
		delete(sg.state.deleting, id)
		sg.dirty.state = true
	}
	records := g.shareRecordsLocked(c.cfg.Now())
	g.mu.Unlock()
	if code := c.appendShareAdminRecords(ctx, g, records); code != 0 {
		return nil, code, ""
	}
	return errs, 0, ""
}

// DeleteShareOffsets handles the group side of DeleteShareGroupOffsets
// (Kafka 4.4's initiateDeleteShareGroupOffsets and
// completeDeleteShareGroupOffsets): the share group must exist
// (GROUP_ID_NOT_FOUND) and have no members (NON_EMPTY_GROUP). Of the
// existing topics named, one whose state the group initialized (or is
// deleting) has its partitions handed to del; one it has none of is
// UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to
// delete."). del returns each topic's error; a topic deleted without error
// leaves the group's initialized partitions. It returns the result of
// each topic of topics, or a top-level code and message.
func (c *Coordinator) DeleteShareOffsets(ctx context.Context, name string, topics []TopicInfo,
	del func(ctx context.Context, parts SharePartitions) map[[16]byte]error) (map[[16]byte]ShareTopicResult, int16, string) {
	g, code, msg := c.shareAdminGroup(name, false)
	if code != 0 {
		return nil, code, msg
	}
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if code, msg := c.checkShareStateChangeLocked(g, false); code != 0 {
		g.mu.Unlock()
		return nil, code, msg
	}
	sg := g.share
	out := make(map[[16]byte]ShareTopicResult, len(topics))
	todo := SharePartitions{}
	for _, t := range topics {
		switch {
		case len(sg.state.initialized[t.ID].partitions) > 0:
			todo[t.ID] = slices.Clone(sg.state.initialized[t.ID].partitions)
		case sg.state.deleting[t.ID] != "":
			todo[t.ID] = allPartitions(t.Partitions)
		default:
			out[t.ID] = ShareTopicResult{Code: kerr.UnknownTopicOrPartition.Code, Message: "There is no offset information to delete."}
		}
	}
	g.mu.Unlock()

	var errs map[[16]byte]error
	if len(todo) > 0 {
		errs = del(ctx, todo)
	}

	g.mu.Lock()
	alive := !g.unloaded && g.share != nil && g.state != stateDead
	for _, id := range sortedTopicIDs(todo) {
		if err := errs[id]; err != nil {
			out[id] = ShareTopicResult{Code: errCode(err), Message: err.Error()}
			continue
		}
		out[id] = ShareTopicResult{}
		if alive {
			delete(g.share.state.initialized, id)
			delete(g.share.state.initializing, id)
			delete(g.share.state.deleting, id)
			g.share.dirty.state = true
		}
	}
	var records []kv
	if alive {
		records = g.shareRecordsLocked(c.cfg.Now())
	}
	g.mu.Unlock()
	if code := c.appendShareAdminRecords(ctx, g, records); code != 0 {
		return nil, code, ""
	}
	return out, 0, ""
}

// appendShareAdminRecords writes the records an offset admin API changed
// g with (taken under g.mu, released since; g.writeMu held), if any, and
// returns the code of a failed append (appendErrorCode), 0 otherwise.
func (c *Coordinator) appendShareAdminRecords(ctx context.Context, g *group, records []kv) int16 {
	if len(records) == 0 {
		return 0
	}
	if err := c.append(ctx, g, records); err != nil {
		return appendErrorCode(err, false)
	}
	return 0
}

// ShareStateForDeletion is DeleteGroups' first step for a share group
// (Kafka's sharePartitionDeleteRequests): for an empty share group, every
// partition whose share-partition state it has initialized, is
// initializing or is deleting (topics names the partition counts of the
// topics that exist), with isShare set; a share group with members is
// NON_EMPTY_GROUP. A group that does not exist or is of another type is
// not a share group (isShare false, code 0): the general deletion answers
// for it.
func (c *Coordinator) ShareStateForDeletion(name string, topics map[[16]byte]int32) (parts SharePartitions, isShare bool, code int16) {
	g, code, _ := c.shareAdminGroupOf(name, false, true)
	if code == kerr.GroupIDNotFound.Code {
		return nil, false, 0
	}
	if code != 0 {
		return nil, false, code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unloaded {
		return nil, false, kerr.NotCoordinator.Code
	}
	if g.share == nil || g.state == stateDead {
		return nil, false, 0
	}
	sg := g.share
	if len(sg.members) > 0 {
		return nil, true, kerr.NonEmptyGroup.Code
	}
	parts = SharePartitions{}
	for _, set := range []map[topicID]shareInitTopic{sg.state.initialized, sg.state.initializing} {
		for id, t := range set {
			if _, ok := topics[id]; ok {
				parts[id] = mergeParts(parts[id], t.partitions)
			}
		}
	}
	for id := range sg.state.deleting {
		if n, ok := topics[id]; ok {
			parts[id] = mergeParts(parts[id], allPartitions(n))
		}
	}
	return parts, true, 0
}
