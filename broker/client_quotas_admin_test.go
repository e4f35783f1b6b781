package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// Client quota administration (issue 18): AlterClientQuotas and
// DescribeClientQuotas with Kafka's validation and filters, quotas stored
// in the metadata log so every broker has them and they survive restarts.

func qEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = kmsg.StringPtr(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func qSet(key string, v float64) kadm.AlterClientQuotaOp {
	return kadm.AlterClientQuotaOp{Key: key, Value: v}
}

// describeQuotas renders the entities a filter matches as sorted lines
// "user=alice,client-id=perf: producer_byte_rate=100".
func describeQuotas(t *testing.T, adm *kadm.Client, strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
	t.Helper()
	got, err := adm.DescribeClientQuotas(context.Background(), strict, comps)
	if err != nil {
		t.Fatalf("DescribeClientQuotas: %v", err)
	}
	return renderQuotas(got)
}

func renderQuotas(qs kadm.DescribedClientQuotas) []string {
	var lines []string
	for _, q := range qs {
		var es, vs []string
		for _, c := range q.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			es = append(es, c.Type+"="+name)
		}
		for _, v := range q.Values {
			vs = append(vs, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		lines = append(lines, strings.Join(es, ",")+": "+strings.Join(vs, ","))
	}
	slices.Sort(lines)
	return lines
}

func match(typ string, mt kmsg.QuotasMatchType, name ...string) kadm.DescribeClientQuotaComponent {
	c := kadm.DescribeClientQuotaComponent{Type: typ, MatchType: mt}
	if len(name) > 0 {
		c.MatchName = kmsg.StringPtr(name[0])
	}
	return c
}

func TestClientQuotasAlterDescribe(t *testing.T) {
	n := sluicetest.Start(t)
	adm := n.Admin()
	ctx := context.Background()

	vers, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vers {
		for _, key := range []int16{48, 49} {
			if lo, hi, ok := v.KeyVersions(key); !ok || lo != 0 || hi != 1 {
				t.Fatalf("ApiVersions key %d = %d-%d %v, want 0-1", key, lo, hi, ok)
			}
		}
	}

	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: qEntity("client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 1048576), qSet("consumer_byte_rate", 2097152)}},
		{Entity: qEntity("user", "<default>"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 1048576)}},
		{Entity: qEntity("user", "alice", "client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{qSet("request_percentage", 25.5)}},
		{Entity: qEntity("client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{qSet("controller_mutation_rate", 10)}},
		{Entity: qEntity("ip", "127.0.0.1"), Ops: []kadm.AlterClientQuotaOp{qSet("connection_creation_rate", 50)}},
		{Entity: qEntity("ip", "<default>"), Ops: []kadm.AlterClientQuotaOp{qSet("connection_creation_rate", 100)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}

	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{"everything", false, nil, []string{
			"client-id=<default>: controller_mutation_rate=10",
			"client-id=perf: consumer_byte_rate=2.097152e+06,producer_byte_rate=1.048576e+06",
			"ip=127.0.0.1: connection_creation_rate=50",
			"ip=<default>: connection_creation_rate=100",
			"user=<default>: producer_byte_rate=1.048576e+06",
			"user=alice,client-id=perf: request_percentage=25.5",
		}},
		{"nothing when strict and empty", true, nil, nil},
		{"exact client", false, []kadm.DescribeClientQuotaComponent{match("client-id", 0, "perf")}, []string{
			"client-id=perf: consumer_byte_rate=2.097152e+06,producer_byte_rate=1.048576e+06",
			"user=alice,client-id=perf: request_percentage=25.5",
		}},
		{"exact client strict", true, []kadm.DescribeClientQuotaComponent{match("client-id", 0, "perf")}, []string{
			"client-id=perf: consumer_byte_rate=2.097152e+06,producer_byte_rate=1.048576e+06",
		}},
		{"any client strict", true, []kadm.DescribeClientQuotaComponent{match("client-id", 2)}, []string{
			"client-id=<default>: controller_mutation_rate=10",
			"client-id=perf: consumer_byte_rate=2.097152e+06,producer_byte_rate=1.048576e+06",
		}},
		{"default user", false, []kadm.DescribeClientQuotaComponent{match("user", 1)}, []string{
			"user=<default>: producer_byte_rate=1.048576e+06",
		}},
		{"any user and exact client", false, []kadm.DescribeClientQuotaComponent{match("user", 2), match("client-id", 0, "perf")}, []string{
			"user=alice,client-id=perf: request_percentage=25.5",
		}},
		{"any ip", false, []kadm.DescribeClientQuotaComponent{match("ip", 2)}, []string{
			"ip=127.0.0.1: connection_creation_rate=50",
			"ip=<default>: connection_creation_rate=100",
		}},
		{"no match", false, []kadm.DescribeClientQuotaComponent{match("user", 0, "bob")}, nil},
	} {
		if got := describeQuotas(t, adm, tc.strict, tc.comps...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}

	// No match is an empty list, not null: Kafka's Java admin client
	// fails on a null list in a success answer.
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = "user", 0, kmsg.StringPtr("nobody")
	req.Components = append(req.Components, c)
	for _, v := range []int16{0, 1} {
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(48, v)
		resp, err := req.RequestWith(ctx, n.Client(kgo.MaxVersions(versions)))
		if err != nil || resp.ErrorCode != 0 || resp.Entries == nil {
			t.Fatalf("v%d no match: %v %+v, want an empty non-null list", v, err, resp)
		}
	}

	// Bad filters fail the request with Kafka's code and message.
	for _, tc := range []struct {
		comps []kadm.DescribeClientQuotaComponent
		want  *kerr.Error
		msg   string
	}{
		{[]kadm.DescribeClientQuotaComponent{match("ip", 2), match("user", 2)}, kerr.InvalidRequest,
			"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
		{[]kadm.DescribeClientQuotaComponent{match("user", 2), match("user", 1)}, kerr.InvalidRequest, "Entity type user cannot appear more than once in the filter."},
		{[]kadm.DescribeClientQuotaComponent{match("user", 0)}, kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{[]kadm.DescribeClientQuotaComponent{match("user", 1, "x")}, kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."},
		{[]kadm.DescribeClientQuotaComponent{match("group", 2)}, kerr.UnsupportedVersion, "Unsupported entity type group"},
		{[]kadm.DescribeClientQuotaComponent{match("", 2)}, kerr.InvalidRequest, "Invalid empty entity type."},
	} {
		_, err := adm.DescribeClientQuotas(ctx, false, tc.comps)
		var em *kadm.ErrAndMessage
		if !errors.As(err, &em) || em.Err != tc.want || em.ErrMessage != tc.msg {
			t.Errorf("filter %+v: err %v, want %v %q", tc.comps, err, tc.want, tc.msg)
		}
	}

	// Validation: each bad entity gets Kafka's error, the good one in the
	// same request applies, and a removal of an unset key is no error.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: qEntity("client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}, {Key: "request_percentage", Remove: true}}},
		{Entity: qEntity("ip", "127.0.0.1", "client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{qSet("connection_creation_rate", 1)}},
		{Entity: qEntity("client-id", "x"), Ops: []kadm.AlterClientQuotaOp{qSet("not_a_quota", 1)}},
		{Entity: qEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 10.5)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, fmt.Sprintf("%v %v %s", renderEntity(r.Entity), r.Err, r.ErrMessage))
	}
	slices.Sort(got) // the answer comes in Kafka's hash map order
	want := []string{
		"client-id=perf <nil> ",
		"client-id=perf,ip=127.0.0.1 INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details. Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
		"client-id=x INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details. Invalid configuration key not_a_quota",
		"user=bob INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details. producer_byte_rate cannot be a fractional value.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("alter results:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := describeQuotas(t, adm, true, match("client-id", 0, "perf")); !slices.Equal(got, []string{"client-id=perf: producer_byte_rate=1.048576e+06"}) {
		t.Fatalf("perf after removal: %v", got)
	}

	// ValidateOnly changes nothing.
	res, err = adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: qEntity("client-id", "v"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 5)}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, res)
	}
	if got := describeQuotas(t, adm, false, match("client-id", 0, "v")); len(got) != 0 {
		t.Fatalf("validate only applied: %v", got)
	}

	// Quotas live in the metadata log: a restart keeps them.
	n.Restart()
	adm = n.Admin()
	if got := describeQuotas(t, adm, false, match("ip", 2)); !slices.Equal(got, []string{"ip=127.0.0.1: connection_creation_rate=50", "ip=<default>: connection_creation_rate=100"}) {
		t.Fatalf("ip quotas after restart: %v", got)
	}
}

func renderEntity(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts = append(parts, c.Type+"="+name)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// TestClusterClientQuotas: an alteration sent to a broker that is not the
// active controller is forwarded, applies on every broker (the time it
// takes is logged), and survives a restart of every node.
func TestClusterClientQuotas(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	ctrl := c.Controller()
	other := 1
	if ctrl == 1 {
		other = 2
	}
	ctx := context.Background()
	res, err := c.Node(other).Admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: qEntity("client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 1048576)}},
		{Entity: qEntity("user", "<default>", "client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{qSet("consumer_byte_rate", 2097152)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	want := []string{
		"client-id=perf: producer_byte_rate=1.048576e+06",
		"user=<default>,client-id=<default>: consumer_byte_rate=2.097152e+06",
	}
	// The broker that was asked answers once its own image has the change.
	if got := describeQuotas(t, c.Node(other).Admin(), false); !slices.Equal(got, want) {
		t.Fatalf("broker %d right after the alteration: %v", other, got)
	}
	waitAllQuotas := func(what string, timeout time.Duration) {
		t.Helper()
		for id := 1; id <= 3; id++ {
			adm := c.Node(id).Admin()
			sluicetest.WaitFor(t, timeout, func() error {
				qs, err := adm.DescribeClientQuotas(ctx, false, nil)
				if err != nil {
					return err
				}
				if got := renderQuotas(qs); !slices.Equal(got, want) {
					return fmt.Errorf("%s: broker %d has %v", what, id, got)
				}
				return nil
			})
		}
	}
	// Kafka's brokers apply a change within about a second; how long
	// sluice's take is logged, not asserted (the machine may be loaded).
	start := time.Now()
	waitAllQuotas("after the alteration", 10*time.Second)
	t.Logf("every broker described the alteration %v after the asked broker answered", time.Since(start))

	// A v0 (non-flexible) request forwarded the same way.
	v0 := kversion.Stable()
	v0.SetMaxKeyVersion(49, 0)
	res, err = kadm.NewClient(c.Node(other).Client(kgo.MaxVersions(v0))).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: qEntity("client-id", "v0"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 1)}},
		{Entity: qEntity("client-id", "v0"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}},
	})
	if err != nil || len(res) != 1 || res[0].Err != kerr.InvalidRequest || res[0].ErrMessage != "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=v0})" {
		t.Fatalf("v0 forwarded alteration: %v %+v", err, res)
	}
	// As in Kafka, the first alteration of the repeated entity applied.
	want = append(want[:1:1], "client-id=v0: producer_byte_rate=1", want[1])
	waitAllQuotas("after the v0 alteration", 10*time.Second)

	// A validation error from the controller comes back through the
	// forwarding broker unchanged.
	res, err = c.Node(other).Admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: qEntity("client-id", "perf"), Ops: []kadm.AlterClientQuotaOp{qSet("producer_byte_rate", 0)}},
	})
	if err != nil || len(res) != 1 || res[0].Err != kerr.InvalidRequest || res[0].ErrMessage != "Quota producer_byte_rate must be greater than 0" {
		t.Fatalf("forwarded invalid alteration: %v %+v", err, res)
	}

	for id := 1; id <= 3; id++ {
		c.Restart(id)
		c.WaitForBrokers(3)
	}
	waitAllQuotas("after every node restarted", 10*time.Second)
}
