package compat

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature levels (KIP-584) as Kafka 4.4's kafka-features.sh
// (org.apache.kafka.tools.FeatureCommand, from the 4.4.0 jars that
// `compat/kafkatools/fetch.sh 4.4.0` keeps) sees them on sluice:
//
//   - kafka-features: one node. describe, compared with what Kafka 4.4.0
//     prints (kafka44FeaturesDescribe) where the two must agree: the line
//     format, metadata.version's range and level printed as release names,
//     kraft.version's, group.version's and share.version's ranges, one
//     epoch for every line, no feature Kafka 4.4 does not have, and every
//     feature sluice lists
//     finalized at its supported max on a new cluster. Then a downgrade
//     of group.version that survives a restart, the upgrade back, and an
//     upgrade of share.version above the supported max (3, as on Kafka
//     4.4) refused with Kafka's message, so a client is never told to use
//     it.
//   - kafka-features-rf3: three nodes. group.version disabled through
//     one node is reported by every node's ApiVersions, describe on
//     another node shows it, and the upgrade back through a third node
//     too.
//
// Where sluice's describe differs from Kafka 4.4.0's, by design
// (controller/features.go): transaction.version's max is sluice's (1 until
// transactions v2 are built), eligible.leader.replicas.version and
// streams.version are listed only once built, and kraft.version is finalized at 1 (the voter set lives in the metadata log,
// as with a Kafka quorum formatted with --standalone; a Kafka node formatted
// with static controller.quorum.voters, as below, reports 0).

// kafka44FeaturesDescribe is `kafka-features.sh describe` of a new Kafka
// 4.4.0 node formatted with static controller.quorum.voters (the node
// startKafka44 starts), as printed on 2026-12-02, its epoch (25, the
// metadata offset) replaced by N. Kafka 4.4.0's own answers to the
// upgrades the rows make read the same as sluice's: "group.version was
// downgraded to 0.", "group.version was upgraded to 1.", "group.version
// was disabled.", and "Could not upgrade foo.version to 1. The update
// failed for all features since the following feature had an error:
// Invalid update version 1 for feature foo.version. Local controller 1
// does not support this feature." with exit status 1.
const kafka44FeaturesDescribe = `Feature: eligible.leader.replicas.version          SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: N
Feature: group.version                             SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: N
Feature: kraft.version                             SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 0                Epoch: N
Feature: metadata.version                          SupportedMinVersion: 3.3-IV3          SupportedMaxVersion: 4.4-IV2          FinalizedVersionLevel: 4.4-IV2          Epoch: N
Feature: share.version                             SupportedMinVersion: 0                SupportedMaxVersion: 2                FinalizedVersionLevel: 2                Epoch: N
Feature: streams.version                           SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: N
Feature: transaction.version                       SupportedMinVersion: 0                SupportedMaxVersion: 2                FinalizedVersionLevel: 2                Epoch: N
`

func javaFeaturesRow() row {
	return javaRow("kafka-features", 2*time.Minute, runJavaFeatures)
}

func javaFeaturesRF3Row() row {
	return javaClusterRow("kafka-features-rf3", 3*time.Minute, runJavaFeaturesRF3)
}

// featureLine is one line of `kafka-features.sh describe`.
type featureLine struct {
	min, max, finalized, epoch string
}

var featureLinePattern = regexp.MustCompile(`^Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)$`)

// parseFeatures reads describe's output: one line per feature, every line
// in the format FeatureCommand prints.
func parseFeatures(out string) (map[string]featureLine, error) {
	features := map[string]featureLine{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := featureLinePattern.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			return nil, fmt.Errorf("describe printed %q, not a Feature line", line)
		}
		if _, ok := features[m[1]]; ok {
			return nil, fmt.Errorf("describe lists %s twice", m[1])
		}
		features[m[1]] = featureLine{m[2], m[3], m[4], m[5]}
	}
	if len(features) == 0 {
		return nil, fmt.Errorf("describe printed no feature")
	}
	return features, nil
}

