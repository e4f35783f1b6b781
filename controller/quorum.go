package controller

// The metadata quorum as Kafka's quorum tools see it (KIP-595's
// DescribeQuorum, KIP-853's AddRaftVoter and RemoveRaftVoter), mapped onto
// hashicorp/raft:
//
//   - leader id and epoch: the raft leader and its term (a term is what a
//     KRaft epoch is: it grows with every election);
//   - high watermark: the raft commit index; log end offsets are raft
//     indexes (the last index in a node's log), not Kafka's "next offset";
//   - voters: the raft configuration's voters; observers: its non-voters
//     (every broker that is not a voter replicates the metadata log as a
//     raft non-voter, as KRaft brokers are observers). A server in raft's
//     transient Staging suffrage is reported as an observer.
//
// What is approximated. hashicorp/raft does not expose the leader's
// per-follower replication state (next index, last contact), so the
// active controller learns each node's log end offset from that node's
// broker heartbeats, which carry it as BrokerHeartbeat's
// CurrentMetadataOffset (Kafka's field for the same fact), every
// broker.heartbeat.interval.ms (500 ms by default). So:
//
//   - a follower's LogEndOffset is its last index as of its latest
//     heartbeat (-1 before the first one this controller received);
//   - LastFetchTimestamp is when that heartbeat arrived;
//   - LastCaughtUpTimestamp is the latest heartbeat that reported an
//     index at or past the leader's commit index at that moment (Kafka:
//     the last fetch that reached the leader's log end offset).
//
// The leader's own row is exact: its last index, and now for both
// timestamps, as Kafka reports for the leader.
//
// Directory ids. Kafka names a voter by id and metadata log directory id
// (meta.properties' directory.id), so that a controller that lost its
// disk comes back as a different voter. sluice writes no meta.properties
// and raft names a server by node id alone; the directory id sluice
// reports is derived from the cluster id and the node id
// (DirectoryID), stable for the life of the cluster, and only the node
// id identifies a voter. (A static KRaft quorum, kraft.version 0, reports
// the zero id for every voter instead.) As in Kafka 4.4, both AddRaftVoter
// and RemoveRaftVoter refuse the zero id with INVALID_REQUEST ("... didn't
// include a valid voter"); AddRaftVoter takes any other (the tool reads it
// from the new node's meta.properties, which sluice cannot check), and
// RemoveRaftVoter requires the one DescribeQuorum reports, answering
// VOTER_NOT_FOUND otherwise, as Kafka does for a mismatched directory id.
//
// Voter changes. AddRaftVoter promotes a node that already replicates the
// log as a non-voter (an observer, in KIP-853's words: Kafka too adds only
// a replica that is fetching from the leader) with raft's AddVoter, at the
// raft address it already has; the listeners in the request are not
// used to reach it. RemoveRaftVoter is raft's RemoveServer. Both run on
// the active controller only (NOT_CONTROLLER elsewhere, so brokers
// forward them), one at a time, and answer once raft has committed the
// new configuration (Kafka's AckWhenCommitted=true; false is answered the
// same way, later than asked). A removed voter that is still alive is
// added back as a non-voter by the leadership loop, so it keeps
// replicating metadata as a broker, as a removed KRaft controller in
// combined mode keeps its broker role. Unlike Kafka, sluice needs no
// kraft.version upgrade first: its voter set is raft's configuration,
// which has always been dynamic.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// voterChangeTimeout bounds one AddRaftVoter or RemoveRaftVoter when the
// caller's context has no earlier deadline.
const voterChangeTimeout = 15 * time.Second

// QuorumReplica is one member of the metadata quorum as DescribeQuorum
// reports it. Offsets are raft indexes; timestamps are Unix milliseconds,
// -1 when unknown.
type QuorumReplica struct {
	ID                    int32
	DirectoryID           [16]byte
	LogEndOffset          int64
	LastFetchTimestamp    int64
	LastCaughtUpTimestamp int64
	// Addr is the node's raft address, which is its controller listener
	// (host:port).
	Addr string
}

// QuorumInfo is the active controller's view of the metadata quorum.
type QuorumInfo struct {
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	// Voters and Observers are sorted by node id.
	Voters    []QuorumReplica
	Observers []QuorumReplica
}

// quorumProgress is what the active controller knows of each node's
// metadata log from its heartbeats. Its zero value is ready to use.
type quorumProgress struct {
	mu    sync.Mutex
	nodes map[int32]replicaProgress

	// change serializes voter changes: raft takes one configuration change
	// at a time, and the checks before it must see the configuration the
	// previous change left.
	change sync.Mutex
}

type replicaProgress struct {
	logEnd       int64
	lastFetch    time.Time
	lastCaughtUp time.Time
}

