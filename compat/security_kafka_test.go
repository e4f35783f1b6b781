package compat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// SLUICE_SECURITY_KAFKA=1 runs the checks of kafka-scram-users, kafka-acls,
// kcat-sasl-ssl and py-sasl-ssl against a Kafka 4.4.0 node first (jars from
// compat/kafkatools/fetch.sh 4.4.0), set up as security_test.go sets up
// sluice, so that every expectation is Kafka's before it is sluice's. The
// node runs KRaft combined, its CONTROLLER and PLAINTEXT (inter-broker)
// listeners as User:ANONYMOUS, which is a super user there only because a
// combined node's broker must reach its controller under the authorizer.

const securityKafkaVersion = "4.4.0"

// securityTimeout is a row's timeout d, doubled when the row runs its
// checks against Kafka too.
func securityTimeout(d time.Duration) time.Duration {
	if os.Getenv("SLUICE_SECURITY_KAFKA") == "1" {
		return 2*d + time.Minute
	}
	return d
}

// withKafkaReference runs check against Kafka first when
// SLUICE_SECURITY_KAFKA=1, then against the row's sluice.
func withKafkaReference(check func(ctx context.Context, env *rowEnv, s *secureEnv) error) func(ctx context.Context, env *rowEnv, s *secureEnv) error {
	return func(ctx context.Context, env *rowEnv, s *secureEnv) error {
		if os.Getenv("SLUICE_SECURITY_KAFKA") == "1" {
			k, ks, err := startKafkaSecure(ctx, env)
			if err != nil {
				return err
			}
			err = check(ctx, env, ks)
			k.stop()
			if err != nil {
				return fmt.Errorf("against Kafka %s (SLUICE_SECURITY_KAFKA=1): %w", securityKafkaVersion, err)
			}
			env.t.Logf("Kafka %s passed the row's checks; now sluice", securityKafkaVersion)
		}
		return check(ctx, env, s)
	}
}

// startKafkaSecure starts a Kafka 4.4.0 node with security_test.go's
// SASL_SSL listener, PLAIN admin and authorizer, its files in
// <row dir>/kafka-4.4.0.
func startKafkaSecure(ctx context.Context, env *rowEnv) (*kafka44Broker, *secureEnv, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "kafkatools", "fetch.sh"), securityKafkaVersion).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("compat/kafkatools/fetch.sh %s: %w", securityKafkaVersion, err)
	}
	libs := strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))

	dir := filepath.Join(env.dir, "kafka-"+securityKafkaVersion)
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	set, err := certs.Write(mkdir(filepath.Join(dir, "certs")))
	if err != nil {
		return nil, nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, nil, err
		}
	}
	plain := net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[0]))
	sasl := net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[1]))
	ctrl := net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[2]))
	props := append([]string{
		"process.roles=broker,controller",
		"node.id=" + javaNodeID,
		"controller.quorum.voters=" + javaNodeID + "@" + ctrl,
		"listeners=PLAINTEXT://" + plain + ",SASL_SSL://" + sasl + ",CONTROLLER://" + ctrl,
		"advertised.listeners=PLAINTEXT://" + plain + ",SASL_SSL://" + sasl,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
		"log.dirs=" + filepath.Join(dir, "data"),
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required " +
			`username="` + secAdminUser + `" password="` + secAdminPassword + `" user_` + secAdminUser + `="` + secAdminPassword + `";`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:" + secAdminUser + ";User:ANONYMOUS",
	}, set.ServerLines("listener.name.sasl_ssl.")...)
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		return nil, nil, err
	}
	var id [16]byte
	rand.Read(id[:])
	clusterID := "k" + base64.RawURLEncoding.EncodeToString(id[:])[1:]
	bin := filepath.Join(env.root, "compat", "bin")
	format := exec.CommandContext(ctx, filepath.Join(bin, "kafka-storage.sh"), "format", "-t", clusterID, "-c", propsPath)
	format.Env = append(os.Environ(), "SLUICE_KAFKA_LIBS="+libs)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("kafka-storage.sh format (Kafka %s): %w\n%s", securityKafkaVersion, err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "kafka-server-start.sh"), propsPath)
	cmd.Env = append(os.Environ(), "SLUICE_KAFKA_LIBS="+libs, "KAFKA_HEAP_OPTS=-Xmx512M -Xms256M")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, err
	}
	k := &kafka44Broker{addr: plain, cmd: cmd, log: logFile}

	s := &secureEnv{addr: sasl, certs: set, logf: env.t.Logf}
	s.adminProps = filepath.Join(dir, "admin.properties")
	if err := writeProps(s.adminProps, append([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=PLAIN",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="` + secAdminUser + `" password="` + secAdminPassword + `";`,
	}, set.TruststoreP12Lines("")...)); err != nil {
		k.stop()
		return nil, nil, err
	}
	s.userProps = filepath.Join(dir, secUser+".properties")
	if err := writeProps(s.userProps, s.scramProps(secUser, secUserPassword)); err != nil {
		k.stop()
		return nil, nil, err
	}
	cl, err := s.adminClient()
	if err != nil {
		k.stop()
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	err = pollUntil(ctx, 2*time.Minute, func() error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		md, err := adm.BrokerMetadata(rctx)
		if err == nil && (len(md.Brokers) != 1 || md.Controller < 0) {
			err = fmt.Errorf("metadata lists %d brokers, controller %d", len(md.Brokers), md.Controller)
		}
		return err
	})
	if err != nil {
		k.stop()
		return nil, nil, fmt.Errorf("Kafka %s did not start within 2 minutes (see %s): %w", securityKafkaVersion, logFile.Name(), err)
	}
	env.t.Logf("Kafka %s: SASL_SSL %s, log %s", securityKafkaVersion, sasl, logFile.Name())
	return k, s, nil
}