// checkFeaturesLikeKafka44 compares sluice's describe with Kafka 4.4.0's
// where they must agree (see the file comment).
func checkFeaturesLikeKafka44(sluice map[string]featureLine) error {
	kafka, err := parseFeatures(kafka44FeaturesDescribe)
	if err != nil {
		return fmt.Errorf("kafka44FeaturesDescribe: %w", err)
	}
	epoch := ""
	for name, f := range sluice {
		k, ok := kafka[name]
		if !ok {
			return fmt.Errorf("describe lists %s, which Kafka 4.4.0 does not have", name)
		}
		if epoch == "" {
			epoch = f.epoch
		}
		if f.epoch != epoch {
			return fmt.Errorf("describe prints epoch %s for %s and %s for another feature", f.epoch, name, epoch)
		}
		if f.min != k.min {
			return fmt.Errorf("%s: SupportedMinVersion %s, Kafka 4.4.0 %s", name, f.min, k.min)
		}
		switch name {
		case "kraft.version":
			if f.max != k.max || f.finalized != "1" {
				return fmt.Errorf("kraft.version: max %s finalized %s, want %s and 1", f.max, f.finalized, k.max)
			}
			continue
		case "metadata.version", "group.version", "share.version":
			if f.max != k.max {
				return fmt.Errorf("%s: SupportedMaxVersion %s, Kafka 4.4.0 %s", name, f.max, k.max)
			}
		}
		// A new cluster finalizes every feature at its supported max,
		// as Kafka formats one at the release's defaults.
		if f.finalized != f.max {
			return fmt.Errorf("%s: FinalizedVersionLevel %s on a new cluster, want the supported max %s", name, f.finalized, f.max)
		}
	}
	if n, err := strconv.ParseInt(epoch, 10, 64); err != nil || n < 0 {
		return fmt.Errorf("describe prints epoch %q, want a metadata offset", epoch)
	}
	for _, name := range []string{"metadata.version", "kraft.version", "group.version", "transaction.version"} {
		if _, ok := sluice[name]; !ok {
			return fmt.Errorf("describe does not list %s", name)
		}
	}
	return nil
}

// describeFeatures runs `kafka-features.sh describe` against addr.
func describeFeatures(ctx context.Context, env *rowEnv, libs, addr string) (map[string]featureLine, error) {
	out, err := kafka44Tool(ctx, env, libs, "kafka-features.sh", "--bootstrap-server", addr, "describe")
	if err != nil {
		return nil, err
	}
	return parseFeatures(out)
}

// featuresTool runs kafka-features.sh with args against addr and checks
// that stdout has want.
func featuresTool(ctx context.Context, env *rowEnv, libs, addr, want string, args ...string) error {
	out, err := kafka44Tool(ctx, env, libs, "kafka-features.sh", append([]string{"--bootstrap-server", addr}, args...)...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, want) {
		return fmt.Errorf("kafka-features.sh %s printed %q, want %q", strings.Join(args, " "), strings.TrimSpace(out), want)
	}
	return nil
}

// fetchKafka44 fetches (or finds cached) Kafka 4.4.0's jars and returns
// their directory.
func fetchKafka44(ctx context.Context, env *rowEnv) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "kafkatools", "fetch.sh"), keysetKafkaVersion).Output()
	if err != nil {
		return "", fmt.Errorf("compat/kafkatools/fetch.sh %s: %w", keysetKafkaVersion, err)
	}
	return strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:])), nil
}

