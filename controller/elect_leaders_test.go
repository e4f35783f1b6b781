package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// imageOf builds an image holding topics, each partition given as
// replicas, ISR and leader; every topic id is its name's first byte.
func imageOf(topics map[string][]Partition) *Image {
	img := emptyImage()
	for name, parts := range topics {
		t := &Topic{Name: name, ID: [16]byte{name[0]}}
		for i := range parts {
			p := parts[i]
			p.Partition = int32(i)
			p.LeaderEpoch, p.PartitionEpoch = 4, 7
			t.Partitions = append(t.Partitions, &p)
		}
		img.Topics[name], img.TopicsByID[t.ID] = t, t
	}
	return img
}

func TestDecideElection(t *testing.T) {
	tests := []struct {
		name       string
		p          Partition
		typ        ElectionType
		live       []int32
		wantErr    error
		wantLeader int32
		wantISR    []int32
	}{
		{name: "preferred replica back in the ISR takes over", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3, 1}, Leader: 2},
			live: []int32{1, 2, 3}, wantLeader: 1, wantISR: []int32{2, 3, 1}},
		{name: "preferred replica already leads", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			live: []int32{1, 2, 3}, wantErr: kerr.ElectionNotNeeded},
		{name: "preferred replica not in the ISR", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2},
			live: []int32{1, 2, 3}, wantErr: kerr.PreferredLeaderNotAvailable},
		{name: "preferred replica in the ISR but not live", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2},
			live: []int32{2, 3}, wantErr: kerr.PreferredLeaderNotAvailable},
		{name: "preferred election of an offline partition takes a live ISR replica", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, Leader: -1},
			live: []int32{2, 3}, wantLeader: 3, wantISR: []int32{1, 3}},
		{name: "preferred election of an offline partition with nobody eligible", typ: ElectPreferred,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: -1},
			live: []int32{2, 3}, wantErr: kerr.PreferredLeaderNotAvailable},
		{name: "unclean with a leader is not needed", typ: ElectUnclean,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2}, Leader: 2},
			live: []int32{1, 2, 3}, wantErr: kerr.ElectionNotNeeded},
		{name: "unclean elects the first live out-of-sync replica, alone in the ISR", typ: ElectUnclean,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: -1},
			live: []int32{3, 2}, wantLeader: 2, wantISR: []int32{2}},
		{name: "unclean prefers a live in-sync replica and keeps the ISR", typ: ElectUnclean,
			p:    Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, Leader: -1},
			live: []int32{2, 3}, wantLeader: 3, wantISR: []int32{1, 3}},
		{name: "unclean with no live replica", typ: ElectUnclean,
			p:    Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			live: []int32{3}, wantErr: kerr.EligibleLeadersNotAvailable},
		{name: "unknown election type", typ: 7,
			p:    Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
			live: []int32{1, 2}, wantErr: kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.LeaderEpoch, tt.p.PartitionEpoch = 4, 7
			ch, err := decideElection([16]byte{9}, &tt.p, tt.typ, liveSet(tt.live...))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if ch.Leader != tt.wantLeader || !slices.Equal(ch.ISR, tt.wantISR) {
				t.Fatalf("elected %d ISR %v, want %d %v", ch.Leader, ch.ISR, tt.wantLeader, tt.wantISR)
			}
			if ch.LeaderEpoch != 5 || ch.PartitionEpoch != 7 {
				t.Fatalf("leader epoch %d decided at partition epoch %d, want 5 at 7", ch.LeaderEpoch, ch.PartitionEpoch)
			}
			if err := checkPartitionState(tt.p.Replicas, ch.Leader, ch.ISR); err != nil {
				t.Fatalf("decided an invalid state: %v", err)
			}
		})
	}
}

// resultCodes flattens results into "topic-partition" → error for
// comparison.
func resultCodes(results []ElectLeadersTopicResult) map[string]error {
	out := map[string]error{}
	for _, tr := range results {
		for _, pr := range tr.Partitions {
			out[tr.Topic+"-"+string(rune('0'+pr.Partition))] = pr.Err
		}
	}
	return out
}