// record notes that node id reported logEnd (its last raft index) at now,
// when the leader's commit index was commit. logEnd < 0 (a broker that
// does not report it) records only the contact.
func (q *quorumProgress) record(id int32, logEnd int64, commit uint64, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nodes == nil {
		q.nodes = map[int32]replicaProgress{}
	}
	p := q.nodes[id]
	p.lastFetch = now
	if logEnd >= 0 {
		p.logEnd = logEnd
		if uint64(logEnd) >= commit {
			p.lastCaughtUp = now
		}
	} else if p.lastFetch.IsZero() {
		p.logEnd = -1
	}
	q.nodes[id] = p
}

func (q *quorumProgress) get(id int32) (replicaProgress, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := q.nodes[id]
	return p, ok
}

// recordHeartbeatProgress is called for every heartbeat the active
// controller receives (session.go).
func (c *Controller) recordHeartbeatProgress(id int32, logEnd int64, now time.Time) {
	c.quorum.record(id, logEnd, c.node.raft.CommitIndex(), now)
}

// MetadataLogEnd returns the last index of this node's metadata log, which
// its heartbeats report as CurrentMetadataOffset.
func (c *Controller) MetadataLogEnd() int64 { return int64(c.node.raft.LastIndex()) }

// DirectoryID is the directory id sluice reports for node id's metadata
// log: the first 16 bytes of SHA-256 over the cluster id and the node id,
// with the bits of a version 4 UUID set so Kafka's tools print it as
// they print their own, and never starting with '-' (as newUUID).
func (c *Controller) DirectoryID(id int32) [16]byte {
	sum := sha256.Sum256([]byte("sluice metadata directory\x00" + c.ClusterID() + "\x00" + strconv.FormatInt(int64(id), 10)))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	if u[0]>>2 == 62 { // base64url '-': the tools would read it as a flag
		u[0] &^= 0x80
	}
	return u
}

// raftConfiguration returns the latest raft configuration this node knows
// (committed or not; on the leader, what it replicates).
func (c *Controller) raftConfiguration() ([]raft.Server, error) {
	fut := c.node.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, fmt.Errorf("%w: read raft configuration: %v", kerr.UnknownServerError, err)
	}
	return fut.Configuration().Servers, nil
}

// VoterAddr returns node id's controller listener (its raft address) if
// the raft configuration lists it as a voter, or "". It lets brokers reach
// a voter that AddRaftVoter added, which controller.quorum.voters does not
// name.
func (c *Controller) VoterAddr(id int32) string {
	servers, err := c.raftConfiguration()
	if err != nil {
		return ""
	}
	for _, s := range servers {
		if s.ID == raftServerID(id) && s.Suffrage == raft.Voter {
			return string(s.Address)
		}
	}
	return ""
}

// DescribeQuorum reports the metadata quorum as the active controller sees
// it. On any other node it returns NOT_CONTROLLER: only the leader knows
// its followers' progress, so brokers forward the request (as Kafka's
// brokers forward DescribeQuorum to the controller).
func (c *Controller) DescribeQuorum() (QuorumInfo, error) {
	if err := c.requireLeader(); err != nil {
		return QuorumInfo{}, err
	}
	servers, err := c.raftConfiguration()
	if err != nil {
		return QuorumInfo{}, err
	}
	term, _ := strconv.ParseInt(c.node.raft.Stats()["term"], 10, 32)
	now := time.Now()
	info := QuorumInfo{
		LeaderID:      c.cfg.NodeID,
		LeaderEpoch:   int32(term),
		HighWatermark: int64(c.node.raft.CommitIndex()),
	}
	for _, s := range servers {
		id := nodeIDOf(s.ID)
		if id < 0 {
			continue
		}
		r := QuorumReplica{ID: id, DirectoryID: c.DirectoryID(id), LogEndOffset: -1,
			LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1, Addr: string(s.Address)}
		if id == c.cfg.NodeID {
			r.LogEndOffset = int64(c.node.raft.LastIndex())
			r.LastFetchTimestamp, r.LastCaughtUpTimestamp = now.UnixMilli(), now.UnixMilli()
		} else if p, ok := c.quorum.get(id); ok {
			r.LogEndOffset = p.logEnd
			r.LastFetchTimestamp = p.lastFetch.UnixMilli()
			if !p.lastCaughtUp.IsZero() {
				r.LastCaughtUpTimestamp = p.lastCaughtUp.UnixMilli()
			}
		}
		if s.Suffrage == raft.Voter {
			info.Voters = append(info.Voters, r)
		} else {
			info.Observers = append(info.Observers, r)
		}
	}
	byID := func(a, b QuorumReplica) int { return int(a.ID - b.ID) }
	slices.SortFunc(info.Voters, byID)
	slices.SortFunc(info.Observers, byID)
	return info, nil
}