func runJavaFeatures(ctx context.Context, env *rowEnv) error {
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	addr := env.broker.addr
	features, err := describeFeatures(ctx, env, libs, addr)
	if err != nil {
		return err
	}
	if err := checkFeaturesLikeKafka44(features); err != nil {
		return err
	}

	if err := featuresTool(ctx, env, libs, addr, "group.version was downgraded to 0.", "downgrade", "--feature", "group.version=0"); err != nil {
		return err
	}
	if err := env.restartNode(ctx, env.broker.id); err != nil {
		return err
	}
	addr = env.broker.addr
	features, err = describeFeatures(ctx, env, libs, addr)
	if err != nil {
		return fmt.Errorf("after the restart: %w", err)
	}
	if f := features["group.version"]; f.finalized != "0" || f.max != "1" {
		return fmt.Errorf("after a downgrade and a restart group.version is %+v, want finalized 0 of 0-1", f)
	}
	if err := featuresTool(ctx, env, libs, addr, "group.version was upgraded to 1.", "upgrade", "--feature", "group.version=1"); err != nil {
		return err
	}

	// A level above the supported max cannot be finalized: Kafka's
	// message, and the tool fails.
	out, err := kafka44Tool(ctx, env, libs, "kafka-features.sh", "--bootstrap-server", addr, "upgrade", "--feature", "share.version=3")
	want := "Could not upgrade share.version to 3."
	if err == nil || !strings.Contains(out+err.Error(), want) || !strings.Contains(out+err.Error(), "only supports versions 0-2") {
		return fmt.Errorf("upgrade share.version=3: err %v, output %q; want a failure saying %q ... only supports versions 0-2", err, strings.TrimSpace(out), want)
	}
	return nil
}

// finalizedOn returns the finalized level of feature (0 when not listed)
// that node addr reports in ApiVersions.
func finalizedOn(ctx context.Context, addr, feature string) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-compat", "1"
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return 0, err
	}
	for _, f := range kresp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == feature {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// waitFinalizedEverywhere waits until every node reports feature at level.
func waitFinalizedEverywhere(ctx context.Context, env *rowEnv, feature string, level int16) error {
	for _, n := range env.nodes {
		err := pollUntil(ctx, 20*time.Second, func() error {
			got, err := finalizedOn(ctx, n.addr, feature)
			if err == nil && got != level {
				err = fmt.Errorf("node %d reports %s at %d, want %d", n.id, feature, got, level)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func runJavaFeaturesRF3(ctx context.Context, env *rowEnv) error {
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	if len(env.nodes) != 3 {
		return fmt.Errorf("the row has %d nodes, want 3", len(env.nodes))
	}
	if err := featuresTool(ctx, env, libs, env.nodes[1].addr, "group.version was disabled.", "disable", "--feature", "group.version"); err != nil {
		return err
	}
	if err := waitFinalizedEverywhere(ctx, env, "group.version", 0); err != nil {
		return err
	}
	features, err := describeFeatures(ctx, env, libs, env.nodes[2].addr)
	if err != nil {
		return err
	}
	if f := features["group.version"]; f.finalized != "0" {
		return fmt.Errorf("node %d describes group.version as %+v after disabling it through node %d", env.nodes[2].id, f, env.nodes[1].id)
	}
	if err := featuresTool(ctx, env, libs, env.nodes[2].addr, "group.version was upgraded to 1.", "upgrade", "--feature", "group.version=1"); err != nil {
		return err
	}
	return waitFinalizedEverywhere(ctx, env, "group.version", 1)
}

// TestFeaturesDescribeChecks runs the describe checks on canned output;
// it needs neither a broker nor Java.
func TestFeaturesDescribeChecks(t *testing.T) {
	sluice := `Feature: group.version                     SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: 5
Feature: kraft.version                     SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: 5
Feature: metadata.version                  SupportedMinVersion: 3.3-IV3          SupportedMaxVersion: 4.4-IV2          FinalizedVersionLevel: 4.4-IV2          Epoch: 5
Feature: transaction.version               SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: 5
`
	features, err := parseFeatures(sluice)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFeaturesLikeKafka44(features); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ from, to string }{
		{"Epoch: 5\nFeature: kraft", "Epoch: 6\nFeature: kraft"},
		{"group.version                     SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1",
			"group.version                     SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 0"},
		{"SupportedMaxVersion: 4.4-IV2", "SupportedMaxVersion: 4.3-IV0"},
		{"transaction.version", "foo.version"},
	} {
		f, err := parseFeatures(strings.Replace(sluice, bad.from, bad.to, 1))
		if err == nil {
			err = checkFeaturesLikeKafka44(f)
		}
		if err == nil {
			t.Errorf("%q -> %q passed the checks", bad.from, bad.to)
		}
	}
}
