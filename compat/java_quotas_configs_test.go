package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// This file holds the kafka-configs-quotas row (issue 18, acceptance 6, the
// kafka-configs.sh half): client quotas set, described, deleted and refused
// with kafka-configs.sh --entity-type clients|users|ips, every command's
// output and exit status compared with what the same tool prints against
// Apache Kafka.
//
// The expected outputs below were printed by the row's tool (Kafka 4.1.1's
// kafka-configs.sh, as every other Java row runs) against a Kafka 4.4.0
// KRaft node, with the bootstrap address replaced by BOOTSTRAP and the
// stack-trace lines ("\tat ...") left out; the 4.4.0 tool prints the same
// apart from "Unexpected config names: unknown_quota" without Scala's
// Set(...). SLUICE_QUOTAS_KAFKA=1 runs the steps against a Kafka 4.4.0 node
// as well (compat/kafkatools/fetch.sh 4.4.0, as kafka-configs-keyset does)
// to check the expectations themselves.
//
// Several refusals never reach a broker (the tool checks key names, entity
// combinations and value syntax itself); the fractional, non-positive and
// too large values are refused by the broker (INVALID_REQUEST with Kafka's
// messages). A listing of several entities (--describe --entity-type X
// with no name) is compared as a set of lines: the tool prints them in the
// order of a Java hash map filled in the broker's answer order, which for
// Kafka is its own hash map's order.
//
// kafka-configs.sh --describe --entity-type users also asks
// DescribeUserScramCredentials; sluice answers it with no credentials
// (broker/50_describe_user_scram_credentials.go), so the tool prints what
// it prints for a Kafka with none.

// quotaStep is one kafka-configs.sh invocation and what it must print.
type quotaStep struct {
	args []string
	// fails is a non-zero exit.
	fails bool
	// want is the output, stdout then stderr, without stack-trace lines,
	// the bootstrap address as BOOTSTRAP.
	want string
	// unordered compares want's lines as a set.
	unordered bool
}

func qargs(s string) []string { return strings.Fields(s) }

