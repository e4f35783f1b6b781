package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// Static members (KIP-345) do not send LeaveGroup when they close; the
// coordinator must still remove one whose session times out, so that its
// group rebalances, becomes Empty and can be deleted (issue 16, librdkafka
// test 0081). These tests close a static member without leaving and wait
// for exactly that, with a deadline well past the session timeout.

// waitEmptyAndDelete polls DescribeGroups until group is Empty with no
// members, then deletes it: DeleteGroups must succeed.
func waitEmptyAndDelete(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last string
	sluicetest.WaitFor(t, 45*time.Second, func() error {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := d[group]
		if g.Err != nil {
			return g.Err
		}
		last = fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
		if g.State != "Empty" || len(g.Members) != 0 {
			return errors.New(last)
		}
		return nil
	})
	resp, err := adm.DeleteGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp[group]; r.Err != nil {
		t.Fatalf("DeleteGroups %s after the static member expired (%s): %v", group, last, r.Err)
	}
}

// TestStaticMemberExpiresClassic: a classic group's only static member
// consumes, closes without LeaveGroup, and is removed when its 6s session
// times out; the group becomes Empty and DeleteGroups deletes it.
func TestStaticMemberExpiresClassic(t *testing.T) {
	n := groupNode(t)
	const topic = "static-expiry"
	createTopic(t, n, topic, 2, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 10)
	adm := n.Admin()
	for _, group := range []string{"static-expiry-1", "static-expiry-2"} {
		s := &seen{n: map[[2]int64]int{}}
		m := startMember(t, n, group, topic, s, kgo.InstanceID("only-"+group), kgo.SessionTimeout(6*time.Second))
		waitSeen(t, s, 10)
		m.stop() // a static member does not leave on close
		d, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(d[group].Members); got != 1 {
			t.Fatalf("static member left on close: %d members, want 1 until its session expires", got)
		}
		waitEmptyAndDelete(t, adm, group)
	}
}

// TestStaticMemberExpiresConsumerProtocol is the same for a KIP-848 group:
// franz-go closes a static member with member epoch -2 (it will come
// back); when group.consumer.session.timeout.ms passes without it, the
// member is removed, the group epoch moves and the group is Empty.
func TestStaticMemberExpiresConsumerProtocol(t *testing.T) {
	n := sluicetest.Start(t,
		"group.consumer.min.heartbeat.interval.ms=50",
		"group.consumer.heartbeat.interval.ms=100",
		"group.consumer.min.session.timeout.ms=3000",
		"group.consumer.session.timeout.ms=3000",
	)
	const topic, group = "static-expiry-848", "static-expiry-848"
	createTopic(t, n, topic, 2, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 10)
	s := &seen{n: map[[2]int64]int{}}
	m := startMember(t, n, group, topic, s, kgo.InstanceID("only"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	waitSeen(t, s, 10)
	m.stop()
	adm := n.Admin()
	d, err := adm.DescribeConsumerGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(d[group].Members); got != 1 {
		t.Fatalf("static member left on close: %d members, want 1 until its session expires", got)
	}
	waitEmptyAndDelete(t, adm, group)
}
