package controller

import (
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Voter is one raft voter of the metadata quorum: a node id and the
// host:port its raft transport listens on (the CONTROLLER listener).
type Voter struct {
	ID   int32
	Addr string
}

// ParseVoters parses controller.quorum.voters in KRaft's format,
// "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095". Empty input is no
// voters (a single-node cluster). Ids must be unique and non-negative and
// every address must be host:port.
func ParseVoters(s string) ([]Voter, error) {
	var voters []Voter
	seen := map[int32]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		idText, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("controller: voter %q is not id@host:port", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("controller: voter %q has an invalid node id", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller: voter %q: %v", item, err)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("controller: voter id %d appears twice", id)
		}
		seen[int32(id)] = true
		voters = append(voters, Voter{ID: int32(id), Addr: addr})
	}
	return voters, nil
}

// clustered reports whether this node is part of a multi-node cluster
// (voters configured): raft over TCP and serf membership. Without voters
// the node is a cluster of one on an in-memory transport and opens no port.
func (cfg *Config) clustered() bool { return len(cfg.Voters) > 0 }

// voterAddr returns the raft address of voter id, or "" if id is no voter.
func (cfg *Config) voterAddr(id int32) string {
	for _, v := range cfg.Voters {
		if v.ID == id {
			return v.Addr
		}
	}
	return ""
}

// Serf tags every node gossips. They are all a new active controller needs
// to register a broker and to add it to raft as a non-voter, so
// registration needs no RPC of its own.
const (
	tagID          = "id"    // node id, decimal
	tagHost        = "host"  // Kafka advertised host
	tagPort        = "port"  // Kafka advertised port
	tagRack        = "rack"  // broker.rack, absent when unset
	tagEndpoints   = "eps"   // advertised listeners (encodeEndpoints), absent when none are named
	tagRaft        = "raft"  // raft transport address
	tagRole        = "role"  // roleVoter or roleBroker
	tagIncarnation = "inc"   // hex of the process's random incarnation id
	tagClean       = "clean" // "1" when the log dir's previous shutdown was clean (elr.go)
	roleVoter      = "voter" // in controller.quorum.voters
	roleBroker     = "broker"
)

// member is a node as the membership layer sees it.
type member struct {
	ID          int32
	Host        string
	Port        int32
	Rack        string
	Endpoints   []Endpoint
	RaftAddr    string
	Voter       bool
	Incarnation [16]byte
	// CleanShutdown reports that the process's log dir was shut down
	// cleanly before it started (Config.CleanShutdown; elr.go).
	CleanShutdown bool
	// Gossiped marks a member learnt through serf; a lone node's view of
	// itself is not, and re-registers only when its endpoint changes.
	Gossiped bool
	Status   memberStatus
}

// memberStatus is what the controller makes of serf's member status.
type memberStatus int

const (
	memberAlive   memberStatus = iota
	memberLeaving              // announced it is leaving; still serving
	memberFailed               // failure detector declared it dead
	memberLeft                 // left gracefully
)

// tags renders this node's serf tags.
func (c *Controller) tags(raftAddr string) map[string]string {
	role := roleBroker
	if c.cfg.voterAddr(c.cfg.NodeID) != "" {
		role = roleVoter
	}
	t := map[string]string{
		tagID:          strconv.FormatInt(int64(c.cfg.NodeID), 10),
		tagHost:        c.cfg.Host,
		tagPort:        strconv.FormatInt(int64(c.cfg.Port), 10),
		tagRaft:        raftAddr,
		tagRole:        role,
		tagIncarnation: hex.EncodeToString(c.incarnation[:]),
	}
	if c.cfg.Rack != "" {
		t[tagRack] = c.cfg.Rack
	}
	if c.cfg.CleanShutdown {
		t[tagClean] = "1"
	}
	if len(c.cfg.Endpoints) > 0 {
		t[tagEndpoints] = encodeEndpoints(c.cfg.Endpoints)
	}
	return t
}

// encodeEndpoints writes endpoints as a serf tag: comma-separated
// LISTENER=PROTOCOL@host:port, compact because serf caps a node's tags at
// 512 bytes. Listener and protocol names hold no '=', '@' or ','.
func encodeEndpoints(eps []Endpoint) string {
	parts := make([]string, len(eps))
	for i, e := range eps {
		parts[i] = e.Listener + "=" + e.SecurityProtocol + "@" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
	}
	return strings.Join(parts, ",")
}

// decodeEndpoints reads encodeEndpoints' tag; ok is false if it is
// malformed.
func decodeEndpoints(s string) (eps []Endpoint, ok bool) {
	if s == "" {
		return nil, true
	}
	for _, part := range strings.Split(s, ",") {
		name, rest, ok1 := strings.Cut(part, "=")
		proto, addr, ok2 := strings.Cut(rest, "@")
		host, portText, err := net.SplitHostPort(addr)
		port, perr := strconv.ParseInt(portText, 10, 32)
		if !ok1 || !ok2 || err != nil || perr != nil || name == "" {
			return nil, false
		}
		eps = append(eps, Endpoint{Listener: name, SecurityProtocol: proto, Host: host, Port: int32(port)})
	}
	return eps, true
}

// memberFromTags decodes a member's tags; ok is false for a node that is not
// a sluice broker (or gossips malformed tags), which the controller ignores.
func memberFromTags(tags map[string]string) (m member, ok bool) {
	id, err := strconv.ParseInt(tags[tagID], 10, 32)
	if err != nil || id < 0 {
		return member{}, false
	}
	port, err := strconv.ParseInt(tags[tagPort], 10, 32)
	if err != nil {
		return member{}, false
	}
	inc, err := hex.DecodeString(tags[tagIncarnation])
	if err != nil || len(inc) != 16 {
		return member{}, false
	}
	eps, ok := decodeEndpoints(tags[tagEndpoints])
	if !ok {
		return member{}, false
	}
	m = member{
		ID:        int32(id),
		Host:      tags[tagHost],
		Port:      int32(port),
		Rack:      tags[tagRack],
		Endpoints: eps,
		RaftAddr:  tags[tagRaft],
		Voter:     tags[tagRole] == roleVoter,
		Gossiped:  true,

		CleanShutdown: tags[tagClean] == "1",
	}
	copy(m.Incarnation[:], inc)
	return m, true
}

// localMember is this node as a member, used by a lone node that runs no
// serf.
func (c *Controller) localMember() member {
	return member{
		ID:          c.cfg.NodeID,
		Host:        c.cfg.Host,
		Port:        c.cfg.Port,
		Rack:        c.cfg.Rack,
		Endpoints:   c.cfg.Endpoints,
		Incarnation: c.incarnation,
		Status:      memberAlive,

		CleanShutdown: c.cfg.CleanShutdown,
	}
}
