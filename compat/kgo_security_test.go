package compat

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// The kgo-security rows run franz-go's kgo suite with everything it can
// test of security turned on (issue 19, acceptance 1):
//
//   - KGO_SEEDS are the nodes' SSL listeners, which require a client
//     certificate (ssl.client.auth=required), and KGO_TEST_TLS gives the
//     suite the test CA and a client certificate: every test of the suite
//     talks TLS;
//   - KGO_TEST_SCRAM_SEEDS are the nodes' SASL_PLAINTEXT listeners
//     (SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) and KGO_TEST_SCRAM a
//     SCRAM-SHA-512 user the row creates before the suite with
//     kadm.AlterUserSCRAMs over the SSL listener: TestSCRAMAuth and
//     TestSCRAMAuthBadCredentials run;
//   - KGO_TEST_OAUTH_SEEDS are the same SASL_PLAINTEXT listeners, whose
//     OAUTHBEARER runs Kafka's default unsecured-JWS validator:
//     TestOAuthAuth runs (its expired token must fail with
//     SASL_AUTHENTICATION_FAILED and invalid_token).
//
// The suite's SCRAM and OAUTHBEARER clients dial without TLS (they do not
// take KGO_TEST_TLS), hence a SASL_PLAINTEXT listener for them. Every node
// also has a SASL_SSL listener (SCRAM-SHA-256 and SCRAM-SHA-512), the
// inter-broker listener, with SCRAM-SHA-512 between brokers; the row
// itself logs in over it with both mechanisms before the suite starts.
// On three nodes the controller listener speaks mutual TLS and gossip is
// encrypted (gossip.encryption.key).
//
// The row fails when a test fails, and when a top-level test skipped
// itself: the suite then runs with nothing it can test left off but what
// kgo_excluded.txt and, on three nodes, kgo_excluded_rf3.txt leave out,
// and the share-group tests the cluster cannot run yet (kgo_share_test.go).

// kgoExcludedTLSFile lists the tests the kgo-security rows skip on top of
// kgo_excluded.txt (and kgo_excluded_rf3.txt on three nodes), each with
// why it cannot run over TLS.
const kgoExcludedTLSFile = "kgo_excluded_tls.txt"

// kgoSecurityRow runs the suite against one secured broker.
func kgoSecurityRow() row { return kgoSecureRow("kgo-security", 1) }

// kgoSecurityRF3Row runs it against three secured nodes, KGO_TEST_RF=3.
func kgoSecurityRF3Row() row { return kgoSecureRow("kgo-security-rf3", 3) }

// secureSuiteTests are the suite's tests that skip themselves unless the
// security variables are set; each must pass in these rows.
var secureSuiteTests = []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"}

// kgoAllowedSelfSkips are the tests that skip themselves against sluice
// as against Kafka 4, in the plain kgo rows too, and why.
var kgoAllowedSelfSkips = map[string]string{
	"TestIssueProduceBrokerTooOldFailsRecords": "it tests a broker that refuses Produce v2 by its ApiVersions minimum; sluice, as Kafka 4 (KAFKA-18659), lists Produce from v0 and refuses v0-2 when asked (protocol.Router.RegisterAdvertisedFrom)",
}

// kgoSecureRow is a kgo-security row on nodes sluice processes.
func kgoSecureRow(name string, nodes int) row {
	s := &secureNodes{n: nodes}
	return row{
		name:    name,
		tools:   []string{"go"},
		nodes:   nodes,
		timeout: kgoSuiteTimeout() + 4*time.Minute,
		start:   s.start,
		run: func(ctx context.Context, env *rowEnv) error {
			return s.run(ctx, env)
		},
	}
}

// secureNodes is the row's secured nodes: their certificates, the
// credentials, and each node's listener addresses.
type secureNodes struct {
	n     int
	certs *certs.Set
	// user and pass are the SCRAM user the suite logs in as (both
	// mechanisms); brokerPass the inter-broker user's (SCRAM-SHA-512).
	user, pass, brokerPass string
	// gossipKey is gossip.encryption.key on a cluster.
	gossipKey string
	addrs     []secureAddrs
}

// secureUser and secureBroker name the SCRAM users the rows create.
const (
	secureUser   = "kgo-suite"
	secureBroker = "sluice-broker"
)

