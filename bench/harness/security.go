package main

// The security modes of -security (issue 19, acceptance 4: what SASL_SSL
// costs). Under sasl_ssl both systems get the same Kafka listener
// properties: one listener named SASL_SSL (security protocol SASL_SSL)
// that clients and the brokers' replication use alike
// (inter.broker.listener.name), TLS from a PKCS12 keystore and truststore
// the harness writes with sluicetest/certs (a CA and a certificate for
// 127.0.0.1 and localhost), SCRAM-SHA-512 the only SASL mechanism, the
// brokers logging in to each other as brokerUser and the workload clients
// as clientUser. The controller listener stays PLAINTEXT on both systems:
// the issue asks for the cost of client and inter-broker traffic, and
// Kafka's KRaft quorum and sluice's raft are not the same protocol.
//
// The SCRAM users must exist before a broker can log in to another one.
// Kafka writes them into the metadata log when it formats its log dirs
// (kafka-storage.sh format --add-scram), before its processes start.
// sluice has no such step yet, so its nodes also open a PLAINTEXT
// listener named BOOTSTRAP on loopback, through which the harness creates
// the users with AlterUserScramCredentials once the cluster has a
// controller; no workload client is seeded with it, and a client of the
// SASL_SSL listener is told only SASL_SSL endpoints.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// Security modes, the values -security accepts.
const (
	modePlaintext = "plaintext"
	modeSASLSSL   = "sasl_ssl"
)

var securityModes = []string{modePlaintext, modeSASLSSL}

// The SCRAM-SHA-512 users of sasl_ssl: the brokers' own (in their
// listener's JAAS config) and the workload clients'. 4096 iterations is
// Kafka's minimum and what kafka-storage.sh --add-scram uses unless told.
const (
	brokerUser      = "broker"
	brokerPassword  = "broker-secret"
	clientUser      = "bench"
	clientPassword  = "bench-secret"
	scramIterations = 4096
	saslListener    = "SASL_SSL"
	bootstrapName   = "BOOTSTRAP" // sluice only: see the file's comment
)

// security is one run's mode: nil or plaintext, or sasl_ssl with the
// certificates its listeners serve.
type security struct {
	mode  string
	certs *certs.Set // sasl_ssl only
}

// newSecurity makes the mode's material under dir.
func newSecurity(mode, dir string) (*security, error) {
	s := &security{mode: mode}
	if mode == modeSASLSSL {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		var err error
		if s.certs, err = certs.Write(dir); err != nil {
			return nil, fmt.Errorf("certificates for %s: %w", mode, err)
		}
	}
	return s, nil
}

// secured reports whether s is a mode other than plaintext.
func (s *security) secured() bool { return s != nil && s.mode != modePlaintext }

// clientOpts are what every franz-go client of the harness adds to talk
// to a cluster in mode s: the TLS it trusts and the SASL it logs in with.
func (s *security) clientOpts() []kgo.Opt {
	if !s.secured() {
		return nil
	}
	return []kgo.Opt{
		kgo.DialTLSConfig(s.certs.ClientConfig(nil)),
		kgo.SASL(scram.Auth{User: clientUser, Pass: clientPassword}.AsSha512Mechanism()),
	}
}

// listenerName is the name of the Kafka listener clients use.
func (s *security) listenerName() string {
	if s.secured() {
		return saslListener
	}
	return "PLAINTEXT"
}

// brokerProperties are the security properties both systems' nodes get
// in mode s, besides listeners and the protocol map (which differ by the
// controller and bootstrap listeners): the inter-broker listener, TLS,
// SCRAM-SHA-512 and the brokers' login.
func (s *security) brokerProperties() []string {
	if !s.secured() {
		return []string{"inter.broker.listener.name=PLAINTEXT"}
	}
	props := []string{
		"inter.broker.listener.name=" + saslListener,
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"listener.name." + strings.ToLower(saslListener) + ".scram-sha-512.sasl.jaas.config=" +
			fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, brokerUser, brokerPassword),
	}
	return append(props, s.certs.ServerLines("")...)
}

// kafkaScramArgs are kafka-storage.sh format's arguments that write the
// SCRAM users into the metadata log it creates.
func (s *security) kafkaScramArgs() []string {
	if !s.secured() {
		return nil
	}
	var args []string
	for _, u := range [][2]string{{brokerUser, brokerPassword}, {clientUser, clientPassword}} {
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,iterations=%d,password=%s]", u[0], scramIterations, u[1]))
	}
	return args
}

// certDir is where a run's certificates of mode go under workDir.
func certDir(workDir, mode string) string { return filepath.Join(workDir, "certs-"+mode) }
