package broker_test

// Issue 14, problem 8: the inter-broker and controller APIs
// (ControlledShutdown 7, AlterPartition 56, BrokerHeartbeat 63,
// AllocateProducerIds 67) are served only on the controller listener, to
// brokers. A plain client that sends one to the client (PLAINTEXT)
// listener has its connection closed, as Kafka closes it for an API not
// enabled on a listener, and nothing happens; the listener's ApiVersions
// does not list them.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/sluicetest"
)

// interBrokerKeys are the APIs a client listener must not serve.
var interBrokerKeys = []int16{7, 56, 63, 67}

// rawRequest sends req, as a plain client would, on a new connection to
// addr and reads one answer. It returns the error that ended the
// connection if the broker closed it instead of answering.
func rawRequest(t *testing.T, addr string, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("not-a-broker")).AppendRequest(nil, req, 7)
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	f, err := protocol.ReadFrame(conn, 1<<20)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: neither answered nor closed within 10s", kmsg.NameForKey(req.Key()))
	}
	if err != nil {
		return nil, err
	}
	if len(f) < 4 || int32(binary.BigEndian.Uint32(f)) != 7 {
		t.Fatalf("%s: bad answer frame %x", kmsg.NameForKey(req.Key()), f)
	}
	body := f[4:]
	if protocol.ResponseHeaderVersion(req.Key(), req.GetVersion()) >= 1 {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s: answer header has tagged fields", kmsg.NameForKey(req.Key()))
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s: decode answer: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// listedKeys returns the api keys the client listener at addr lists in
// ApiVersions.
func listedKeys(t *testing.T, addr string) []int16 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
	resp, err := rawRequest(t, addr, req)
	if err != nil {
		t.Fatalf("ApiVersions on %s: %v", addr, err)
	}
	var keys []int16
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	return keys
}

// checkClientListener asserts that addr's ApiVersions omits every
// inter-broker API.
func checkClientListener(t *testing.T, addr string) {
	t.Helper()
	keys := listedKeys(t, addr)
	for _, k := range interBrokerKeys {
		if slices.Contains(keys, k) {
			t.Errorf("client listener %s lists %s (key %d) in ApiVersions", addr, kmsg.NameForKey(k), k)
		}
	}
	if !slices.Contains(keys, 3) || !slices.Contains(keys, 0) {
		t.Fatalf("client listener %s lists %v: no Metadata or Produce", addr, keys)
	}
}

// refused asserts that the client listener at addr closed the connection
// on req instead of answering it.
func refused(t *testing.T, addr string, req kmsg.Request) {
	t.Helper()
	resp, err := rawRequest(t, addr, req)
	if err == nil {
		t.Errorf("client listener %s answered %s v%d from a plain client: %+v", addr, kmsg.NameForKey(req.Key()), req.GetVersion(), resp)
	}
}

func interBrokerRequests(brokerID int32, topic string, leaderEpoch, partitionEpoch int32, newISR []int32) []kmsg.Request {
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.Version = 1
	ap.BrokerID, ap.BrokerEpoch = brokerID, -1
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = 0, leaderEpoch, partitionEpoch, newISR
	rt.Partitions = append(rt.Partitions, rp)
	ap.Topics = append(ap.Topics, rt)

	pids := kmsg.NewPtrAllocateProducerIDsRequest()
	pids.BrokerID, pids.BrokerEpoch = brokerID, -1

	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = brokerID, -1, -1
	hb.UnknownTags.Set(0x51CF, make([]byte, 16))

	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.Version = 3
	cs.BrokerID, cs.BrokerEpoch = brokerID, -1
	return []kmsg.Request{ap, pids, hb, cs}
}