var quotaSteps = []quotaStep{
	{args: qargs("--alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 --entity-type clients --entity-name perf"),
		want: "Completed updating config for client perf."},
	{args: qargs("--alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 --entity-type users --entity-default"),
		want: "Completed updating default config for users in the cluster."},
	{args: qargs("--alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 --entity-type users --entity-name alice --entity-type clients --entity-name perf"),
		want: "Completed updating config for user alice."},
	{args: qargs("--alter --add-config connection_creation_rate=50 --entity-type ips --entity-name 127.0.0.1"),
		want: "Completed updating config for ip 127.0.0.1."},
	{args: qargs("--alter --add-config request_percentage=12.5,controller_mutation_rate=10 --entity-type clients --entity-default"),
		want: "Completed updating default config for clients in the cluster."},
	{args: qargs("--describe --entity-type clients --entity-name perf"),
		want: "Quota configs for client-id 'perf' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--describe --entity-type users --entity-default"),
		want: "Quota configs for the default user-principal are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--describe --entity-type users --entity-name alice --entity-type clients --entity-name perf"),
		want: "Quota configs for user-principal 'alice', client-id 'perf' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--describe --entity-type ips --entity-name 127.0.0.1"),
		want: "Quota configs for ip '127.0.0.1' are connection_creation_rate=50.0"},
	{args: qargs("--describe --entity-type clients"), unordered: true,
		want: "Quota configs for the default client-id are controller_mutation_rate=10.0, request_percentage=12.5\n" +
			"Quota configs for client-id 'perf' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--describe --entity-type users"),
		want: "Quota configs for the default user-principal are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--describe --entity-type ips"),
		want: "Quota configs for ip '127.0.0.1' are connection_creation_rate=50.0"},
	{args: qargs("--describe --entity-type clients --entity-default"),
		want: "Quota configs for the default client-id are controller_mutation_rate=10.0, request_percentage=12.5"},
	// alice has quotas only together with a client id, and no SCRAM
	// credentials: nothing to print.
	{args: qargs("--describe --entity-type users --entity-name alice"), want: ""},
	{args: qargs("--describe --entity-type users --entity-name nobody"), want: ""},
	{args: qargs("--alter --delete-config consumer_byte_rate --entity-type clients --entity-name perf"),
		want: "Completed updating config for client perf."},
	{args: qargs("--describe --entity-type clients --entity-name perf"),
		want: "Quota configs for client-id 'perf' are producer_byte_rate=1048576.0"},
	{args: qargs("--alter --delete-config consumer_byte_rate --entity-type clients --entity-name perf"), fails: true,
		want: "Invalid config(s): consumer_byte_rate"},
	{args: qargs("--alter --add-config unknown_quota=5 --entity-type clients --entity-name perf"), fails: true,
		want: "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: Set(unknown_quota)"},
	{args: qargs("--alter --add-config producer_byte_rate=10 --entity-type ips --entity-name 127.0.0.1 --entity-type clients --entity-name perf"), fails: true,
		want: "Only 'users' and 'clients' entity types may be specified together"},
	{args: qargs("--alter --add-config producer_byte_rate=abc --entity-type clients --entity-name perf"), fails: true,
		want: "Cannot parse quota configuration value for producer_byte_rate: abc"},
	{args: qargs("--alter --add-config producer_byte_rate=10.5 --entity-type clients --entity-name perf"), fails: true,
		want: "Error while executing config command with args '--bootstrap-server BOOTSTRAP --alter --add-config producer_byte_rate=10.5 --entity-type clients --entity-name perf'\n" +
			"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: producer_byte_rate cannot be a fractional value.\n" +
			"Caused by: org.apache.kafka.common.errors.InvalidRequestException: producer_byte_rate cannot be a fractional value."},
	{args: qargs("--alter --add-config producer_byte_rate=-1 --entity-type clients --entity-name perf"), fails: true,
		want: "Error while executing config command with args '--bootstrap-server BOOTSTRAP --alter --add-config producer_byte_rate=-1 --entity-type clients --entity-name perf'\n" +
			"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Quota producer_byte_rate must be greater than 0\n" +
			"Caused by: org.apache.kafka.common.errors.InvalidRequestException: Quota producer_byte_rate must be greater than 0"},
	{args: qargs("--alter --add-config connection_creation_rate=5 --entity-type clients --entity-name perf"), fails: true,
		want: "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: Set(connection_creation_rate)"},
	{args: qargs("--alter --add-config producer_byte_rate=10 --entity-type ips --entity-name not.a.host.invalid"), fails: true,
		want: "The entity name for ips must be a valid IP or resolvable host, but it is: not.a.host.invalid"},
	{args: qargs("--alter --add-config connection_creation_rate=2.5 --entity-type ips --entity-name 127.0.0.1"), fails: true,
		want: "Error while executing config command with args '--bootstrap-server BOOTSTRAP --alter --add-config connection_creation_rate=2.5 --entity-type ips --entity-name 127.0.0.1'\n" +
			"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: connection_creation_rate cannot be a fractional value.\n" +
			"Caused by: org.apache.kafka.common.errors.InvalidRequestException: connection_creation_rate cannot be a fractional value."},
	{args: qargs("--alter --add-config connection_creation_rate=3000000000 --entity-type ips --entity-name 127.0.0.1"), fails: true,
		want: "Error while executing config command with args '--bootstrap-server BOOTSTRAP --alter --add-config connection_creation_rate=3000000000 --entity-type ips --entity-name 127.0.0.1'\n" +
			"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Proposed value for connection_creation_rate is too large for an INT.\n" +
			"Caused by: org.apache.kafka.common.errors.InvalidRequestException: Proposed value for connection_creation_rate is too large for an INT."},
	{args: qargs("--alter --add-config request_percentage=0 --entity-type users --entity-name bob"), fails: true,
		want: "Error while executing config command with args '--bootstrap-server BOOTSTRAP --alter --add-config request_percentage=0 --entity-type users --entity-name bob'\n" +
			"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Quota request_percentage must be greater than 0\n" +
			"Caused by: org.apache.kafka.common.errors.InvalidRequestException: Quota request_percentage must be greater than 0"},
	{args: qargs("--alter --add-config connection_creation_rate=5 --entity-type ips --entity-default"),
		want: "Completed updating default config for ips in the cluster."},
	{args: qargs("--describe --entity-type ips --entity-default"),
		want: "Quota configs for the default ip are connection_creation_rate=5.0"},
	{args: qargs("--alter --add-config consumer_byte_rate=4096 --entity-type users --entity-name bob --entity-type clients --entity-default"),
		want: "Completed updating config for user bob."},
	{args: qargs("--describe --entity-type users --entity-type clients"), unordered: true,
		want: "Quota configs for user-principal 'bob', the default client-id are consumer_byte_rate=4096.0\n" +
			"Quota configs for user-principal 'alice', client-id 'perf' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
	{args: qargs("--alter --delete-config producer_byte_rate,consumer_byte_rate --entity-type users --entity-name alice --entity-type clients --entity-name perf"),
		want: "Completed updating config for user alice."},
	{args: qargs("--describe --entity-type users --entity-type clients"),
		want: "Quota configs for user-principal 'bob', the default client-id are consumer_byte_rate=4096.0"},
	{args: qargs("--describe --entity-type ips"), unordered: true,
		want: "Quota configs for ip '127.0.0.1' are connection_creation_rate=50.0\n" +
			"Quota configs for the default ip are connection_creation_rate=5.0"},
}

