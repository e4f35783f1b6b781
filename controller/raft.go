package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// On-disk layout of the metadata log under Config.Dir:
//
//	<Dir>/raft.db        bolt database: raft log entries and stable state (term, vote)
//	<Dir>/snapshots/     raft file snapshots of the whole image, newest two kept
const (
	raftDBFile        = "raft.db"
	snapshotsRetained = 2
	// logCacheEntries keeps the newest entries in memory so a leader
	// replicating to followers rarely reads bolt.
	logCacheEntries = 512
)

// Raft timing. The defaults of hashicorp/raft (1 s heartbeat and election
// timeouts) suit WAN-ish deployments; sluice nodes share a LAN or a host, and
// the architecture asks for a failed controller to be replaced within about
// a second, so the timeouts are tens of milliseconds. LeaderLeaseTimeout may
// not exceed HeartbeatTimeout, and is kept a little below it so that
// electSoleVoterNow can lower the heartbeat timeout momentarily.
const (
	raftHeartbeatTimeout   = 50 * time.Millisecond
	raftElectionTimeout    = 50 * time.Millisecond
	raftLeaderLeaseTimeout = 40 * time.Millisecond
	raftCommitTimeout      = 5 * time.Millisecond
)

// raftNode is the raft instance and the stores it owns, so Close can
// release them in order: raft first, then the database under it.
type raftNode struct {
	raft  *raft.Raft
	store *raftboltdb.BoltStore
	trans *raft.InmemTransport
}

// raftServerID is the raft server id of a node: its Kafka node id in decimal,
// so the raft leader maps back to a broker id without a lookup table.
func raftServerID(nodeID int32) raft.ServerID {
	return raft.ServerID(strconv.FormatInt(int64(nodeID), 10))
}

// nodeIDOf parses a raft server id back into a node id; -1 if it is not one.
func nodeIDOf(id raft.ServerID) int32 {
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// startRaft opens the stores under dir and starts raft with f as its state
// machine, bootstrapping a one-voter configuration if dir holds no state.
// notify receives leadership changes (true on gaining, false on losing).
//
// The transport is in-memory: a cluster of one needs no network, and this
// keeps a single broker from opening a port nobody asked for. Multi-node
// replaces it with a TCP transport; nothing else here changes.
func startRaft(dir string, nodeID int32, f *fsm, notify chan<- bool, logger *slog.Logger) (*raftNode, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: create metadata dir: %w", err)
	}
	hlog := newHCLog(logger, hclog.Warn).Named("raft")

	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, raftDBFile)})
	if err != nil {
		return nil, fmt.Errorf("controller: open raft log %s: %w", dir, err)
	}
	logs, err := raft.NewLogCache(logCacheEntries, store)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controller: raft log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, hlog.Named("snapshots"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controller: raft snapshot store: %w", err)
	}

	id := raftServerID(nodeID)
	addr, trans := raft.NewInmemTransport(raft.ServerAddress("sluice-controller-" + string(id)))

	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.Logger = hlog
	conf.NotifyCh = notify
	conf.HeartbeatTimeout = raftHeartbeatTimeout
	conf.ElectionTimeout = raftElectionTimeout
	conf.LeaderLeaseTimeout = raftLeaderLeaseTimeout
	conf.CommitTimeout = raftCommitTimeout

	existing, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controller: inspect raft state: %w", err)
	}
	if !existing {
		boot := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: id, Address: addr}}}
		if err := raft.BootstrapCluster(conf, logs, store, snaps, trans, boot); err != nil {
			store.Close()
			return nil, fmt.Errorf("controller: bootstrap raft: %w", err)
		}
	}

	r, err := raft.NewRaft(conf, f, logs, store, snaps, trans)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controller: start raft: %w", err)
	}
	n := &raftNode{raft: r, store: store, trans: trans}
	n.electSoleVoterNow(id)
	return n, nil
}

// electSoleVoterNow skips the first heartbeat timeout when this node is the
// only voter. A follower waits one randomized heartbeat timeout (50–100 ms
// here) for a leader before standing for election, which is pointless when
// no other node can be leader. hashicorp/raft has no option to start as
// leader outside tests, but lowering the heartbeat timeout through
// ReloadConfig fires a follower's pending timer at once (so a shortened
// timeout takes effect immediately). Lowering it by a nanosecond and putting
// it back uses that to start the election now; raising a timeout never fires
// the timer, so the second reload changes nothing else. The follower then
// sees no leader contact, becomes candidate and, as sole voter, wins.
func (n *raftNode) electSoleVoterNow(id raft.ServerID) {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return
	}
	servers := fut.Configuration().Servers
	if len(servers) != 1 || servers[0].ID != id || servers[0].Suffrage != raft.Voter {
		return
	}
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout -= time.Nanosecond
	if n.raft.ReloadConfig(rc) != nil {
		return // only a slower first election is lost
	}
	rc.HeartbeatTimeout += time.Nanosecond
	_ = n.raft.ReloadConfig(rc)
}

// shutdown stops raft and closes the stores. Raft must stop first: it may
// be mid-write to the log.
func (n *raftNode) shutdown() error {
	err := n.raft.Shutdown().Error()
	if cerr := n.trans.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if cerr := n.store.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("controller: shut down raft: %w", err)
	}
	return nil
}

// isNotLeader reports whether err from raft means this node cannot decide
// right now and the client should retry at the (new) active controller.
func isNotLeader(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown)
}