// A cluster of one: the client listener is the only one; it refuses every
// inter-broker API, and the node, still registered and unfenced, goes on
// serving.
func TestInterBrokerAPIsRefusedOnSingleNodeClientListener(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.DefaultProduceTopic("solo"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkClientListener(t, n.Addr())
	for _, req := range interBrokerRequests(1, "solo", 0, 0, []int32{1}) {
		refused(t, n.Addr(), req)
	}
	// A ControlledShutdown that was served would have fenced the node:
	// Metadata would list no broker and the partition no leader.
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("solo")
	md.Topics = append(md.Topics, rt)
	resp, err := md.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.Topics[0].Partitions[0].Leader != 1 {
		t.Fatalf("after the refused requests: brokers %+v, leader %d", resp.Brokers, resp.Topics[0].Partitions[0].Leader)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the refused requests: %v", err)
	}
}

// A three-node cluster: a client that sends the controller's client
// listener an AlterPartition that the controller would accept from the
// leader (shrinking the ISR to the leader alone), or a ControlledShutdown
// of the leader, is refused, and the ISR and the leader stay as they were.
// The brokers themselves still change ISRs, heartbeat and shut down
// through the controller listener (the other tests of this package).
func TestInterBrokerAPIsRefusedOnClusterClientListener(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	ctrl := c.Controller()
	leader := int32(otherThan(3, ctrl)[0])
	cl := clusterClient(c)
	createAssigned(t, cl, "guarded", []int32{leader, int32(ctrl), int32(otherThan(3, ctrl)[1])}, nil)
	before := waitState(t, cl, "guarded", "full ISR", isrLen(3))
	for id := 1; id <= 3; id++ {
		checkClientListener(t, c.Node(id).Addr())
	}
	addr := c.Node(ctrl).Addr()
	// The partition epoch is not in Metadata; a controller serving the
	// request accepts exactly one of these.
	for pe := int32(0); pe < 16; pe++ {
		ap := interBrokerRequests(leader, "guarded", before.epoch, pe, []int32{leader})[0]
		resp, err := rawRequest(t, addr, ap)
		if err != nil {
			continue // refused: the connection was closed
		}
		r := resp.(*kmsg.AlterPartitionResponse)
		code := r.ErrorCode
		if code == 0 && len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		if code == 0 {
			t.Errorf("controller %d's client listener applied a plain client's AlterPartition: ISR now %v", ctrl, r.Topics[0].Partitions[0].ISR)
			break
		}
		if code != kerr.InvalidUpdateVersion.Code {
			t.Errorf("controller %d's client listener answered AlterPartition with %v", ctrl, kerr.ErrorForCode(code))
			break
		}
	}
	for _, req := range interBrokerRequests(leader, "guarded", before.epoch, 0, []int32{leader})[1:] {
		refused(t, addr, req)
	}
	// The controller's own image: what it would have changed.
	mt := clusterMetadata(t, pinned(t, c, ctrl), "guarded").Topics[0]
	if err := kerr.ErrorForCode(mt.ErrorCode); err != nil || len(mt.Partitions) != 1 {
		t.Fatalf("metadata of guarded from controller %d: %v, %d partitions", ctrl, err, len(mt.Partitions))
	}
	after := mt.Partitions[0]
	isr := slices.Sorted(slices.Values(after.ISR))
	if after.Leader != before.leader || !slices.Equal(isr, before.isr) {
		t.Fatalf("after a plain client's inter-broker requests: leader %d ISR %v, was leader %d ISR %v", after.Leader, isr, before.leader, before.isr)
	}
	c.WaitForBrokers(3)
	if err := produce(cl, "guarded", "still served"); err != nil {
		t.Fatal(fmt.Errorf("produce after the refused requests: %w", err))
	}
}

// The heartbeat connection runs over the controller listener: breaking it
// there (CutRaft closes the broker's connections to the controller's
// listener, raft's and the controller channel's) while both processes
// live costs nothing. The broker redials as soon as it sees the break,
// well within the controller's grace for a closed connection, so it is
// never fenced and keeps its leadership.
func TestControllerChannelBlipFencesNobody(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	ctrl := c.Controller()
	victim := otherThan(3, ctrl)[0]
	cl := c.Client()
	createPlaced(t, cl, "chanblip", [][]int32{{int32(victim), int32(ctrl)}}, nil)
	c.WaitForISR("chanblip", 0, 2)
	fromController := pinned(t, c, ctrl)
	for round := range 5 {
		c.CutRaft(victim, ctrl)
		c.HealRaft(victim, ctrl)
		// Past the grace, and past a heartbeat interval: a broker that
		// waited for its next heartbeat to redial would be fenced by now.
		deadline := time.Now().Add(700 * time.Millisecond)
		for time.Now().Before(deadline) {
			md := clusterMetadata(t, fromController, "chanblip")
			if len(md.Brokers) != 3 {
				t.Fatalf("round %d: broker %d was fenced after its controller-channel connection broke and came back", round, victim)
			}
			if p := md.Topics[0].Partitions[0]; p.Leader != int32(victim) {
				t.Fatalf("round %d: chanblip-0 led by %d, not %d", round, p.Leader, victim)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