// javaQuotasConfigsRow is the kafka-configs-quotas row.
func javaQuotasConfigsRow() row {
	return javaRow("kafka-configs-quotas", 5*time.Minute, runQuotasConfigs)
}

// runQuotasConfigs runs quotaSteps against sluice and, with
// SLUICE_QUOTAS_KAFKA=1, against a Kafka 4.4.0 node first.
func runQuotasConfigs(ctx context.Context, env *rowEnv) error {
	if os.Getenv("SLUICE_QUOTAS_KAFKA") == "1" {
		out, err := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "kafkatools", "fetch.sh"), keysetKafkaVersion).Output()
		if err != nil {
			return fmt.Errorf("compat/kafkatools/fetch.sh %s: %w", keysetKafkaVersion, err)
		}
		libs := strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))
		kafka, err := startKafka44(ctx, env, libs)
		if err != nil {
			return err
		}
		err = runQuotaSteps(ctx, env, kafka.addr)
		kafka.stop()
		if err != nil {
			return fmt.Errorf("Kafka %s: %w", keysetKafkaVersion, err)
		}
		env.t.Logf("Kafka %s prints the expected output for all %d steps", keysetKafkaVersion, len(quotaSteps))
	}
	if err := runQuotaSteps(ctx, env, env.broker.addr); err != nil {
		return err
	}
	env.t.Logf("sluice: %d kafka-configs.sh steps as Kafka prints them", len(quotaSteps))
	return nil
}

func runQuotaSteps(ctx context.Context, env *rowEnv, addr string) error {
	for i, s := range quotaSteps {
		stdout, stderr, err := kafkaToolOutput(ctx, env, nil, "kafka-configs.sh", append([]string{"--bootstrap-server", addr}, s.args...)...)
		if err != nil && strings.Contains(err.Error(), "no exit within") {
			return err
		}
		got := normalizeToolOutput(stdout+"\n"+stderr, addr)
		want := s.want
		if s.unordered {
			got, want = sortedLines(got), sortedLines(want)
		}
		if failed := err != nil; failed != s.fails || got != want {
			return fmt.Errorf("step %d: kafka-configs.sh %s: exit ok=%v, printed\n%s\nwant exit ok=%v and\n%s",
				i+1, strings.Join(s.args, " "), err == nil, got, !s.fails, want)
		}
	}
	return nil
}

// normalizeToolOutput drops stack-trace and empty lines and names the
// bootstrap address BOOTSTRAP.
func normalizeToolOutput(out, addr string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "\tat ") || strings.HasPrefix(strings.TrimSpace(l), "... ") {
			continue
		}
		lines = append(lines, strings.ReplaceAll(l, addr, "BOOTSTRAP"))
	}
	return strings.Join(lines, "\n")
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestCompatQuotasConfigs runs the kafka-configs-quotas row alone, the way
// TestCompat runs each of its rows.
func TestCompatQuotasConfigs(t *testing.T) {
	if os.Getenv("SLUICE_COMPAT") != "1" {
		t.Skip("set SLUICE_COMPAT=1 to run the compat rows (builds ./cmd/sluice; needs java)")
	}
	root, logDir := compatDirs(t)
	bin := compatBroker(t, root, logDir)
	r := javaQuotasConfigsRow()
	res := runRow(t, r, bin, root, filepath.Join(logDir, r.name))
	fmt.Printf("compat row: %s\n", res)
}