func TestPlanElections(t *testing.T) {
	img := imageOf(map[string][]Partition{
		// test-0 balanced, test-1 and test-2 led by 2 although 3 and 1
		// are preferred and in sync; test-2's preferred replica 1 is dead.
		"test": {
			{Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2},
			{Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}, Leader: 2},
			{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2},
		},
		"other": {
			{Replicas: []int32{3, 2}, ISR: []int32{3, 2}, Leader: 3},
		},
	})
	live := liveSet(2, 3)

	t.Run("listed partitions get a result each", func(t *testing.T) {
		results, changes := planElections(img, ElectPreferred, []ElectTopic{
			{Topic: "test", Partitions: []int32{1, 2, 0, 1, 9}},
			{Topic: "missing", Partitions: []int32{0}},
			{Topic: "bad/name", Partitions: []int32{0}},
		}, live)
		if len(results) != 3 || results[0].Topic != "test" || len(results[0].Partitions) != 5 {
			t.Fatalf("results %+v, want three topics in request order, five results for test", results)
		}
		want := []error{nil, kerr.PreferredLeaderNotAvailable, kerr.ElectionNotNeeded, nil, kerr.UnknownTopicOrPartition}
		for i, pr := range results[0].Partitions {
			if (want[i] == nil) != (pr.Err == nil) || (want[i] != nil && !errors.Is(pr.Err, want[i])) {
				t.Fatalf("test-%d: %v, want %v", pr.Partition, pr.Err, want[i])
			}
		}
		if err := results[1].Partitions[0].Err; !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("missing-0: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
		if err := results[2].Partitions[0].Err; !errors.Is(err, kerr.InvalidTopicException) {
			t.Fatalf("bad/name-0: %v, want INVALID_TOPIC_EXCEPTION", err)
		}
		// test-1 is listed twice but changed once.
		if len(changes) != 1 || changes[0].Partition != 1 || changes[0].Leader != 3 {
			t.Fatalf("changes %+v, want test-1 to leader 3 only", changes)
		}
		if err := checkPartitionChanges(img, changes); err != nil {
			t.Fatalf("the FSM would reject the decision: %v", err)
		}
	})

	t.Run("all partitions leave out those needing no election", func(t *testing.T) {
		results, changes := planElections(img, ElectPreferred, nil, live)
		if len(results) != 2 || results[0].Topic != "other" || len(results[0].Partitions) != 0 {
			t.Fatalf("results %+v, want both topics by name, other without partitions", results)
		}
		got := resultCodes(results)
		if len(got) != 2 || got["test-1"] != nil || !errors.Is(got["test-2"], kerr.PreferredLeaderNotAvailable) {
			t.Fatalf("results %v, want test-1 elected and test-2 PREFERRED_LEADER_NOT_AVAILABLE only", got)
		}
		if len(changes) != 1 {
			t.Fatalf("changes %+v, want one", changes)
		}
	})

	t.Run("unclean on all partitions with leaders changes nothing", func(t *testing.T) {
		results, changes := planElections(img, ElectUnclean, nil, live)
		if got := resultCodes(results); len(got) != 0 || len(changes) != 0 {
			t.Fatalf("results %v changes %+v, want none", got, changes)
		}
	})
}

func TestPlanLeaderBalance(t *testing.T) {
	tests := []struct {
		name       string
		topics     map[string][]Partition
		live       []int32
		percentage int
		want       map[string]int32 // "topic-partition" → new leader
	}{
		{
			name: "a returned broker leading nothing gets its preferred partitions back",
			topics: map[string][]Partition{"test": {
				{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3, 1}, Leader: 2},
				{Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2},
				{Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}, Leader: 3},
			}},
			live: []int32{1, 2, 3}, percentage: 10,
			want: map[string]int32{"test-0": 1},
		},
		{
			name: "preferred replica not yet back in the ISR is left alone",
			topics: map[string][]Partition{"test": {
				{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2},
			}},
			live: []int32{1, 2, 3}, percentage: 10,
		},
		{
			name: "dead preferred replica is left alone",
			topics: map[string][]Partition{"test": {
				{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2},
			}},
			live: []int32{2, 3}, percentage: 10,
		},
		{
			name: "imbalance at the percentage does not trigger, above it does",
			topics: map[string][]Partition{
				// Broker 1 is preferred for 4 partitions and leads 3:
				// 25%. Broker 2 is preferred for 2 and leads 1: 50%.
				"a": {
					{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
					{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
					{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
					{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
				},
				"b": {
					{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
					{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 1},
				},
			},
			live: []int32{1, 2}, percentage: 25,
			want: map[string]int32{"b-1": 2},
		},
		{
			name: "percentage 0 moves any imbalance",
			topics: map[string][]Partition{"a": {
				{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
				{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
				{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
				{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
			}},
			live: []int32{1, 2}, percentage: 0,
			want: map[string]int32{"a-3": 1},
		},
		{
			name: "offline partition whose preferred replica is in sync and live elects it",
			topics: map[string][]Partition{"a": {
				{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			}},
			live: []int32{1, 2}, percentage: 10,
			want: map[string]int32{"a-0": 1},
		},
		{
			name: "balanced cluster: nothing to do",
			topics: map[string][]Partition{"a": {
				{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
				{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
			}},
			live: []int32{1, 2}, percentage: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := imageOf(tt.topics)
			changes := planLeaderBalance(img, liveSet(tt.live...), tt.percentage)
			got := map[string]int32{}
			for _, ch := range changes {
				topic := img.TopicsByID[ch.TopicID]
				old := topic.Partitions[ch.Partition]
				if !slices.Equal(ch.ISR, old.ISR) || ch.LeaderEpoch != old.LeaderEpoch+1 {
					t.Fatalf("%s-%d: ISR %v epoch %d, want ISR unchanged %v and epoch %d", topic.Name, ch.Partition, ch.ISR, ch.LeaderEpoch, old.ISR, old.LeaderEpoch+1)
				}
				got[topic.Name+"-"+string(rune('0'+ch.Partition))] = ch.Leader
			}
			if len(got) != len(tt.want) {
				t.Fatalf("elections %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("elections %v, want %v", got, tt.want)
				}
			}
			if err := checkPartitionChanges(img, changes); err != nil {
				t.Fatalf("the FSM would reject the decision: %v", err)
			}
		})
	}
}
