package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

func TestParseVoters(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Voter
		wantErr bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "three voters", in: "1@127.0.0.1:9093,2@127.0.0.1:9094, 3@host.example:9095",
			want: []Voter{{1, "127.0.0.1:9093"}, {2, "127.0.0.1:9094"}, {3, "host.example:9095"}}},
		{name: "ipv6", in: "7@[::1]:9093", want: []Voter{{7, "[::1]:9093"}}},
		{name: "missing id", in: "127.0.0.1:9093", wantErr: true},
		{name: "bad id", in: "x@127.0.0.1:9093", wantErr: true},
		{name: "negative id", in: "-1@127.0.0.1:9093", wantErr: true},
		{name: "missing port", in: "1@127.0.0.1", wantErr: true},
		{name: "duplicate id", in: "1@a:1,1@b:2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVoters(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Fatalf("voters = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMemberTagsRoundTrip(t *testing.T) {
	eps := []Endpoint{
		{Listener: "INTERNAL", SecurityProtocol: "SASL_SSL", Host: "10.0.0.2", Port: 9092},
		{Listener: "EXTERNAL", SecurityProtocol: "PLAINTEXT", Host: "::1", Port: 9093},
	}
	c := &Controller{cfg: Config{NodeID: 2, Host: "10.0.0.2", Port: 9092, Rack: "r2", Endpoints: eps,
		Voters: []Voter{{1, "a:1"}, {2, "b:2"}}}, incarnation: newUUID()}
	m, ok := memberFromTags(c.tags("b:2"))
	want := member{ID: 2, Host: "10.0.0.2", Port: 9092, Rack: "r2", Endpoints: eps, RaftAddr: "b:2", Voter: true,
		Incarnation: c.incarnation, Gossiped: true}
	if !ok || !reflect.DeepEqual(m, want) {
		t.Fatalf("member = %+v %v, want %+v", m, ok, want)
	}
	c.cfg.NodeID = 5
	if m, _ := memberFromTags(c.tags("c:3")); m.Voter {
		t.Fatal("node 5 is not among the voters but gossips role voter")
	}
	for _, bad := range []map[string]string{
		{},
		{tagID: "x", tagPort: "1", tagIncarnation: "00"},
		{tagID: "1", tagPort: "p", tagIncarnation: "00112233445566778899aabbccddeeff"},
		{tagID: "1", tagPort: "1", tagIncarnation: "0011"},
		{tagID: "1", tagPort: "1", tagIncarnation: "00112233445566778899aabbccddeeff", tagEndpoints: "INTERNAL=PLAINTEXT"},
	} {
		if _, ok := memberFromTags(bad); ok {
			t.Fatalf("tags %v accepted", bad)
		}
	}
}

// TestLoneNodeControlledShutdown checks the single-node path of controlled
// shutdown: its partitions go offline (it is their only in-sync replica),
// it stays fenced while running, and the next start elects it again.
func TestLoneNodeControlledShutdown(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	if _, inMemory := c.node.trans.(*raft.InmemTransport); !inMemory || c.GossipAddr() != "" {
		t.Fatal("a lone node opened a raft or gossip port")
	}
	mustCreate(t, c, "t")
	if err := c.ControlledShutdown(testCtx(t), testNodeID); err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if b := img.Brokers[testNodeID]; !b.Fenced || !b.ShutDown {
		t.Fatalf("broker after controlled shutdown = %+v", b)
	}
	for _, p := range img.Topics["t"].Partitions {
		// Its last in-sync replica leaving, the ISR empties and the
		// node is the partition's eligible leader replica (KIP-966).
		wantPartition(t, p, -1, 1, 1)
		if !slices.Equal(p.ELR, []int32{testNodeID}) {
			t.Fatalf("partition %d ELR %v, want [%d]", p.Partition, p.ELR, testNodeID)
		}
	}
	c.pokeReconcile()
	c.reconcile(testCtx(t))
	if !c.Image().Brokers[testNodeID].Fenced {
		t.Fatal("reconcile unfenced the shutting-down node")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, took := openTest(t, cfg)
	t.Logf("reopen after controlled shutdown took %v", took)
	img = c2.Image()
	if b := img.Brokers[testNodeID]; b.Fenced || b.ShutDown {
		t.Fatalf("broker after restart = %+v", b)
	}
	for _, p := range img.Topics["t"].Partitions {
		wantPartition(t, p, testNodeID, 2, 2, testNodeID)
	}
}
