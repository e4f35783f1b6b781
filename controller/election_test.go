package controller

import (
	"slices"
	"testing"
)

// liveSet is a liveFunc over a fixed set of brokers.
func liveSet(ids ...int32) liveFunc {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestElectLeader(t *testing.T) {
	tests := []struct {
		name       string
		replicas   []int32
		isr        []int32
		live       []int32
		unclean    bool
		wantLeader int32
		wantISR    []int32
	}{
		{name: "first live ISR replica in assignment order", replicas: []int32{1, 2, 3}, isr: []int32{3, 2}, live: []int32{2, 3}, wantLeader: 2, wantISR: []int32{3, 2}},
		{name: "preferred replica when live and in sync", replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, live: []int32{1, 2, 3}, wantLeader: 1, wantISR: []int32{1, 2, 3}},
		{name: "skips dead ISR replica", replicas: []int32{1, 2, 3}, isr: []int32{1, 3}, live: []int32{2, 3}, wantLeader: 3, wantISR: []int32{1, 3}},
		{name: "no live ISR replica, clean", replicas: []int32{1, 2, 3}, isr: []int32{1}, live: []int32{2, 3}, wantLeader: -1, wantISR: []int32{1}},
		{name: "no live ISR replica, unclean elects first live replica", replicas: []int32{1, 2, 3}, isr: []int32{1}, live: []int32{3, 2}, unclean: true, wantLeader: 2, wantISR: []int32{2}},
		{name: "unclean prefers a live ISR replica", replicas: []int32{1, 2, 3}, isr: []int32{1, 3}, live: []int32{2, 3}, unclean: true, wantLeader: 3, wantISR: []int32{1, 3}},
		{name: "nobody live, unclean", replicas: []int32{1, 2}, isr: []int32{1}, live: nil, unclean: true, wantLeader: -1, wantISR: []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader, isr := electLeader(tt.replicas, tt.isr, liveSet(tt.live...), tt.unclean)
			if leader != tt.wantLeader || !slices.Equal(isr, tt.wantISR) {
				t.Fatalf("electLeader = %d %v, want %d %v", leader, isr, tt.wantLeader, tt.wantISR)
			}
		})
	}
}

func TestWithoutReplica(t *testing.T) {
	tests := []struct {
		name       string
		p          Partition
		remove     int32
		live       []int32 // excludes remove
		unclean    bool
		wantOK     bool
		wantLeader int32
		wantISR    []int32
	}{
		{name: "follower leaves the ISR", p: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 2, live: []int32{1, 3}, wantOK: true, wantLeader: 1, wantISR: []int32{1, 3}},
		{name: "leader replaced by next ISR replica", p: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 1, live: []int32{2, 3}, wantOK: true, wantLeader: 2, wantISR: []int32{2, 3}},
		{name: "leader replaced skipping a dead ISR replica", p: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 1, live: []int32{3}, wantOK: true, wantLeader: 3, wantISR: []int32{2, 3}},
		{name: "last ISR member stays, leader -1", p: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1},
			remove: 1, live: []int32{2, 3}, wantOK: true, wantLeader: -1, wantISR: []int32{1}},
		{name: "last ISR member, unclean elects out-of-sync replica", p: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1},
			remove: 1, live: []int32{3}, unclean: true, wantOK: true, wantLeader: 3, wantISR: []int32{3}},
		{name: "not a member of the partition", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
			remove: 3, live: []int32{1, 2}, wantOK: false},
		{name: "out-of-sync follower: nothing to do", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			remove: 2, live: []int32{1}, wantOK: false},
		{name: "offline partition whose last ISR member is fenced: unchanged", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			remove: 1, live: []int32{2}, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader, isr, ok := withoutReplica(&tt.p, tt.remove, liveSet(tt.live...), tt.unclean)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v (leader %d isr %v)", ok, tt.wantOK, leader, isr)
			}
			if ok && (leader != tt.wantLeader || !slices.Equal(isr, tt.wantISR)) {
				t.Fatalf("withoutReplica = %d %v, want %d %v", leader, isr, tt.wantLeader, tt.wantISR)
			}
		})
	}
}

func TestElectOffline(t *testing.T) {
	tests := []struct {
		name       string
		p          Partition
		live       []int32
		unclean    bool
		wantOK     bool
		wantLeader int32
		wantISR    []int32
	}{
		{name: "ISR member returns", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			live: []int32{1, 2}, wantOK: true, wantLeader: 1, wantISR: []int32{1}},
		{name: "only out-of-sync replica live, clean", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			live: []int32{2}, wantOK: false},
		{name: "only out-of-sync replica live, unclean", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: -1},
			live: []int32{2}, unclean: true, wantOK: true, wantLeader: 2, wantISR: []int32{2}},
		{name: "online partition untouched", p: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			live: []int32{1, 2}, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader, isr, ok := electOffline(&tt.p, liveSet(tt.live...), tt.unclean)
			if ok != tt.wantOK || (ok && (leader != tt.wantLeader || !slices.Equal(isr, tt.wantISR))) {
				t.Fatalf("electOffline = %d %v %v, want %d %v %v", leader, isr, ok, tt.wantLeader, tt.wantISR, tt.wantOK)
			}
		})
	}
}

func TestChangeOfBumpsEpochs(t *testing.T) {
	p := &Partition{Partition: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9}
	if ch := changeOf(idA, p, 2, []int32{2}); ch.LeaderEpoch != 5 || ch.PartitionEpoch != 9 || ch.Partition != 2 {
		t.Fatalf("leader change = %+v, want leader epoch 5 decided at partition epoch 9", ch)
	}
	if ch := changeOf(idA, p, 1, []int32{1}); ch.LeaderEpoch != 4 {
		t.Fatalf("ISR-only change = %+v, want leader epoch unchanged", ch)
	}
}

func TestUncleanPolicy(t *testing.T) {
	withTopic := &Topic{Configs: map[string]string{uncleanLeaderElectionKey: "true"}}
	plain := &Topic{}
	tests := []struct {
		name    string
		configs map[string]map[string]string
		static  bool
		topic   *Topic
		want    bool
	}{
		{name: "static default off", topic: plain, want: false},
		{name: "static default on", static: true, topic: plain, want: true},
		{name: "topic config wins", configs: map[string]map[string]string{"": {uncleanLeaderElectionKey: "false"}}, topic: withTopic, want: true},
		{name: "cluster default over static", configs: map[string]map[string]string{"": {uncleanLeaderElectionKey: "true"}}, topic: plain, want: true},
		{name: "controller broker config over cluster default", configs: map[string]map[string]string{
			"": {uncleanLeaderElectionKey: "true"}, "1": {uncleanLeaderElectionKey: "false"}}, static: true, topic: plain, want: false},
		{name: "topic config off over static on", static: true, topic: &Topic{Configs: map[string]string{uncleanLeaderElectionKey: "FALSE"}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := emptyImage()
			if tt.configs != nil {
				img.BrokerConfigs = tt.configs
			}
			if got := uncleanPolicy(img, 1, tt.static)(tt.topic); got != tt.want {
				t.Fatalf("unclean = %v, want %v", got, tt.want)
			}
		})
	}
}
