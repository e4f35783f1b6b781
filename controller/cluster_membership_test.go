package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClusterNonVoterJoins adds a broker that is not a voter: the active
// controller adds it to raft as a non-voter, so it receives the whole
// image, knows the controller, and counts for placement; when it dies it is
// fenced, and when it restarts it is registered again and unfenced.
func TestClusterNonVoterJoins(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	mustCreateRF(t, tc.node(leaderID), "before", 3, 3)

	cfg := tc.config(4, freeAddr(t))
	start := time.Now()
	four, err := tc.open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("non-voter opened in %v", time.Since(start))
	img := four.Image()
	if img.Topics["before"] == nil || img.ClusterID != tc.node(leaderID).ClusterID() {
		t.Fatal("non-voter did not receive the image before Open returned")
	}
	if got := four.ActiveControllerID(); got != leaderID {
		t.Fatalf("non-voter sees controller %d, want %d", got, leaderID)
	}
	if res := four.CreateTopics(testCtx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false); res[0].Err == nil {
		t.Fatal("non-voter decided a CreateTopics")
	} else {
		wantKafkaErr(t, res[0].Err, kerr.NotController)
	}
	conf := tc.node(leaderID).node.raft.GetConfiguration()
	if err := conf.Error(); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(conf.Configuration().Servers, func(s raft.Server) bool { return s.ID == "4" }); i < 0 ||
		conf.Configuration().Servers[i].Suffrage != raft.Nonvoter {
		t.Fatalf("raft configuration %+v, want node 4 as non-voter", conf.Configuration().Servers)
	}

	// Four brokers can host RF 4; the new topic reaches the non-voter.
	mustCreateRF(t, tc.node(leaderID), "wide", 4, 4)
	waitFor(t, 5*time.Second, "topic wide on the non-voter", func() bool { return four.Image().Topics["wide"] != nil })

	// Crash it: fenced. Restart it on the same dir: unfenced, new epoch.
	oldEpoch := four.Image().Brokers[4].Epoch
	tc.stop(4, true)
	tc.waitAllImages(5*time.Second, "broker 4 fenced", func(img *Image) bool { return img.Brokers[4].Fenced })
	four, err = tc.open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.waitAllImages(5*time.Second, "broker 4 back", func(img *Image) bool {
		b := img.Brokers[4]
		return !b.Fenced && b.Epoch > oldEpoch
	})
	if four.Image().Topics["wide"] == nil {
		t.Fatal("restarted non-voter lost the image")
	}
}

// TestClusterVoterRestart crashes a follower voter and restarts it.
func TestClusterVoterRestart(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	victim := int32(1)
	if victim == leaderID {
		victim = 2
	}
	mustCreateRF(t, tc.node(leaderID), "t", 3, 3)
	cfg := tc.cfgs[victim]
	start := time.Now()
	tc.stop(victim, true)
	tc.waitAllImages(5*time.Second, "victim fenced", func(img *Image) bool {
		if img.Topics["t"] == nil {
			return false
		}
		for _, p := range img.Topics["t"].Partitions {
			if p.Leader == victim {
				return false
			}
		}
		return img.Brokers[victim].Fenced
	})
	t.Logf("crashed follower %d fenced, its partitions moved, on every node after %v", victim, time.Since(start))
	mustCreateRF(t, tc.node(leaderID), "while-down", 1, 2)
	start = time.Now()
	c, err := tc.open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted voter opened in %v", time.Since(start))
	if c.Image().Topics["while-down"] == nil {
		t.Fatal("restarted voter did not catch up before Open returned")
	}
	tc.waitAllImages(5*time.Second, "three unfenced brokers", func(img *Image) bool { return len(img.UnfencedBrokers()) == 3 })
}

