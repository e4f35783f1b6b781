package broker_test

// Listeners speaking TLS and SASL (issue 19), end to end: a franz-go
// client logs in with SCRAM or PLAIN over TLS and produces and consumes,
// and brokers replicate over a SASL_SSL inter-broker listener.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest"
)

const plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule required"

// TestSASLSSLListener: a node with a PLAINTEXT and a SASL_SSL listener
// serves a SCRAM-SHA-512 user (created through the PLAINTEXT listener
// with AlterUserScramCredentials) and a PLAIN user (from the listener's
// JAAS config) over TLS, each producing and consuming, and tells them the
// SASL_SSL endpoint; a wrong password is refused.
func TestSASLSSLListener(t *testing.T) {
	certs := sluicetest.NewCerts(t)
	ovr := []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + plainModule + ` user_alice="alice-secret";`,
	}
	n := sluicetest.Start(t, append(ovr, certs.ServerLines("")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	adm := n.Admin()
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}}); err != nil {
		t.Fatalf("create SCRAM user: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	tlsOpt := kgo.DialTLSConfig(certs.ClientConfig(nil))
	secure := n.ListenerAddr("SASL_SSL")
	for _, user := range []struct {
		name string
		auth kgo.Opt
	}{
		{"bob (SCRAM-SHA-512)", kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())},
		{"alice (PLAIN)", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())},
	} {
		// The credential is in this node's image: AlterUserScramCredentials
		// answered once it was applied.
		cl := n.ClientOn("SASL_SSL", tlsOpt, user.auth)
		if meta, cluster, coord := endpointsSeen(t, cl, "g-"+user.name); meta[1] != secure || cluster[1] != secure || coord != secure {
			t.Errorf("%s told %v, %v, coordinator %s; want %s", user.name, meta, cluster, coord, secure)
		}
		produceConsume(t, cl, "secure", 10, func(opts ...kgo.Opt) *kgo.Client {
			return n.ClientOn("SASL_SSL", append([]kgo.Opt{tlsOpt, user.auth}, opts...)...)
		})
	}

	// Passwords and JAAS texts are described as null, as Kafka does.
	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ssl.keystore.password", "listener.name.sasl_ssl.plain.sasl.jaas.config"} {
		found := false
		for _, c := range rc.Configs {
			if c.Key == key {
				found = true
				if c.Value != nil || !c.Sensitive {
					t.Errorf("%s described as %v (sensitive %v), want null and sensitive", key, c.MaybeValue(), c.Sensitive)
				}
			}
		}
		if !found {
			t.Errorf("%s not described", key)
		}
	}

	bad := n.ClientOn("SASL_SSL", tlsOpt, kgo.SASL(scram.Auth{User: "bob", Pass: "wrong"}.AsSha512Mechanism()), kgo.RequestRetries(0))
	if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestSASLSSLInterBrokerCluster: three nodes whose inter-broker listener
// speaks SASL_SSL (PLAIN, the broker user from the listener's JAAS
// config) replicate a topic of three replicas written with acks=all
// through their PLAINTEXT listener, and a client of the SASL_SSL
// listener is told every node's SASL_SSL endpoint.
func TestSASLSSLInterBrokerCluster(t *testing.T) {
	certs := sluicetest.NewCerts(t)
	ovr := []string{
		"listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map=INTERNAL:SASL_SSL,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=INTERNAL",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.internal.plain.sasl.jaas.config=" + plainModule +
			` username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`,
	}
	c := sluicetest.StartCluster(t, 3, append(ovr, certs.ServerLines("")...)...)

	internal := map[int32]string{}
	for id := 1; id <= 3; id++ {
		internal[int32(id)] = c.Node(id).ListenerAddr("INTERNAL")
	}
	secure := c.Node(2).ClientOn("INTERNAL", kgo.DialTLSConfig(certs.ClientConfig(nil)),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	// Node 2's image may not show every node unfenced yet.
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		if meta, cluster, _ := endpointsSeen(t, secure, "g"); !mapsEqual(meta, internal) || !mapsEqual(cluster, internal) {
			return fmt.Errorf("SASL_SSL client told %v and %v, want %v", meta, cluster, internal)
		}
		return nil
	})

	cl := c.Node(1).ClientOn("EXTERNAL", kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": ptrTo("3")}, "replicated"); err != nil {
		t.Fatal(err)
	}
	// acks=all with min.insync.replicas=3: every record is on all three
	// replicas, fetched over SASL_SSL, before it is acknowledged.
	produceConsume(t, cl, "replicated", 20, func(opts ...kgo.Opt) *kgo.Client { return c.Node(3).ClientOn("EXTERNAL", opts...) })
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		mt, err := topicMetadata(cl, "replicated")
		if err != nil {
			return err
		}
		if isr := mt.Partitions[0].ISR; len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
}

