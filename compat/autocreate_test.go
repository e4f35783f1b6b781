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
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The auto-create row: every client in reach produces to a topic that does
// not exist and lets the broker create it. sluice answers the Metadata
// request that creates a topic UNKNOWN_TOPIC_OR_PARTITION without
// partitions, as Kafka 4.x does (broker/03_metadata.go), so each client
// must take that answer as "ask again" and deliver once the topic shows.

const (
	autoCreatePartitions = 2 // the row's num.partitions
	autoCreateRecords    = 3 // records each client produces
)

func autoCreateRow() row {
	return row{
		name:      "auto-create",
		tools:     []string{"kcat", "java", pythonInterpreter(), wheelPython()},
		timeout:   3 * time.Minute,
		overrides: []string{fmt.Sprintf("num.partitions=%d", autoCreatePartitions)},
		run:       runAutoCreate,
	}
}

// autoCreateValue is record i of the client named who.
func autoCreateValue(who string, i int) string { return fmt.Sprintf("%s-%d", who, i) }

// autoCreateProducers are the clients of the row, each producing
// autoCreateRecords values to topic, a topic that does not exist yet.
var autoCreateProducers = []struct {
	who     string
	produce func(ctx context.Context, env *rowEnv, topic string, values []string) error
}{
	{"franz-go", produceAutoFranz},
	{"kcat", produceAutoKcat},
	{"java", produceAutoJava},
	{"python", produceAutoPython(pythonInterpreter())},
	{"python-wheel", produceAutoPython(wheelPython())},
}

// runAutoCreate has each client produce to its own new topic, then checks
// with franz-go that the topic was created with the broker's defaults and
// holds exactly the client's records.
func runAutoCreate(ctx context.Context, env *rowEnv) error {
	if _, err := os.Stat(filepath.Join(kafkaLibsDir(), ".complete")); err != nil {
		return fmt.Errorf("Kafka %s's jars are not in %s (a missing tool fails the row): run compat/kafkatools/fetch.sh", kafkaVersion, kafkaLibsDir())
	}
	if err := requireConfluentKafka(ctx); err != nil {
		return err
	}
	admCl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer admCl.Close()
	for _, p := range autoCreateProducers {
		topic := "compat-auto-" + p.who
		values := make([]string, autoCreateRecords)
		for i := range values {
			values[i] = autoCreateValue(p.who, i)
		}
		start := time.Now()
		if err := p.produce(ctx, env, topic, values); err != nil {
			return fmt.Errorf("%s producing to the new topic %s: %w", p.who, topic, err)
		}
		env.t.Logf("%s: produced to the new topic %s in %.1fs", p.who, topic, time.Since(start).Seconds())
		if _, err := waitTopic(ctx, adm, topic, autoCreatePartitions); err != nil {
			return fmt.Errorf("%s: %w", p.who, err)
		}
		recs, err := consumeAll(ctx, env, topic, autoCreatePartitions)
		if err != nil {
			return fmt.Errorf("%s: %w", p.who, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		slices.Sort(got)
		if !slices.Equal(got, values) {
			return fmt.Errorf("%s: topic %s holds %q, want %q", p.who, topic, got, values)
		}
	}
	return nil
}

// produceAutoFranz produces with franz-go, which asks for auto-creation
// only when told to.
func produceAutoFranz(ctx context.Context, env *rowEnv, topic string, values []string) error {
	log, err := os.Create(filepath.Join(env.dir, topic+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.broker.addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.WithLogger(kgo.BasicLogger(log, kgo.LogLevelDebug, nil)))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, kgo.StringRecord(v))
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// produceAutoKcat produces with `kcat -P` (librdkafka, whose producer asks
// for auto-creation by default).
func produceAutoKcat(ctx context.Context, env *rowEnv, topic string, values []string) error {
	cmd := exec.CommandContext(ctx, "kcat", "-P", "-b", env.broker.addr, "-t", topic)
	cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(env.dir, "kcat-produce.log"), out, 0o644)
	if err != nil {
		return fmt.Errorf("kcat -P: %v: %s", err, firstLine(string(out)))
	}
	if bad := kcatErrorLine(out); bad != "" {
		return fmt.Errorf("kcat -P: %s", bad)
	}
	return nil
}

// produceAutoJava produces with Kafka's console producer.
func produceAutoJava(ctx context.Context, env *rowEnv, topic string, values []string) error {
	_, err := kafkaTool(ctx, env, strings.NewReader(strings.Join(values, "\n")+"\n"), "kafka-console-producer.sh",
		"--bootstrap-server", env.broker.addr, "--topic", topic)
	return err
}

// autoCreatePython produces argv[3:] to topic argv[2] with confluent-kafka
// and exits non-zero unless every record was delivered.
const autoCreatePython = `import sys
from confluent_kafka import Producer
delivered, failed = [], []
def report(err, msg):
    (failed if err else delivered).append(err or msg.value())
p = Producer({"bootstrap.servers": sys.argv[1]})
for v in sys.argv[3:]:
    p.produce(sys.argv[2], v.encode(), callback=report)
left = p.flush(60)
print("delivered %d, failed %s, left %d" % (len(delivered), failed, left))
sys.exit(0 if len(delivered) == len(sys.argv) - 3 and not failed and left == 0 else 1)
`

// produceAutoPython produces with the confluent-kafka of python: Debian's
// (librdkafka 2.0.2) or the newest wheel's (see wheelPython).
func produceAutoPython(python string) func(ctx context.Context, env *rowEnv, topic string, values []string) error {
	return func(ctx context.Context, env *rowEnv, topic string, values []string) error {
		cmd := exec.CommandContext(ctx, python, append([]string{"-c", autoCreatePython, env.broker.addr, topic}, values...)...)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		_ = os.WriteFile(filepath.Join(env.dir, topic+".log"), out.Bytes(), 0o644)
		if err != nil {
			return fmt.Errorf("%s: %v: %s", python, err, lastLine(out.String()))
		}
		return nil
	}
}
