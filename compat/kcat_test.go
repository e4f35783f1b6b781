package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	kcatTopic      = "compat-kcat"
	kcatPartitions = 6
	kcatMessages   = 100_000
	// kcatKeys is how many distinct keys the messages cycle through: enough
	// that every partition gets some, few enough that each key repeats.
	kcatKeys = 1000
)

func kcatRoundTripRow() row {
	return row{
		name:    "kcat",
		tools:   []string{"kcat"},
		timeout: 5 * time.Minute,
		run:     runKcatRoundTrip,
	}
}

// kcatMessage is message i as kcat reads it with -K ':': the key is derived
// from the value, so a message whose key and value do not belong together was
// corrupted or mixed up.
func kcatMessage(i int) (key, value string) {
	return "key-" + strconv.Itoa(i%kcatKeys), fmt.Sprintf("value-%06d", i)
}

// runKcatRoundTrip creates a 6-partition topic with kadm, produces keyed
// messages with `kcat -P -K :`, reads them back with `kcat -C -e` and checks
// that every message came back exactly once, unaltered, each key in a single
// partition, in production order within each partition and at consecutive
// offsets from 0.
func runKcatRoundTrip(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, kcatTopic, kcatPartitions); err != nil {
		return err
	}

	var input bytes.Buffer
	for i := range kcatMessages {
		k, v := kcatMessage(i)
		input.WriteString(k + ":" + v + "\n")
	}
	start := time.Now()
	produce := exec.CommandContext(ctx, "kcat", "-P", "-b", addr, "-t", kcatTopic, "-K", ":")
	produce.Stdin = &input
	if out, err := produce.CombinedOutput(); err != nil {
		return fmt.Errorf("kcat -P: %v: %s", err, firstLine(string(out)))
	} else if bad := kcatErrorLine(out); bad != "" {
		return fmt.Errorf("kcat -P: %s", bad)
	}
	env.t.Logf("kcat -P: %d messages in %.1fs", kcatMessages, time.Since(start).Seconds())

	start = time.Now()
	consume := exec.CommandContext(ctx, "kcat", "-C", "-b", addr, "-t", kcatTopic,
		"-o", "beginning", "-e", "-q", "-f", `%p %o %k %s\n`)
	var stderr bytes.Buffer
	consume.Stderr = &stderr
	out, err := consume.Output()
	if err != nil {
		return fmt.Errorf("kcat -C: %v: %s", err, firstLine(stderr.String()))
	}
	if bad := kcatErrorLine(stderr.Bytes()); bad != "" {
		return fmt.Errorf("kcat -C: %s", bad)
	}
	env.t.Logf("kcat -C: read back in %.1fs", time.Since(start).Seconds())
	return checkKcatOutput(out)
}

// checkKcatOutput verifies lines of "partition offset key value".
func checkKcatOutput(out []byte) error {
	type partState struct {
		nextOffset int64
		lastSeq    int
	}
	parts := make(map[int32]*partState)
	keyPart := make(map[string]int32)
	seen := make([]bool, kcatMessages)
	total := 0
	for n, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		total++
		fields := strings.Fields(line)
		if len(fields) != 4 {
			return fmt.Errorf("output line %d: want partition, offset, key, value; got %q", n+1, line)
		}
		p, err1 := strconv.ParseInt(fields[0], 10, 32)
		o, err2 := strconv.ParseInt(fields[1], 10, 64)
		seq, err3 := strconv.Atoi(strings.TrimPrefix(fields[3], "value-"))
		if err := errors.Join(err1, err2, err3); err != nil || !strings.HasPrefix(fields[3], "value-") || seq < 0 || seq >= kcatMessages {
			return fmt.Errorf("output line %d: cannot parse %q", n+1, line)
		}
		if p < 0 || p >= kcatPartitions {
			return fmt.Errorf("output line %d: partition %d of a %d-partition topic", n+1, p, kcatPartitions)
		}
		key, value := fields[2], fields[3]
		if wantKey, wantValue := kcatMessage(seq); key != wantKey || value != wantValue {
			return fmt.Errorf("partition %d offset %d: key %q value %q, want key %q", p, o, key, value, wantKey)
		}
		if seen[seq] {
			return fmt.Errorf("partition %d offset %d: %s read twice", p, o, value)
		}
		seen[seq] = true
		if prev, ok := keyPart[key]; ok && prev != int32(p) {
			return fmt.Errorf("key %s is in partitions %d and %d", key, prev, p)
		}
		keyPart[key] = int32(p)

		st := parts[int32(p)]
		if st == nil {
			st = &partState{lastSeq: -1}
			parts[int32(p)] = st
		}
		if o != st.nextOffset {
			return fmt.Errorf("partition %d: offset %d after %d, want %d", p, o, st.nextOffset-1, st.nextOffset)
		}
		if seq <= st.lastSeq {
			return fmt.Errorf("partition %d offset %d: %s after value-%06d, out of production order", p, o, value, st.lastSeq)
		}
		st.nextOffset++
		st.lastSeq = seq
	}
	if total != kcatMessages {
		missing := -1
		for i, ok := range seen {
			if !ok {
				missing = i
				break
			}
		}
		return fmt.Errorf("read %d messages back, want %d (first missing: value-%06d)", total, kcatMessages, missing)
	}
	if len(parts) != kcatPartitions {
		return fmt.Errorf("messages landed in %d partitions, want all %d", len(parts), kcatPartitions)
	}
	return nil
}

// kcatErrorLine returns the first line in which kcat reports an error, or "".
// kcat prints errors prefixed with "%" (e.g. "% ERROR: ..." or
// "% Delivery failed ...") and may still exit 0.
func kcatErrorLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		l := strings.ToLower(line)
		if strings.HasPrefix(l, "%") && (strings.Contains(l, "error") || strings.Contains(l, "fail")) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// createTopic creates a topic with replication factor 1 through kadm and
// waits until metadata shows every partition with a leader.
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("kadm CreateTopic %s: %w", topic, err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		details, err := adm.ListTopics(ctx, topic)
		if err == nil {
			err = topicReady(details, topic, partitions)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("topic %s not ready after CreateTopics: %w", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func topicReady(details kadm.TopicDetails, topic string, partitions int32) error {
	d, ok := details[topic]
	if !ok {
		return errors.New("not in metadata")
	}
	if d.Err != nil {
		return d.Err
	}
	if int32(len(d.Partitions)) != partitions {
		return fmt.Errorf("has %d partitions, want %d", len(d.Partitions), partitions)
	}
	for _, p := range d.Partitions {
		if p.Err != nil {
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		if p.Leader < 0 {
			return fmt.Errorf("partition %d has no leader", p.Partition)
		}
	}
	return nil
}