// unsecuredToken is an OAUTHBEARER token Kafka's default (unsecured)
// validator accepts: alg none, a subject, issued now, expiring in an hour.
func unsecuredToken(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now().Unix()
	return enc([]byte(`{"alg":"none"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, now, now+3600))) + "."
}

// TestOAuthBearerAndSSLListeners: an OAUTHBEARER user logs in on a
// SASL_PLAINTEXT listener with an unsecured token (Kafka's default
// validator) and a client with a certificate on an SSL listener with
// listener.name.ssl.ssl.client.auth=required; each produces and
// consumes, and a TLS client without a certificate is refused.
func TestOAuthBearerAndSSLListeners(t *testing.T) {
	certs := sluicetest.NewCerts(t)
	ovr := []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.ssl.ssl.client.auth=required",
	}
	n := sluicetest.Start(t, append(ovr, certs.ServerLines("listener.name.ssl.")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.Admin().CreateTopic(ctx, 1, 1, nil, "both"); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		listener string
		opts     []kgo.Opt
	}{
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SASL(oauth.Auth{Token: unsecuredToken("carol")}.AsMechanism())}},
		{"SSL", []kgo.Opt{kgo.DialTLSConfig(certs.ClientConfig(certs.Client))}},
	} {
		cl := n.ClientOn(l.listener, l.opts...)
		produceConsume(t, cl, "both", 5, func(opts ...kgo.Opt) *kgo.Client {
			return n.ClientOn(l.listener, append(append([]kgo.Opt{}, l.opts...), opts...)...)
		})
	}
	noCert := n.ClientOn("SSL", kgo.DialTLSConfig(certs.ClientConfig(nil)), kgo.RequestRetries(0))
	if err := noCert.Ping(ctx); err == nil {
		t.Error("a TLS client without a certificate was served by a listener requiring one")
	}
}

// TestSCRAMInterBrokerCluster: brokers log in to each other with
// SCRAM-SHA-512 (sasl.mechanism.inter.broker.protocol) and the username
// and password of the inter-broker listener's ScramLoginModule JAAS
// config. The cluster forms without it (registration and the controller
// travel the controller listener); replication starts once an operator
// has created the broker user's credential, as with Kafka brokers whose
// SCRAM credentials are added after formatting.
func TestSCRAMInterBrokerCluster(t *testing.T) {
	certs := sluicetest.NewCerts(t)
	ovr := []string{
		"listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map=INTERNAL:SASL_SSL,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=INTERNAL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		`listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
	}
	c := sluicetest.StartCluster(t, 3, append(ovr, certs.ServerLines("")...)...)
	cl := c.Node(1).ClientOn("EXTERNAL", kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "broker", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "broker-secret"}}); err != nil {
		t.Fatalf("create the broker user: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": ptrTo("3")}, "replicated"); err != nil {
		t.Fatal(err)
	}
	produceConsume(t, cl, "replicated", 10, func(opts ...kgo.Opt) *kgo.Client { return c.Node(2).ClientOn("EXTERNAL", opts...) })
}