// TestClusterAlterPartitionAndUncleanElection drives a partition through
// an ISR shrink, the loss of its last in-sync replica (offline while
// unclean election is off) and an unclean election once the topic allows
// it.
func TestClusterAlterPartitionAndUncleanElection(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	// The partition lives on the two followers, led by a.
	var a, b int32
	for id := int32(1); id <= 3; id++ {
		if id != leaderID {
			if a == 0 {
				a = id
			} else {
				b = id
			}
		}
	}
	ctrl := tc.node(leaderID)
	res := ctrl.CreateTopics(testCtx(t), []CreateTopic{{Name: "u", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {a, b}}}}, false)
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	img := ctrl.Image()
	p := img.Topics["u"].Partitions[0]
	req := AlterPartitionRequest{BrokerID: a, BrokerEpoch: img.Brokers[a].Epoch, Topic: "u",
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{a}}

	// On a follower: NOT_CONTROLLER.
	if _, err := tc.node(a).AlterPartition(testCtx(t), req); err == nil {
		t.Fatal("AlterPartition accepted by a follower")
	} else {
		wantKafkaErr(t, err, kerr.NotController)
	}
	got, err := ctrl.AlterPartition(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.PartitionEpoch != p.PartitionEpoch+1 || !slices.Equal(got.ISR, []int32{a}) || got.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("after shrink: %+v", got)
	}
	// The same proposal again is stale.
	_, err = ctrl.AlterPartition(testCtx(t), req)
	wantKafkaErr(t, err, kerr.InvalidUpdateVersion)

	// The only in-sync replica dies: offline, b is out of sync; the ISR
	// empties and a is the eligible leader replica (KIP-966).
	tc.stop(a, true)
	tc.waitAllImages(5*time.Second, "u offline", func(img *Image) bool {
		if img.Topics["u"] == nil {
			return false
		}
		p := img.Topics["u"].Partitions[0]
		return img.Brokers[a].Fenced && p.Leader == -1 && len(p.ISR) == 0 && slices.Equal(p.ELR, []int32{a})
	})
	// Reconciles keep it offline while unclean election is off.
	ctrl.pokeReconcile()
	time.Sleep(50 * time.Millisecond)
	if l := ctrl.Image().Topics["u"].Partitions[0].Leader; l != -1 {
		t.Fatalf("leader %d elected with unclean election off", l)
	}
	// Enabling it on the topic elects b at once.
	if err := ctrl.AlterConfigs(testCtx(t), ConfigResource{Type: ResourceTopic, Name: "u"},
		[]ConfigOp{{Key: uncleanLeaderElectionKey, Value: ptr("true")}}, true, false); err != nil {
		t.Fatal(err)
	}
	tc.waitAllImages(5*time.Second, "unclean leader b", func(img *Image) bool {
		p := img.Topics["u"].Partitions[0]
		return p.Leader == b && slices.Equal(p.ISR, []int32{b})
	})
}