// AddVoter makes node id a voter of the metadata quorum (AddRaftVoter). The
// node must replicate the log as a non-voter already; its directory id is
// not checked (see the file comment). Errors carry Kafka's codes:
// NOT_CONTROLLER off the active controller, DUPLICATE_VOTER for a voter,
// REQUEST_TIMED_OUT for a node that is not an observer of the quorum (as
// Kafka answers for a new voter it has no fetch from) or a change that
// did not commit in time.
func (c *Controller) AddVoter(ctx context.Context, id int32) error {
	if err := c.requireLeader(); err != nil {
		return err
	}
	c.quorum.change.Lock()
	defer c.quorum.change.Unlock()
	servers, err := c.raftConfiguration()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(servers, func(s raft.Server) bool { return s.ID == raftServerID(id) })
	if i >= 0 && servers[i].Suffrage == raft.Voter {
		return fmt.Errorf("%w: The voter id for ReplicaKey(id=%d) is already part of the set of voters %s.", kerr.DuplicateVoter, id, voterIDs(servers))
	}
	if i < 0 {
		return fmt.Errorf("%w: New voter %d is not ready to receive requests: it does not replicate the metadata log (no sluice broker with this node id is alive)", kerr.RequestTimedOut, id)
	}
	if p, ok := c.quorum.get(id); !ok || p.lastCaughtUp.IsZero() {
		return fmt.Errorf("%w: Aborted add voter operation for %d since it is lagging behind", kerr.RequestTimedOut, id)
	}
	return c.voterChange(ctx, func(timeout time.Duration) raft.IndexFuture {
		return c.node.raft.AddVoter(servers[i].ID, servers[i].Address, 0, timeout)
	})
}

// RemoveVoter removes node id from the voters of the metadata quorum
// (RemoveRaftVoter). directoryID must be DirectoryID(id). Errors
// carry Kafka's codes: NOT_CONTROLLER off the active controller,
// VOTER_NOT_FOUND for a node that is no voter or a wrong directory id,
// INVALID_REQUEST for the last voter, REQUEST_TIMED_OUT for a change
// that did not commit in time.
func (c *Controller) RemoveVoter(ctx context.Context, id int32, directoryID [16]byte) error {
	if err := c.requireLeader(); err != nil {
		return err
	}
	c.quorum.change.Lock()
	defer c.quorum.change.Unlock()
	servers, err := c.raftConfiguration()
	if err != nil {
		return err
	}
	isVoter := slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raftServerID(id) && s.Suffrage == raft.Voter })
	if !isVoter || directoryID != c.DirectoryID(id) {
		return fmt.Errorf("%w: Cannot remove voter ReplicaKey(id=%d, directoryId=%s) from the set of voters %s", kerr.VoterNotFound, id, uuidString(directoryID), voterIDs(servers))
	}
	voters := 0
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters == 1 {
		return fmt.Errorf("%w: Cannot remove voter %d: it is the only voter of the metadata quorum", kerr.InvalidRequest, id)
	}
	return c.voterChange(ctx, func(timeout time.Duration) raft.IndexFuture {
		return c.node.raft.RemoveServer(raftServerID(id), 0, timeout)
	})
}

// voterChange runs one raft configuration change and waits for it to
// commit, mapping raft's errors to Kafka's.
func (c *Controller) voterChange(ctx context.Context, change func(timeout time.Duration) raft.IndexFuture) error {
	timeout := voterChangeTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if timeout <= 0 {
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, context.DeadlineExceeded)
	}
	err := change(timeout).Error()
	switch {
	case err == nil:
		c.pokeReconcile()
		return nil
	case isNotLeader(err):
		return fmt.Errorf("%w: %w: %v", kerr.NotController, ErrOutcomeUnknown, err)
	case err == raft.ErrEnqueueTimeout:
		return fmt.Errorf("%w: Request timed out waiting for leader to handle previous voter change request", kerr.RequestTimedOut)
	default:
		return fmt.Errorf("%w: %w: voter change: %v", kerr.UnknownServerError, ErrOutcomeUnknown, err)
	}
}

// voterIDs renders the voters of servers for error messages, as Kafka
// prints a voter set.
func voterIDs(servers []raft.Server) string {
	var ids []int32
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			ids = append(ids, nodeIDOf(s.ID))
		}
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// SplitHostPort splits a raft address into host and port for
// DescribeQuorum's nodes; ok is false if it is not host:port.
func SplitHostPort(addr string) (host string, port uint16, ok bool) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, false
	}
	return h, uint16(n), true
}
