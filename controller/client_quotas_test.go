package controller

import (
	"bytes"
	"io"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/quotas"
)

// TestFSMClientQuotas: quota records are applied copy-on-write, an entity
// whose last key is removed leaves the image, and quotas survive a
// snapshot and restore.
func TestFSMClientQuotas(t *testing.T) {
	tf := newTestFSM(t)
	perf := []quotaEntityRecord{{Type: quotas.EntityClientID, Name: ptr("perf")}}
	users := []quotaEntityRecord{{Type: quotas.EntityUser}}
	tf.mustApply(alterClientQuotasCmd{Records: []clientQuotaRecord{
		{Entity: perf, Key: quotas.ProducerByteRate, Value: "1048576"},
		{Entity: perf, Key: quotas.ConsumerByteRate, Value: "2097152"},
		{Entity: users, Key: quotas.RequestPercentage, Value: "NaN"},
	}})
	before := tf.image()
	tf.mustApply(alterClientQuotasCmd{Records: []clientQuotaRecord{
		{Entity: perf, Key: quotas.ConsumerByteRate, Remove: true},
		{Entity: users, Key: quotas.RequestPercentage, Remove: true},
	}})
	perfEntity := quotas.Entity{ClientID: quotas.Named("perf")}
	if got := tf.image().ClientQuotas.Values(perfEntity); !maps.Equal(got, map[string]float64{quotas.ProducerByteRate: 1048576}) {
		t.Fatalf("perf quotas = %v", got)
	}
	if got := tf.image().ClientQuotas.Entities(); len(got) != 1 {
		t.Fatalf("entities = %v, want perf alone", got)
	}
	if got := before.ClientQuotas.Values(perfEntity); len(got) != 2 || !math.IsNaN(before.ClientQuotas.Values(quotas.Entity{User: quotas.DefaultPart()})[quotas.RequestPercentage]) {
		t.Fatalf("a later command changed an earlier image: %v", got)
	}
	// A command that changes something else keeps the same ClientConfig.
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	if tf.image().ClientQuotas != tf.seen[len(tf.seen)-2].ClientQuotas {
		t.Fatal("an unrelated command rebuilt the client quotas")
	}

	want := tf.image()
	snap, err := tf.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !bytes.Contains(sink.Bytes(), []byte(`"clientQuotas":[{"entity":[{"type":"client-id","name":"perf"}],"key":"producer_byte_rate","value":"1048576"}]`)) {
		t.Fatalf("snapshot lacks the client quotas: %s", sink.Bytes())
	}
	f := newFSM(nil)
	if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := f.current(); !sameImage(got, want) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, want)
	}

	// Removing the last key empties the quotas to nil.
	tf.mustApply(alterClientQuotasCmd{Records: []clientQuotaRecord{{Entity: perf, Key: quotas.ProducerByteRate, Remove: true}}})
	if tf.image().ClientQuotas != nil {
		t.Fatalf("quotas = %v, want nil", tf.image().ClientQuotas.Entities())
	}
}

func comps(kv ...string) []QuotaComponent {
	var out []QuotaComponent
	for i := 0; i < len(kv); i += 2 {
		c := QuotaComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = ptr(kv[i+1])
		}
		out = append(out, c)
	}
	return out
}

func set(key string, v float64) ClientQuotaOp { return ClientQuotaOp{Key: key, Value: v} }

