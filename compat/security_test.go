package compat

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// The security rows (issue 19, acceptance 2) run Kafka's Java tools, kcat
// and confluent-kafka for Python over a SASL_SSL listener with SCRAM-SHA-512,
// against a broker set up as Kafka's documentation sets one up:
//
//	listeners=PLAINTEXT://127.0.0.1:<p1>,SASL_SSL://127.0.0.1:<p2>
//	sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
//	listener.name.sasl_ssl.plain.sasl.jaas.config=...PlainLoginModule required ... user_admin="...";
//	listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=...ScramLoginModule required;
//	listener.name.sasl_ssl.ssl.keystore.* (PKCS12, from sluicetest/certs)
//	authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
//	super.users=User:admin
//
// The admin is bootstrapped with SASL/PLAIN: its password is in the
// listener's PLAIN JAAS config (Kafka's user_<name> options), so it can log
// in before any SCRAM credential exists and then create the SCRAM users
// (Kafka's docs offer this or kafka-storage.sh format --add-scram). The
// PLAINTEXT listener is the harness's readiness probe and the inter-broker
// listener; its clients are User:ANONYMOUS, which no ACL names.

const (
	secAdminUser     = "admin"
	secAdminPassword = "admin-secret"
	secUser          = "alice"
	secUserPassword  = "alice-secret"
	// secIterations is the SCRAM iteration count the rows create users
	// with (Kafka's minimum is 4096).
	secIterations = 8192
)

// secureEnv is a row's SASL_SSL broker and the files its clients use.
type secureEnv struct {
	// addr is the SASL_SSL listener's host:port.
	addr  string
	certs *certs.Set
	// adminProps is a client properties file for the admin (SASL/PLAIN,
	// a PKCS12 truststore); userProps one for alice (SCRAM-SHA-512, a PEM
	// truststore), as a Kafka user writes them.
	adminProps, userProps string
	logf                  func(format string, args ...any)
}

// secureStart starts a row's SASL_SSL broker (row.start) and keeps what
// its clients need for the row's run.
type secureStart struct{ env *secureEnv }

// run is the row's run: check with the broker start made.
func (st *secureStart) run(check func(ctx context.Context, env *rowEnv, s *secureEnv) error) func(ctx context.Context, env *rowEnv) error {
	return func(ctx context.Context, env *rowEnv) error {
		if st.env == nil {
			return fmt.Errorf("the row's SASL_SSL broker was not started")
		}
		return check(ctx, env, st.env)
	}
}

// start makes the CA and certificates in dir/certs, starts node 1 with a
// PLAINTEXT and a SASL_SSL listener, the authorizer on (see above), its
// data in dir/data (emptied first: a kept log directory may hold an
// earlier run's node), and writes the clients' properties files in dir.
func (st *secureStart) start(ctx context.Context, bin, dir string, logf func(string, ...any)) ([]*broker, error) {
	set, err := certs.Write(mkdir(filepath.Join(dir, "certs")))
	if err != nil {
		return nil, err
	}
	plainPort, err := freePort()
	if err != nil {
		return nil, err
	}
	saslPort, err := freePort()
	if err != nil {
		return nil, err
	}
	plain := net.JoinHostPort("127.0.0.1", fmt.Sprint(plainPort))
	sasl := net.JoinHostPort("127.0.0.1", fmt.Sprint(saslPort))
	props := []string{
		"listeners=PLAINTEXT://" + plain + ",SASL_SSL://" + sasl,
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required " +
			`username="` + secAdminUser + `" password="` + secAdminPassword + `" user_` + secAdminUser + `="` + secAdminPassword + `";`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:" + secAdminUser,
	}
	props = append(props, set.ServerLines("listener.name.sasl_ssl.")...)

	s := &secureEnv{addr: sasl, certs: set, logf: logf}
	s.adminProps = filepath.Join(dir, "admin.properties")
	admin := append([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=PLAIN",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="` + secAdminUser + `" password="` + secAdminPassword + `";`,
	}, set.TruststoreP12Lines("")...)
	if err := writeProps(s.adminProps, admin); err != nil {
		return nil, err
	}
	s.userProps = filepath.Join(dir, secUser+".properties")
	if err := writeProps(s.userProps, s.scramProps(secUser, secUserPassword)); err != nil {
		return nil, err
	}

	if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	b, err := spawnBroker(bin, dir, 1, plain, props)
	if err != nil {
		return nil, err
	}
	if err := b.waitReady(ctx); err != nil {
		return nil, err
	}
	logf("SASL_SSL listener %s (PLAINTEXT %s)", sasl, plain)
	st.env = s
	return []*broker{b}, nil
}

// scramProps is a Java client's properties for user over SASL_SSL with
// SCRAM-SHA-512 and the CA as a PEM truststore.
func (s *secureEnv) scramProps(user, password string) []string {
	return append([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + `";`,
	}, s.certs.TruststorePEMLines("")...)
}

// adminClient is a franz-go client logged in as the admin with PLAIN over
// TLS, for setup and cross-checks.
func (s *secureEnv) adminClient(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.addr),
		kgo.DialTLSConfig(s.tlsConfig()),
		kgo.SASL(plain.Auth{User: secAdminUser, Pass: secAdminPassword}.AsMechanism()),
	}, opts...)...)
}

// scramClient is a franz-go client logged in as user with SCRAM-SHA-512
// over TLS.
func (s *secureEnv) scramClient(user, password string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.addr),
		kgo.DialTLSConfig(s.tlsConfig()),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
	}, opts...)...)
}

func (s *secureEnv) tlsConfig() *tls.Config { return s.certs.ClientConfig(nil) }

func writeProps(path string, lines []string) error {
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// mkdir makes dir (errors surface when the directory is used).
func mkdir(dir string) string {
	_ = os.MkdirAll(dir, 0o755)
	return dir
}