// secureAddrs are one node's listeners.
type secureAddrs struct {
	ssl, saslSSL, saslPlain string
	controller, gossip      string // a cluster's only
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// tlsConfig is the suite's TLS: the test CA and the client certificate.
func (s *secureNodes) tlsConfig() *tls.Config { return s.certs.ClientConfig(s.certs.Client) }

// start makes the certificates and credentials and starts the nodes: a
// lone broker for one node, else a cluster whose every node is a raft
// voter, as startCluster starts one, retried on other ports when one was
// taken.
func (s *secureNodes) start(ctx context.Context, bin, dir string, logf func(string, ...any)) ([]*broker, error) {
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, err
	}
	set, err := certs.Write(certDir)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	s.certs = set
	s.pass, s.brokerPass = randomHex(12), randomHex(12)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s.gossipKey = base64.StdEncoding.EncodeToString(key)
	for attempt := 1; ; attempt++ {
		nodes, err := s.startOnce(ctx, bin, dir)
		if err == nil {
			return nodes, nil
		}
		if attempt == clusterStartAttempts || ctx.Err() != nil || !errors.Is(err, errPortTaken) {
			return nil, err
		}
		logf("start attempt %d: %v; retrying on other ports", attempt, firstLine(err.Error()))
	}
}

// props are node i's properties (after log.dirs and node.id).
func (s *secureNodes) props(i int) []string {
	a := s.addrs[i]
	listeners := "SSL://" + a.ssl + ",SASL_SSL://" + a.saslSSL + ",SASL_PLAINTEXT://" + a.saslPlain
	protocols := "SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
	if s.n > 1 {
		listeners += ",CONTROLLER://" + a.controller
		protocols += ",CONTROLLER:SSL"
	}
	props := []string{
		"listeners=" + listeners,
		"listener.security.protocol.map=" + protocols,
		"inter.broker.listener.name=SASL_SSL",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` +
			secureBroker + `" password="` + s.brokerPass + `";`,
		"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.ssl.ssl.client.auth=required",
		// As in the kgo rows' README recipe: no initial rebalance delay.
		"group.initial.rebalance.delay.ms=0",
	}
	// Every TLS listener (and the inter-broker and controller clients)
	// serves the test's server certificate and trusts its CA.
	props = append(props, s.certs.ServerLines("")...)
	if s.n > 1 {
		var voters, gossip []string
		for j, b := range s.addrs {
			voters = append(voters, fmt.Sprintf("%d@%s", j+1, b.controller))
			gossip = append(gossip, b.gossip)
		}
		props = append(props,
			"controller.quorum.voters="+strings.Join(voters, ","),
			"gossip.listener="+a.gossip,
			"gossip.join="+strings.Join(gossip, ","),
			"gossip.encryption.key="+s.gossipKey,
		)
		props = append(props, s.certs.ServerLines("listener.name.controller.")...)
	}
	return props
}

