package sluicetest

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/config"
)

// Outsider is a node started against a cluster that should not admit it
// (a broker with the wrong cluster credentials, issue 19): it gossips to
// the cluster's seeds and dials its controller listeners like a node
// being added, but its start-up (broker.New, which waits to be
// registered) runs in the background until Stop.
type Outsider struct {
	ID int

	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	admitted *broker.Broker // set if broker.New returned: it joined
	err      error          // broker.New's error once it returned
	stopOnce sync.Once
}

// StartOutsider starts node id (not one of the cluster's, e.g. Size()+1)
// as AddNode would, with the cluster's overrides and then overrides, which
// win (e.g. a keystore of another CA, another gossip.encryption.key). A
// voter outsider also has a controller listener and names itself among
// controller.quorum.voters, so it stands for election and asks the
// cluster's voters for their votes. It returns at once; the test stops it
// (or its cleanup does).
func (c *Cluster) StartOutsider(id int, voter bool, overrides ...string) *Outsider {
	c.t.Helper()
	kafka, err := reservePorts(1, false)
	if err != nil {
		c.t.Fatalf("sluicetest: outsider: %v", err)
	}
	listeners, quorum := "PLAINTEXT://"+kafka[0], c.quorum
	if voter {
		raft, err := reservePorts(1, false)
		if err != nil {
			c.t.Fatalf("sluicetest: outsider: %v", err)
		}
		listeners += ",CONTROLLER://" + raft[0]
		quorum += "," + strconv.Itoa(id) + "@" + raft[0]
	}
	gossip, err := reservePorts(1, true)
	if err != nil {
		c.t.Fatalf("sluicetest: outsider: %v", err)
	}
	ovr := append([]string{"log.dirs=" + c.nodeDir(), "replica.lag.time.max.ms=1000", "group.initial.rebalance.delay.ms=0"}, c.overrides...)
	ovr = append(ovr,
		"node.id="+strconv.Itoa(id),
		"listeners="+listeners,
		"controller.quorum.voters="+quorum,
		"gossip.listener="+gossip[0],
		"gossip.join="+c.joinList,
	)
	ovr = append(ovr, overrides...)
	cfg, err := config.Load("", ovr)
	if err != nil {
		c.t.Fatalf("sluicetest: outsider config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: logLevel()})).With("test_node", "outsider"+strconv.Itoa(id))
	ctx, cancel := context.WithCancel(context.Background())
	o := &Outsider{ID: id, t: c.t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		b, err := broker.New(ctx, cfg, broker.Options{Logger: logger})
		o.mu.Lock()
		o.admitted, o.err = b, err
		o.mu.Unlock()
	}()
	c.t.Cleanup(o.Stop)
	return o
}

// Admitted reports whether the outsider's start-up completed: the cluster
// registered it.
func (o *Outsider) Admitted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.admitted != nil
}

// Stop ends the outsider's start-up and waits for it to return (closing
// the broker if it was admitted after all).
func (o *Outsider) Stop() {
	o.stopOnce.Do(func() {
		o.cancel()
		<-o.done
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.admitted != nil {
			o.admitted.Close()
		}
	})
}
