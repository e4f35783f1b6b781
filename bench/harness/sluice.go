package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sluiceSystem starts nodes of the sluice binary bin, as the README's
// three-node recipe does: per node a PLAINTEXT and a CONTROLLER listener,
// every node a raft voter, serf gossip on its own port with every node's
// gossip address as seeds. Everything else is sluice's defaults. Under
// -security sasl_ssl the PLAINTEXT listener is a SASL_SSL one, with a
// PLAINTEXT bootstrap listener besides (security.go).
type sluiceSystem struct {
	bin string
	// cpuProfileDir, when set, makes every cluster node write a CPU profile
	// of each life (--cpu-profile) to <cluster dir>-node-<id>-start-<n>.prof
	// there; it is written when the node stops cleanly (not after kill -9).
	cpuProfileDir string
	// metrics, when set, opens every node's Prometheus listener
	// (metrics.listener) and has the cluster scraped every scrapeEvery
	// while it runs, as a Prometheus server would (-metrics-cost,
	// metricscost.go); the system is then "sluice+metrics" in the results.
	metrics     bool
	scrapeEvery time.Duration
	scraped     *scraper // the last cluster's scraper, to check after it stopped
	lastNodes   []*node  // the last cluster's nodes, for their CPU time once stopped
}

func (s *sluiceSystem) name() string {
	if s.metrics {
		return "sluice+metrics"
	}
	return "sluice"
}

func (s *sluiceSystem) startCluster(ctx context.Context, dir string, n int, sec *security) (*cluster, error) {
	// Per node: the client listener, raft, gossip, under SASL_SSL the
	// bootstrap listener (security.go), with -metrics-cost's "on" variant
	// the metrics listener (last).
	per := 3
	if sec.secured() {
		per = 4
	}
	if s.metrics {
		per++
	}
	ports, err := freePorts(per * n)
	if err != nil {
		return nil, err
	}
	addr := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	var voters, gossip []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr(ports[per*i+1])))
		gossip = append(gossip, addr(ports[per*i+2]))
	}
	c := &cluster{opts: sec.clientOpts()}
	var bootstrap []string
	l := sec.listenerName()
	for i := range n {
		id := int32(i + 1)
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(filepath.Join(nodeDir, "data"), 0o755); err != nil {
			return nil, err
		}
		listeners := fmt.Sprintf("%s://%s,CONTROLLER://%s", l, addr(ports[per*i]), addr(ports[per*i+1]))
		protoMap := fmt.Sprintf("CONTROLLER:PLAINTEXT,%s:%s,%s:PLAINTEXT", l, l, bootstrapName)
		if sec.secured() {
			listeners += fmt.Sprintf(",%s://%s", bootstrapName, addr(ports[per*i+3]))
			bootstrap = append(bootstrap, addr(ports[per*i+3]))
		}
		args := []string{
			"--override", fmt.Sprintf("node.id=%d", id),
			"--override", "log.dirs=" + filepath.Join(nodeDir, "data"),
			"--override", "listeners=" + listeners,
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "gossip.listener=" + addr(ports[per*i+2]),
			"--override", "gossip.join=" + strings.Join(gossip, ","),
		}
		if sec.secured() {
			args = append(args, "--override", "listener.security.protocol.map="+protoMap)
			for _, p := range sec.brokerProperties() {
				args = append(args, "--override", p)
			}
		}
		var metricsAddr string
		if s.metrics {
			metricsAddr = addr(ports[per*i+per-1])
			args = append(args, "--override", "metrics.listener="+metricsAddr)
		}
		nd := &node{id: id, addr: addr(ports[per*i]), metricsAddr: metricsAddr, dataDir: filepath.Join(nodeDir, "data")}
		starts := 0
		nd.spawn = func() (*proc, error) {
			args := args
			if s.cpuProfileDir != "" {
				// One file per cluster, node and start, so that workload
				// 12's cluster and a restarted node do not overwrite the
				// profile of an earlier life.
				starts++
				prof := fmt.Sprintf("%s-node-%d-start-%d.prof", filepath.Base(dir), id, starts)
				if sec.secured() {
					prof = fmt.Sprintf("%s-node-%d-%s-start-%d.prof", filepath.Base(dir), id, sec.mode, starts)
				}
				args = append(slices.Clip(args), "--cpu-profile", filepath.Join(s.cpuProfileDir, prof))
			}
			return spawn(s.bin, args, nil, nodeDir, filepath.Join(nodeDir, "broker.log"))
		}
		if err := nd.restart(); err != nil {
			c.stop(10 * time.Second)
			return nil, err
		}
		c.nodes = append(c.nodes, nd)
	}
	if sec.secured() {
		if err := createScramUsers(ctx, bootstrap, 2*time.Minute); err != nil {
			c.stop(10 * time.Second)
			return nil, fmt.Errorf("sluice SCRAM users: %w", err)
		}
	}
	if err := c.waitFormed(ctx, 2*time.Minute); err != nil {
		c.stop(10 * time.Second)
		return nil, fmt.Errorf("sluice cluster did not form: %w", err)
	}
	s.lastNodes = c.nodes
	if s.metrics {
		c.scraper = startScraper(c.nodes, s.scrapeEvery)
		s.scraped = c.scraper
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

// createScramUsers creates sasl_ssl's SCRAM-SHA-512 users through the
// nodes' PLAINTEXT bootstrap listeners (security.go), retrying until the
// cluster has a controller to write them.
func createScramUsers(ctx context.Context, bootstrap []string, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var users []kadm.UpsertSCRAM
	for _, u := range [][2]string{{brokerUser, brokerPassword}, {clientUser, clientPassword}} {
		users = append(users, kadm.UpsertSCRAM{User: u[0], Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: u[1]})
	}
	return poll(ctx, timeout, 200*time.Millisecond, func() error {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := adm.AlterUserSCRAMs(rctx, nil, users)
		if err == nil {
			err = resp.Error()
		}
		return err
	})
}