// TestClusterAlterPartitionsBatch decides several proposals of one request
// on their own: the valid ones commit together, a stale or repeated one
// gets its own error, an unchanged ISR is answered with the current state.
func TestClusterAlterPartitionsBatch(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	ctrl := tc.node(leaderID)
	a, b := int32(1), int32(2)
	if leaderID == a {
		a = 3
	} else if leaderID == b {
		b = 3
	}
	res := ctrl.CreateTopics(testCtx(t), []CreateTopic{{Name: "batch", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {a, b}, 1: {a, b}, 2: {a, b}, 3: {a, b}}}}, false)
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	img := ctrl.Image()
	proposal := func(partition int32, isr ...int32) AlterPartitionRequest {
		p := img.Topics["batch"].Partitions[partition]
		return AlterPartitionRequest{BrokerID: a, BrokerEpoch: img.Brokers[a].Epoch, TopicID: img.Topics["batch"].ID,
			Partition: partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr}
	}
	stale := proposal(2, a)
	stale.PartitionEpoch--
	results, err := ctrl.AlterPartitions(testCtx(t), []AlterPartitionRequest{
		proposal(0, a),    // shrink
		proposal(1, a),    // shrink
		stale,             // INVALID_UPDATE_VERSION
		proposal(0, a),    // partition 0 again: INVALID_REQUEST
		proposal(3, a, b), // unchanged
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*kerr.Error{nil, nil, kerr.InvalidUpdateVersion, kerr.InvalidRequest, nil} {
		if want == nil {
			if results[i].Err != nil {
				t.Fatalf("proposal %d: %v", i, results[i].Err)
			}
			continue
		}
		wantKafkaErr(t, results[i].Err, want)
	}
	before := img.Topics["batch"].Partitions
	for _, i := range []int{0, 1} {
		got := results[i].Partition
		if !slices.Equal(got.ISR, []int32{a}) || got.PartitionEpoch != before[i].PartitionEpoch+1 {
			t.Fatalf("partition %d after shrink: %+v", i, got)
		}
	}
	if got := results[4].Partition; got.PartitionEpoch != before[3].PartitionEpoch || len(got.ISR) != 2 {
		t.Fatalf("unchanged partition 3 answered %+v", got)
	}
	tc.waitAllImages(5*time.Second, "both shrinks applied", func(img *Image) bool {
		t := img.Topics["batch"]
		return t != nil && len(t.Partitions[0].ISR) == 1 && len(t.Partitions[1].ISR) == 1 && len(t.Partitions[2].ISR) == 2
	})
	// On a follower the whole request is NOT_CONTROLLER.
	_, err = tc.node(a).AlterPartitions(testCtx(t), []AlterPartitionRequest{proposal(3, a)})
	wantKafkaErr(t, err, kerr.NotController)
}

// TestClusterControlledShutdown moves a broker's leaderships away before it
// stops and keeps it fenced while the same process still gossips.
func TestClusterControlledShutdown(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	ctrl := tc.node(leaderID)
	mustCreateRF(t, ctrl, "t", 6, 3)
	victim := int32(1)
	if victim == leaderID {
		victim = 2
	}
	if err := tc.node(victim).ControlledShutdown(testCtx(t), victim); err == nil {
		t.Fatal("ControlledShutdown accepted by a follower")
	}
	if err := ctrl.ControlledShutdown(testCtx(t), victim); err != nil {
		t.Fatal(err)
	}
	check := func(img *Image) bool {
		if b := img.Brokers[victim]; img.Topics["t"] == nil || !b.Fenced || !b.ShutDown {
			return false
		}
		for _, p := range img.Topics["t"].Partitions {
			if p.Leader == victim || contains(p.ISR, victim) {
				return false
			}
		}
		return true
	}
	if !check(ctrl.Image()) {
		t.Fatalf("after controlled shutdown: %+v", ctrl.Image().Brokers[victim])
	}
	ctrl.pokeReconcile()
	time.Sleep(50 * time.Millisecond)
	if !check(ctrl.Image()) {
		t.Fatal("reconcile unfenced a broker in controlled shutdown")
	}
	tc.stop(victim, false)
	tc.waitAllImages(5*time.Second, "still fenced after leaving", check)
}

// TestClusterFastRestartFencesOldProcess restarts a broker faster than
// failure detection: the new process must not inherit the old one's
// leaderships and ISR memberships, since its disk may have lost data.
func TestClusterFastRestartFencesOldProcess(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	leaderID := tc.leader(5 * time.Second)
	victim := int32(1)
	if victim == leaderID {
		victim = 2
	}
	ctrl := tc.node(leaderID)
	mustCreateRF(t, ctrl, "t", 6, 3)
	tc.waitAllImages(5*time.Second, "topic t", func(img *Image) bool { return img.Topics["t"] != nil })
	oldEpoch := ctrl.Image().Brokers[victim].Epoch

	cfg := tc.cfgs[victim]
	tc.stop(victim, true)
	if _, err := tc.open(cfg); err != nil {
		t.Fatal(err)
	}
	img := ctrl.Image()
	if b := img.Brokers[victim]; b.Fenced || b.Epoch <= oldEpoch {
		t.Fatalf("restarted broker = %+v, want unfenced with an epoch above %d", b, oldEpoch)
	}
	for _, p := range img.Topics["t"].Partitions {
		if p.Leader == victim || contains(p.ISR, victim) {
			t.Fatalf("partition %+v still has the restarted broker as leader or in sync", *p)
		}
	}
}
