package broker_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// pinned returns a requestor that sends every request to node id of c and
// nowhere else (franz-go would route admin requests to the controller).
func pinned(t *testing.T, c *sluicetest.Cluster, id int) kmsg.Requestor {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(id).Addr()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl.SeedBrokers()[0]
}

func clusterMetadata(t *testing.T, r kmsg.Requestor, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	if topics != nil {
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return resp
}

func topicOf(resp *kmsg.MetadataResponse, name string) *kmsg.MetadataResponseTopic {
	for i, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == name && t.ErrorCode == 0 {
			return &resp.Topics[i]
		}
	}
	return nil
}

// knownTopic asks r for an existing topic until r lists it: a broker
// applies new topics from the metadata log a moment after the controller,
// and meanwhile answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does (the
// auto-creation flag clusterMetadata sets creates nothing for a topic the
// controller already has).
func knownTopic(t *testing.T, r kmsg.Requestor, name string) *kmsg.MetadataResponseTopic {
	t.Helper()
	var tp *kmsg.MetadataResponseTopic
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		if tp = topicOf(clusterMetadata(t, r, name), name); tp == nil {
			return fmt.Errorf("the broker does not list topic %s yet", name)
		}
		return nil
	})
	return tp
}

// handoverMetadata asks r for the topic "handover"; unlike clusterMetadata it
// may run outside the test's goroutine.
func handoverMetadata(r kmsg.Requestor) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("handover")
	req.Topics = append(req.Topics, rt)
	return req.RequestWith(ctx, r)
}

// nonController returns a node id that is not the active controller.
func nonController(c *sluicetest.Cluster) int {
	ctrl := c.Controller()
	for id := 1; id <= c.Size(); id++ {
		if id != ctrl {
			return id
		}
	}
	return -1
}

func TestClusterAdminRequestsOnAnyBroker(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	id := nonController(c)
	node := pinned(t, c, id)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// CreateTopics through a broker that is not the controller.
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "forwarded", 3, 3
	ct.Topics = append(ct.Topics, rt)
	ctResp, err := ct.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if code := ctResp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create via node %d: %v %v", id, kerr.ErrorForCode(code), ctResp.Topics[0].ErrorMessage)
	}
	// The answering broker's image has the topic already ...
	if tp := topicOf(clusterMetadata(t, node, "forwarded"), "forwarded"); tp == nil || len(tp.Partitions) != 3 {
		t.Fatalf("node %d does not show the topic it just created: %+v", id, tp)
	}
	// ... and every other node gets it.
	for other := 1; other <= 3; other++ {
		r := pinned(t, c, other)
		sluicetest.WaitFor(t, 5*time.Second, func() error {
			if topicOf(clusterMetadata(t, r, "forwarded"), "forwarded") == nil {
				return fmt.Errorf("node %d does not list the topic", other)
			}
			return nil
		})
	}
	// Leaders are spread over the three brokers.
	leaders := map[int32]bool{}
	for _, p := range topicOf(clusterMetadata(t, node, "forwarded"), "forwarded").Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Errorf("3 partitions on 3 brokers have leaders %v, want three different", leaders)
	}

	// A controller error comes back as it would from the controller.
	dup, err := ct.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if code := dup.Topics[0].ErrorCode; code != kerr.TopicAlreadyExists.Code {
		t.Errorf("second create: %v, want TOPIC_ALREADY_EXISTS", kerr.ErrorForCode(code))
	}

	// CreatePartitions.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "forwarded", 5
	cp.Topics = append(cp.Topics, cpt)
	cpResp, err := cp.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if code := cpResp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create partitions: %v", kerr.ErrorForCode(code))
	}
	if tp := topicOf(clusterMetadata(t, node, "forwarded"), "forwarded"); len(tp.Partitions) != 5 {
		t.Fatalf("after CreatePartitions node %d shows %d partitions, want 5", id, len(tp.Partitions))
	}

	// IncrementalAlterConfigs on the topic, and on this broker itself.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, res := range []struct {
		typ        kmsg.ConfigResourceType
		name, key  string
		value      string
		describeOn kmsg.ConfigResourceType
	}{
		{kmsg.ConfigResourceTypeTopic, "forwarded", "retention.ms", "12345", 0},
		{kmsg.ConfigResourceTypeBroker, fmt.Sprint(id), "log.retention.bytes", "1073741824", 0},
	} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = res.typ, res.name
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = res.key, kmsg.StringPtr(res.value)
		rr.Configs = append(rr.Configs, cfg)
		ia.Resources = append(ia.Resources, rr)
	}
	iaResp, err := ia.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range iaResp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("alter %s: %v %v", r.ResourceName, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "forwarded", []string{"retention.ms"}
	dc.Resources = append(dc.Resources, dr)
	dcResp, err := dc.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if cfgs := dcResp.Resources[0].Configs; len(cfgs) != 1 || cfgs[0].Value == nil || *cfgs[0].Value != "12345" {
		t.Fatalf("node %d describes retention.ms as %+v right after altering it", id, cfgs)
	}

	// The legacy AlterConfigs too.
	ac := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "forwarded"
	acfg := kmsg.NewAlterConfigsRequestResourceConfig()
	acfg.Name, acfg.Value = "retention.ms", kmsg.StringPtr("54321")
	ar.Configs = append(ar.Configs, acfg)
	ac.Resources = append(ac.Resources, ar)
	acResp, err := ac.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if code := acResp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("alter configs: %v", kerr.ErrorForCode(code))
	}

	// Auto-creation in Metadata, InitProducerID and FindCoordinator, all
	// of which need the controller. Metadata answers the request that
	// creates the topic without it, as Kafka does, and shows it later.
	if mt := clusterMetadata(t, node, "auto-created").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(mt.Partitions) != 0 {
		t.Fatalf("Metadata on node %d creating a topic: %v, %d partitions; want UNKNOWN_TOPIC_OR_PARTITION, none", id, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if topicOf(clusterMetadata(t, node, "auto-created"), "auto-created") == nil {
			return fmt.Errorf("Metadata on node %d does not show the auto-created topic", id)
		}
		return nil
	})
	ip := kmsg.NewPtrInitProducerIDRequest()
	ipResp, err := ip.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if ipResp.ErrorCode != 0 || ipResp.ProducerID < 0 {
		t.Fatalf("InitProducerID on node %d: %v id %d", id, kerr.ErrorForCode(ipResp.ErrorCode), ipResp.ProducerID)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fc.CoordinatorKeys = []string{"g"}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		resp, err := fc.RequestWith(ctx, node)
		if err != nil {
			return err
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			code = resp.Coordinators[0].ErrorCode
		}
		return kerr.ErrorForCode(code)
	})

	// DeleteTopics.
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("forwarded")
	del.Topics = append(del.Topics, dt)
	del.TopicNames = []string{"forwarded"}
	delResp, err := del.RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if code := delResp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if topicOf(clusterMetadata(t, node), "forwarded") != nil {
		t.Fatalf("node %d still lists the topic it just deleted", id)
	}
	for other := 1; other <= 3; other++ {
		r := pinned(t, c, other)
		sluicetest.WaitFor(t, 5*time.Second, func() error {
			if topicOf(clusterMetadata(t, r), "forwarded") != nil {
				return fmt.Errorf("node %d still lists the deleted topic", other)
			}
			return nil
		})
	}
}

