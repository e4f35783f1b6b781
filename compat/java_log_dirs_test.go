package compat

// Several log directories per node (JBOD, KIP-858) with Kafka's tools
// (issue 20): one node with log.dirs=data,data2; kafka-log-dirs.sh
// --describe lists both directories with the topic's partitions spread
// over them, and kafka-reassign-partitions.sh with "log_dirs" in its JSON
// moves a replica from one directory to the other (the tool sends
// AlterReplicaLogDirs itself); --verify reports the replica move complete,
// kafka-log-dirs.sh shows the replica in its new directory, and every
// record reads back.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const jbodTopic = "compat-jbod"

func javaLogDirsJBODRow() row {
	r := javaRow("kafka-log-dirs-jbod", 2*time.Minute, runJavaLogDirsJBOD)
	// The broker runs in the row's directory: relative paths are in it.
	r.overrides = []string{"log.dirs=data,data2"}
	return r
}

// jbodPlacement runs kafka-log-dirs.sh --describe for jbodTopic and returns
// each directory's partitions of it, failing on a directory with an error.
func jbodPlacement(ctx context.Context, env *rowEnv) (map[string][]string, error) {
	out, err := kafkaTool(ctx, env, nil, "kafka-log-dirs.sh", "--bootstrap-server", env.broker.addr, "--describe", "--topic-list", jbodTopic)
	if err != nil {
		return nil, err
	}
	parsed, err := parseLogDirs(out)
	if err != nil {
		return nil, err
	}
	if len(parsed.Brokers) != 1 {
		return nil, fmt.Errorf("kafka-log-dirs.sh: want one broker, got %+v", parsed.Brokers)
	}
	placed := map[string][]string{}
	for _, d := range parsed.Brokers[0].LogDirs {
		if d.Error != nil {
			return nil, fmt.Errorf("kafka-log-dirs.sh: %s has error %s", d.LogDir, *d.Error)
		}
		placed[d.LogDir] = nil
		for _, p := range d.Partitions {
			if p.IsFuture {
				continue
			}
			placed[d.LogDir] = append(placed[d.LogDir], p.Partition)
		}
		slices.Sort(placed[d.LogDir])
	}
	return placed, nil
}

func runJavaLogDirsJBOD(ctx context.Context, env *rowEnv) error {
	data, data2 := filepath.Join(env.dir, "data"), filepath.Join(env.dir, "data2")
	if err := createTopic(ctx, env.broker.addr, jbodTopic, 4); err != nil {
		return err
	}
	cl, _, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()
	for p := int32(0); p < 4; p++ {
		if err := produceTo(ctx, cl, jbodTopic, p, 500, fmt.Sprintf("p%d", p), time.Now()); err != nil {
			return err
		}
	}
	placed, err := jbodPlacement(ctx, env)
	if err != nil {
		return err
	}
	if len(placed) != 2 || len(placed[data]) != 2 || len(placed[data2]) != 2 {
		return fmt.Errorf("kafka-log-dirs.sh placement %v, want two partitions in each of %s and %s", placed, data, data2)
	}

	// Move the first partition of data to data2.
	moved := placed[data][0]
	part := moved[strings.LastIndexByte(moved, '-')+1:]
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%s,"replicas":[%s],"log_dirs":[%q]}]}`,
		jbodTopic, part, javaNodeID, data2)
	planFile := filepath.Join(env.dir, "jbod-plan.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		return err
	}
	if _, err := kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", env.broker.addr,
		"--reassignment-json-file", planFile, "--execute"); err != nil {
		return err
	}
	replica := moved + "-" + javaNodeID
	var last string
	err = pollUntil(ctx, 60*time.Second, func() error {
		out, err := kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", env.broker.addr,
			"--reassignment-json-file", planFile, "--verify")
		if err != nil {
			return err
		}
		last = out
		if !strings.Contains(out, "Reassignment of replica "+replica+" completed successfully.") {
			return fmt.Errorf("--verify does not report the move of %s complete: %q", replica, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.t.Logf("--verify: %s", strings.TrimSpace(last))
	placed, err = jbodPlacement(ctx, env)
	if err != nil {
		return err
	}
	if slices.Contains(placed[data], moved) || !slices.Contains(placed[data2], moved) || len(placed[data2]) != 3 {
		return fmt.Errorf("after the move kafka-log-dirs.sh shows %v, want %s in %s", placed, moved, data2)
	}
	recs, err := consumeAll(ctx, env, jbodTopic, 4)
	if err != nil {
		return err
	}
	if len(recs) != 2000 {
		return fmt.Errorf("read back %d records, want 2000", len(recs))
	}
	return nil
}