// TestAlterClientQuotasValidation: each invalid alteration gets Kafka's
// error and message and changes nothing, while the valid entities of the
// same batch are applied.
func TestAlterClientQuotasValidation(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		alt  ClientQuotaAlteration
		msg  string // "" for success
	}{
		{"client named", ClientQuotaAlteration{comps("client-id", "perf"), []ClientQuotaOp{set("producer_byte_rate", 1048576), set("request_percentage", 12.5)}}, ""},
		{"user default", ClientQuotaAlteration{comps("user", "<default>"), []ClientQuotaOp{set("controller_mutation_rate", 0.5)}}, ""},
		{"ip", ClientQuotaAlteration{comps("ip", "127.0.0.1"), []ClientQuotaOp{set("connection_creation_rate", 50)}}, ""},
		{"empty entity", ClientQuotaAlteration{nil, []ClientQuotaOp{set("producer_byte_rate", 1)}}, "Invalid empty client quota entity"},
		{"unknown type", ClientQuotaAlteration{comps("group", "g"), []ClientQuotaOp{set("producer_byte_rate", 1)}}, "Unhandled client quota entity type: group"},
		{"empty name", ClientQuotaAlteration{comps("user", ""), []ClientQuotaOp{set("producer_byte_rate", 1)}}, "Empty user not supported"},
		{"ip with client", ClientQuotaAlteration{comps("ip", "127.0.0.1", "client-id", "x"), []ClientQuotaOp{set("connection_creation_rate", 1)}}, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{"bad ip", ClientQuotaAlteration{comps("ip", "no such host.invalid"), []ClientQuotaOp{set("connection_creation_rate", 1)}}, "no such host.invalid is not a valid IP or resolvable host."},
		{"unknown key", ClientQuotaAlteration{comps("client-id", "a"), []ClientQuotaOp{set("bogus", 1)}}, "Invalid configuration key bogus"},
		{"ip key on client", ClientQuotaAlteration{comps("client-id", "a"), []ClientQuotaOp{set("connection_creation_rate", 1)}}, "Invalid configuration key connection_creation_rate"},
		{"zero", ClientQuotaAlteration{comps("client-id", "a"), []ClientQuotaOp{set("producer_byte_rate", 0)}}, "Quota producer_byte_rate must be greater than 0"},
		{"fraction", ClientQuotaAlteration{comps("client-id", "a"), []ClientQuotaOp{set("consumer_byte_rate", 1.5)}}, "consumer_byte_rate cannot be a fractional value."},
		{"too large int", ClientQuotaAlteration{comps("ip", "<default>"), []ClientQuotaOp{set("connection_creation_rate", 3e9)}}, "Proposed value for connection_creation_rate is too large for an INT."},
		{"duplicate key", ClientQuotaAlteration{comps("client-id", "d"), []ClientQuotaOp{set("producer_byte_rate", 1), set("producer_byte_rate", 2)}}, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=d})"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Image().ClientQuotas
			res := c.AlterClientQuotas(ctx, []ClientQuotaAlteration{tc.alt}, false)
			if len(res) != 1 {
				t.Fatalf("results = %+v", res)
			}
			if tc.msg == "" {
				if res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
				return
			}
			wantKafkaErr(t, res[0].Err, kerr.InvalidRequest)
			if !strings.HasSuffix(res[0].Err.Error(), ": "+tc.msg) {
				t.Fatalf("error %q, want message %q", res[0].Err, tc.msg)
			}
			if c.Image().ClientQuotas != before {
				t.Fatal("a rejected alteration changed the quotas")
			}
		})
	}
	qs := c.Image().ClientQuotas
	if got := qs.Values(quotas.Entity{ClientID: quotas.Named("perf")}); !maps.Equal(got, map[string]float64{"producer_byte_rate": 1048576, "request_percentage": 12.5}) {
		t.Fatalf("perf = %v", got)
	}
	if v, ok := qs.ResolveIP("127.0.0.1"); !ok || v != 50 {
		t.Fatalf("ip quota = %v %v", v, ok)
	}

	// A batch: a repeated entity is answered once, with the duplicate
	// error, and its first alteration still applies (as in Kafka); an
	// invalid entity does not stop a valid one; removing a key that is not
	// set is no error.
	res := c.AlterClientQuotas(ctx, []ClientQuotaAlteration{
		{comps("user", "alice", "client-id", "perf"), []ClientQuotaOp{set("producer_byte_rate", 100)}},
		{comps("client-id", "bad"), []ClientQuotaOp{set("producer_byte_rate", -1)}},
		{comps("client-id", "perf"), []ClientQuotaOp{{Key: "request_percentage", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		{comps("client-id", "perf", "user", "alice"), []ClientQuotaOp{set("producer_byte_rate", 200)}},
	}, false)
	// In Kafka's answer order (checked against Kafka 4.4.0).
	if len(res) != 3 || res[0].Err != nil || res[1].Err == nil || res[2].Err == nil ||
		!strings.Contains(res[2].Err.Error(), "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=perf, user=alice})") {
		t.Fatalf("batch results = %+v", res)
	}
	qs = c.Image().ClientQuotas
	if got := qs.Values(quotas.Entity{User: quotas.Named("alice"), ClientID: quotas.Named("perf")}); !maps.Equal(got, map[string]float64{"producer_byte_rate": 100}) {
		t.Fatalf("alice/perf = %v", got)
	}
	if got := qs.Values(quotas.Entity{ClientID: quotas.Named("perf")}); !maps.Equal(got, map[string]float64{"producer_byte_rate": 1048576}) {
		t.Fatalf("perf = %v", got)
	}

	// validateOnly writes nothing; neither does setting the value a key has.
	index := c.Image().Index
	if res := c.AlterClientQuotas(ctx, []ClientQuotaAlteration{{comps("client-id", "new"), []ClientQuotaOp{set("producer_byte_rate", 5)}}}, true); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if res := c.AlterClientQuotas(ctx, []ClientQuotaAlteration{{comps("client-id", "perf"), []ClientQuotaOp{set("producer_byte_rate", 1048576)}}}, false); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if c.Image().Index != index {
		t.Fatalf("index moved from %d to %d", index, c.Image().Index)
	}
}

// TestJavaMapOrder: entity components come in the order Kafka's hash map
// iterates them (checked with jshell against java.util.HashMap created
// with the component count and filled in turn).
func TestJavaMapOrder(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"user,client-id", "client-id,user"},
		{"client-id,user", "client-id,user"},
		{"ip", "ip"},
		{"user,client-id,ip", "client-id,user,ip"},
		{"client-id,ip,user,group", "client-id,user,ip,group"},
		{"user,user,client-id", "client-id,user"},
		{"a,b,c,d,e,f,g", "a,b,c,d,e,f,g"},
	} {
		var cs []QuotaComponent
		for _, typ := range strings.Split(tc.in, ",") {
			cs = append(cs, QuotaComponent{Type: typ})
		}
		if got := strings.Join(javaMapOrder(cs), ","); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestClientQuotasReopenFromSnapshotAndLog: quotas set before a raft
// snapshot come back from the snapshot, quotas set after it from the log.
func TestClientQuotasReopenFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	alter := func(client string, v float64) {
		t.Helper()
		res := c.AlterClientQuotas(ctx, []ClientQuotaAlteration{{comps("client-id", client), []ClientQuotaOp{set(quotas.ProducerByteRate, v)}}}, false)
		if res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
	}
	alter("before-snapshot", 100)
	alter("changed-after", 1)
	if err := c.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	alter("after-snapshot", 200)
	alter("changed-after", 2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, _ := openTest(t, cfg)
	qs := c2.Image().ClientQuotas
	for client, want := range map[string]float64{"before-snapshot": 100, "after-snapshot": 200, "changed-after": 2} {
		r, ok := qs.Resolve("ANONYMOUS", client, quotas.ProducerByteRate)
		if !ok || r.Limit != want {
			t.Fatalf("%s after reopen: %+v %v, want %v", client, r, ok, want)
		}
	}
}