// Node 4 is no raft voter: it joins through gossip, receives the metadata
// log and is a broker like the others.
func TestClusterDescribeCluster(t *testing.T) {
	c := sluicetest.StartCluster(t, 4)
	c.WaitForBrokers(4)
	ctrl := c.Controller()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := 1; id <= 4; id++ {
		node := pinned(t, c, id)
		// Every node reaches the same view; one may apply the last
		// registration a moment after another.
		sluicetest.WaitFor(t, 5*time.Second, func() error {
			resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, node)
			if err != nil {
				return err
			}
			var ids []int32
			for _, b := range resp.Brokers {
				ids = append(ids, b.NodeID)
			}
			if !slices.Equal(ids, []int32{1, 2, 3, 4}) || resp.ControllerID != int32(ctrl) {
				return fmt.Errorf("node %d: brokers %v controller %d, want [1 2 3 4] and %d", id, ids, resp.ControllerID, ctrl)
			}
			return nil
		})
	}
}

func TestClusterFencedBrokerLeavesMetadata(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	victim := nonController(c)
	c.Kill(victim)
	c.WaitForBrokers(2)
	resp := clusterMetadata(t, pinned(t, c, c.Controller()))
	for _, b := range resp.Brokers {
		if b.NodeID == int32(victim) {
			t.Fatalf("killed node %d is still in Metadata", victim)
		}
	}
	c.Restart(victim)
	c.WaitForBrokers(3)
}

// A broker stopping cleanly hands its leaderships over before it stops
// serving: the controller names other leaders before the stopping broker's
// listener closes (without controlled shutdown it is the other way round,
// by tens of milliseconds: the broker is fenced only when it leaves serf).
// Then it restarts, and the controller's own node does the same.
func TestClusterControlledShutdownMovesLeaders(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "handover"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(6) {
		c.WaitForISR("handover", p, 3)
	}
	for _, victim := range []int{nonController(c), c.Controller()} {
		led := 0
		for _, p := range knownTopic(t, pinned(t, c, victim), "handover").Partitions {
			if p.Leader == int32(victim) {
				led++
			}
		}
		if led == 0 {
			t.Fatalf("node %d leads nothing to hand over", victim)
		}
		ctrl := c.Controller()
		var moved, closed time.Time
		done := make(chan struct{})
		if victim != ctrl {
			// Watch the controller's metadata and the stopping broker's
			// listener: the leaderships must move before it closes.
			observer := pinned(t, c, ctrl)
			go func() {
				defer close(done)
				for moved.IsZero() || closed.IsZero() {
					if closed.IsZero() {
						if conn, err := net.DialTimeout("tcp", c.Node(victim).Addr(), time.Second); err != nil {
							closed = time.Now()
						} else {
							conn.Close()
						}
					}
					if moved.IsZero() {
						md, err := handoverMetadata(observer)
						if err != nil {
							continue
						}
						if tp := topicOf(md, "handover"); tp != nil && !slices.ContainsFunc(tp.Partitions, func(p kmsg.MetadataResponseTopicPartition) bool {
							return p.Leader == int32(victim)
						}) {
							moved = time.Now()
						}
					}
				}
			}()
		} else {
			close(done)
		}
		c.Stop(victim)
		<-done
		if victim != ctrl {
			t.Logf("node %d: leaderships moved %s before its listener closed", victim, closed.Sub(moved))
			if !moved.Before(closed) {
				t.Errorf("node %d closed its listener %s before its leaderships moved", victim, moved.Sub(closed))
			}
		}
		survivor := pinned(t, c, c.Controller())
		sluicetest.WaitFor(t, 2*time.Second, func() error {
			tp := topicOf(clusterMetadata(t, survivor, "handover"), "handover")
			if tp == nil {
				return fmt.Errorf("node %d does not list the topic", c.Controller())
			}
			for _, p := range tp.Partitions {
				if p.Leader == int32(victim) || p.Leader < 0 {
					return fmt.Errorf("after stopping node %d, partition %d has leader %d (ISR %v)", victim, p.Partition, p.Leader, p.ISR)
				}
			}
			return nil
		})
		c.Restart(victim)
		c.WaitForBrokers(3)
	}
}
