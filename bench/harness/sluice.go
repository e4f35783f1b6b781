package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sluiceSystem starts nodes of the sluice binary bin, as the README's
// three-node recipe does: per node a PLAINTEXT and a CONTROLLER listener,
// every node a raft voter, serf gossip on its own port with every node's
// gossip address as seeds. Everything else is sluice's defaults.
type sluiceSystem struct {
	bin string
	// cpuProfileDir, when set, makes every cluster node write a CPU profile
	// of its whole life (--cpu-profile) to node-<id>.prof there; it is
	// written when the node stops cleanly.
	cpuProfileDir string
}

func (s *sluiceSystem) name() string { return "sluice" }

func (s *sluiceSystem) startCluster(ctx context.Context, dir string, n int) (*cluster, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	addr := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	var voters, gossip []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr(ports[3*i+1])))
		gossip = append(gossip, addr(ports[3*i+2]))
	}
	c := &cluster{}
	for i := range n {
		id := int32(i + 1)
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(filepath.Join(nodeDir, "data"), 0o755); err != nil {
			return nil, err
		}
		args := []string{
			"--override", fmt.Sprintf("node.id=%d", id),
			"--override", "log.dirs=" + filepath.Join(nodeDir, "data"),
			"--override", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", addr(ports[3*i]), addr(ports[3*i+1])),
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "gossip.listener=" + addr(ports[3*i+2]),
			"--override", "gossip.join=" + strings.Join(gossip, ","),
		}
		if s.cpuProfileDir != "" {
			args = append(args, "--cpu-profile", filepath.Join(s.cpuProfileDir, fmt.Sprintf("node-%d.prof", id)))
		}
		nd := &node{id: id, addr: addr(ports[3*i]), dataDir: filepath.Join(nodeDir, "data")}
		nd.spawn = func() (*proc, error) {
			return spawn(s.bin, args, nil, nodeDir, filepath.Join(nodeDir, "broker.log"))
		}
		if err := nd.restart(); err != nil {
			c.stop(10 * time.Second)
			return nil, err
		}
		c.nodes = append(c.nodes, nd)
	}
	if err := c.waitFormed(ctx, 2*time.Minute); err != nil {
		c.stop(10 * time.Second)
		return nil, fmt.Errorf("sluice cluster did not form: %w", err)
	}
	return c, nil
}

func (s *sluiceSystem) startSingle(ctx context.Context, dir string) (*node, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	nd := &node{id: 1, addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), dataDir: filepath.Join(dir, "data")}
	args := []string{
		"--override", "log.dirs=" + filepath.Join(dir, "data"),
		"--override", "listeners=PLAINTEXT://" + nd.addr,
	}
	nd.spawn = func() (*proc, error) {
		return spawn(s.bin, args, nil, dir, filepath.Join(dir, "broker.log"))
	}
	return nd, nd.restart()
}