func (s *secureNodes) startOnce(ctx context.Context, bin, dir string) ([]*broker, error) {
	ports, err := freeClusterPorts(s.n)
	if err != nil {
		return nil, err
	}
	s.addrs = make([]secureAddrs, s.n)
	for i, p := range ports {
		more, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		s.addrs[i] = secureAddrs{ssl: p.kafka, saslSSL: more[0], saslPlain: more[1], controller: p.controller, gossip: p.gossip}
	}
	var nodes []*broker
	for i := range s.n {
		nodeDir := dir
		if s.n > 1 {
			nodeDir = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		}
		// A retry starts from an empty data directory.
		if err := os.RemoveAll(filepath.Join(nodeDir, "data")); err != nil {
			stopAll(nodes)
			return nil, err
		}
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			stopAll(nodes)
			return nil, err
		}
		b, err := spawnBroker(bin, nodeDir, int32(i+1), s.addrs[i].ssl, s.props(i))
		if err != nil {
			stopAll(nodes)
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		nodes = append(nodes, b)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, b := range nodes {
		wg.Go(func() {
			if errs[i] = b.waitReady(wctx); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var first error
	for i, err := range errs {
		if err == nil {
			continue
		}
		err = fmt.Errorf("node %d: %w", i+1, err)
		if first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	if first != nil {
		stopAll(nodes)
		for _, b := range nodes {
			if logHas(b.logPath, "address already in use") {
				return nil, fmt.Errorf("%w: %w", errPortTaken, first)
			}
		}
		return nil, first
	}
	for _, b := range nodes {
		if err := s.waitMetadata(ctx, b); err != nil {
			stopAll(nodes)
			return nil, err
		}
	}
	return nodes, nil
}

// freePorts finds n distinct free loopback TCP ports, held until all are
// found.
func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// client is a franz-go client of the nodes' SSL listeners with the
// suite's client certificate.
func (s *secureNodes) client(seeds []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(s.tlsConfig())}, opts...)...)
}

// waitMetadata polls Metadata from b's SSL listener until it lists every
// node at its SSL address and a controller among them.
func (s *secureNodes) waitMetadata(ctx context.Context, b *broker) error {
	want := map[int32]string{}
	for i, a := range s.addrs {
		want[int32(i+1)] = a.ssl
	}
	err := pollUntil(ctx, clusterFormTimeout, func() error {
		if crash := b.crashed(); crash != nil {
			return crash
		}
		cl, err := s.client([]string{b.addr}, kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl.SeedBrokers()[0])
		if err != nil {
			return err
		}
		got := map[int32]string{}
		for _, br := range resp.Brokers {
			got[br.NodeID] = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("brokers %v, want %v", got, want)
		}
		if _, ok := want[resp.ControllerID]; !ok {
			return fmt.Errorf("controller %d", resp.ControllerID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("node %d: Metadata over TLS does not show the nodes within %s: %w\n%s",
			b.id, clusterFormTimeout, err, tail(b.logPath, 20))
	}
	return nil
}

func (s *secureNodes) list(pick func(secureAddrs) string) []string {
	var out []string
	for _, a := range s.addrs {
		out = append(out, pick(a))
	}
	return out
}

// run creates the SCRAM users, checks every node logs them in, runs the
// suite and checks that nothing but the listed tests was left out.
func (s *secureNodes) run(ctx context.Context, env *rowEnv) error {
	prep := time.Now()
	if err := s.createUsers(ctx, env); err != nil {
		return err
	}
	if err := s.checkLogins(ctx); err != nil {
		return err
	}
	if s.n > 1 {
		if err := s.checkReplication(ctx, env); err != nil {
			return err
		}
	}
	env.t.Logf("SCRAM users created and logged in on every node in %.1fs", time.Since(prep).Seconds())

	c := s.certs
	extra := []string{
		"KGO_TEST_TLS=ca:" + c.TruststorePEM + ",cert:" + c.Client.CertFile + ",key:" + c.Client.KeyFile,
		"KGO_TEST_SCRAM=" + secureUser + ":" + s.pass + ":512",
		"KGO_TEST_SCRAM_SEEDS=" + strings.Join(s.list(func(a secureAddrs) string { return a.saslPlain }), ","),
		"KGO_TEST_OAUTH_SEEDS=" + strings.Join(s.list(func(a secureAddrs) string { return a.saslPlain }), ","),
	}
	env.t.Logf("suite environment: %s", strings.Join(extra, " "))
	sum, err := runKgoSuiteEnv(ctx, env, s.n, extra, []string{kgoExcludedTLSFile}, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig())})
	if err != nil {
		return err
	}
	var skipped []string
	for name, st := range sum.state {
		if st == "skip" {
			skipped = append(skipped, name)
		}
	}
	slices.Sort(skipped)
	var unexpected []string
	for _, name := range skipped {
		if why, ok := kgoAllowedSelfSkips[name]; ok {
			env.t.Logf("%s skipped itself, as expected: %s", name, why)
			continue
		}
		unexpected = append(unexpected, name)
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("the suite skipped %s: a secured row leaves nothing out but its exclusion files' tests", strings.Join(unexpected, " "))
	}
	for _, name := range secureSuiteTests {
		if sum.state[name] != "pass" {
			return fmt.Errorf("%s did not pass (%q)", name, sum.state[name])
		}
	}
	env.t.Logf("%s passed; no other test skipped itself", strings.Join(secureSuiteTests, ", "))
	return nil
}

// createUsers creates the suite's SCRAM user (both mechanisms) and the
// inter-broker user (SCRAM-SHA-512) with kadm over node 1's SSL listener,
// as an operator's kafka-configs.sh --alter --add-config would.
func (s *secureNodes) createUsers(ctx context.Context, env *rowEnv) error {
	cl, err := s.client(env.bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// One request per mechanism of the user: Kafka refuses a request
	// that alters one user twice (DUPLICATE_RESOURCE).
	for _, ups := range [][]kadm.UpsertSCRAM{
		{
			{User: secureUser, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: s.pass},
			{User: secureBroker, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: s.brokerPass},
		},
		{{User: secureUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: s.pass}},
	} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := adm.AlterUserSCRAMs(actx, nil, ups)
		cancel()
		if err != nil {
			return fmt.Errorf("AlterUserScramCredentials over SSL: %w", err)
		}
		var errs []string
		res.EachError(func(r kadm.AlteredUserSCRAM) {
			errs = append(errs, fmt.Sprintf("%s: %v %s", r.User, r.Err, r.ErrMessage))
		})
		if len(errs) > 0 {
			return fmt.Errorf("AlterUserScramCredentials over SSL: %s", strings.Join(errs, "; "))
		}
	}
	return nil
}

// checkLogins waits until every node lets the suite's user in with
// SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_SSL and SASL_PLAINTEXT, and an
// unsecured OAUTHBEARER token over SASL_PLAINTEXT (a node learns the
// credentials from the metadata log, a moment after the controller).
func (s *secureNodes) checkLogins(ctx context.Context) error {
	a := scram.Auth{User: secureUser, Pass: s.pass}
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"none"}`)) + "." + enc(fmt.Appendf(nil, `{"sub":"%s","exp":%d}`, secureUser, time.Now().Add(time.Hour).Unix())) + "."
	mechs := []struct {
		name string
		m    sasl.Mechanism
		tls  bool
		pick func(secureAddrs) string
	}{
		{"SCRAM-SHA-256 over SASL_SSL", a.AsSha256Mechanism(), true, func(a secureAddrs) string { return a.saslSSL }},
		{"SCRAM-SHA-512 over SASL_SSL", a.AsSha512Mechanism(), true, func(a secureAddrs) string { return a.saslSSL }},
		{"SCRAM-SHA-256 over SASL_PLAINTEXT", a.AsSha256Mechanism(), false, func(a secureAddrs) string { return a.saslPlain }},
		{"SCRAM-SHA-512 over SASL_PLAINTEXT", a.AsSha512Mechanism(), false, func(a secureAddrs) string { return a.saslPlain }},
		{"OAUTHBEARER over SASL_PLAINTEXT", oauth.Auth{Token: token}.AsMechanism(), false, func(a secureAddrs) string { return a.saslPlain }},
	}
	for i, addrs := range s.addrs {
		for _, m := range mechs {
			addr := m.pick(addrs)
			err := pollUntil(ctx, 30*time.Second, func() error {
				opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m.m), kgo.RequestRetries(0)}
				if m.tls {
					opts = append(opts, kgo.DialTLSConfig(s.certs.ClientConfig(nil)))
				}
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					return err
				}
				defer cl.Close()
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, cl.SeedBrokers()[0])
				return err
			})
			if err != nil {
				return fmt.Errorf("node %d: %s at %s: %w", i+1, m.name, addr, err)
			}
		}
	}
	return nil
}

// checkReplication creates a topic with three replicas and produces to
// it with acks=all: the followers fetch over the SASL_SSL inter-broker
// listener, logged in with the inter-broker user just created. The
// topic is deleted afterwards.
func (s *secureNodes) checkReplication(ctx context.Context, env *rowEnv) error {
	const topic = "kgo-security-replication-check"
	cl, err := s.client(env.bootstrap, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(cctx, 1, 3, nil, topic); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	err = pollUntil(cctx, 60*time.Second, func() error {
		pctx, cancel := context.WithTimeout(cctx, 10*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Value: []byte("replicated over SASL_SSL")}).FirstErr()
	})
	if err != nil {
		return fmt.Errorf("acks=all produce to an RF=3 topic (followers fetch over SASL_SSL with SCRAM-SHA-512): %w", err)
	}
	if _, err := adm.DeleteTopic(cctx, topic); err != nil {
		return fmt.Errorf("delete %s: %w", topic, err)
	}
	return nil
}

// TestKgoSecurityExclusions checks kgo_excluded_tls.txt parses, lists
// nothing the other exclusion files list, and leaves out none of the
// tests the secured rows exist to run or allow to skip themselves. It
// needs no broker.
func TestKgoSecurityExclusions(t *testing.T) {
	tlsNames, err := readExclusions(kgoExcludedTLSFile)
	if err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, file := range []string{kgoExcludedFile, kgoExcludedClusterFile} {
		names, err := readExclusions(file)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, names...)
	}
	for _, name := range tlsNames {
		if slices.Contains(others, name) {
			t.Errorf("%s is listed in %s and in another exclusion file", name, kgoExcludedTLSFile)
		}
	}
	skip := regexp.MustCompile(skipPattern(append(others, tlsNames...)))
	for _, name := range append(slices.Clone(secureSuiteTests), slices.Collect(maps.Keys(kgoAllowedSelfSkips))...) {
		if skip.MatchString(name) {
			t.Errorf("%s is excluded, but the secured rows must run it", name)
		}
	}
}
