package controller

import (
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Feature levels in the state machine: set, removed at 0, bootstrapped
// once, and carried through a snapshot.
func TestFSMUpdateFeatures(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	tf.mustApply(updateFeaturesCmd{Levels: defaultFeatureLevels(), Bootstrap: true})
	if got := tf.image().Features; !maps.Equal(got, defaultFeatureLevels()) {
		t.Fatalf("bootstrapped features %v, want %v", got, defaultFeatureLevels())
	}
	boot := tf.image()
	// A second bootstrap (a controller that raced the first) changes
	// nothing.
	err := tf.apply(updateFeaturesCmd{Levels: map[string]int16{FeatureGroupVersion: 0, FeatureMetadataVersion: 20}, Bootstrap: true})
	wantKafkaErr(t, err, kerr.InvalidUpdateVersion)
	if !maps.Equal(tf.image().Features, boot.Features) {
		t.Fatalf("second bootstrap changed the levels to %v", tf.image().Features)
	}
	tf.mustApply(updateFeaturesCmd{Levels: map[string]int16{FeatureGroupVersion: 0, FeatureTransactionVersion: 1}})
	got := tf.image().Features
	if _, ok := got[FeatureGroupVersion]; ok || got[FeatureTransactionVersion] != 1 || got[FeatureMetadataVersion] != 33 {
		t.Fatalf("features after update %v: want group.version removed, transaction.version 1, metadata.version 33", got)
	}
	if boot.Features[FeatureGroupVersion] != 1 {
		t.Fatal("an update modified an earlier image's feature map")
	}

	snap, err := tf.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	f := newFSM(nil)
	if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(f.current().Features, got) {
		t.Fatalf("restored features %v, want %v", f.current().Features, got)
	}
}

// The finalized levels ApiVersions reports: nothing with an unknown epoch
// before the bootstrap, then every level above 0 and kraft.version.
func TestFinalizedFeatures(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	if levels, epoch := FinalizedFeatures(tf.image()); levels != nil || epoch != -1 {
		t.Fatalf("before bootstrap: %v epoch %d, want nothing at -1", levels, epoch)
	}
	tf.mustApply(updateFeaturesCmd{Levels: defaultFeatureLevels(), Bootstrap: true})
	levels, epoch := FinalizedFeatures(tf.image())
	// Every feature supported above 0 at its max (the table changes as
	// features are built), kraft.version at the quorum's 1.
	want := map[string]int16{}
	for _, f := range supportedFeatures {
		if f.Max > 0 {
			want[f.Name] = f.Max
		}
	}
	if want[FeatureMetadataVersion] != 33 || want[FeatureKRaftVersion] != 1 || want[FeatureGroupVersion] != 1 {
		t.Fatalf("supported maxima %v: metadata.version 33, kraft.version 1, group.version 1 expected", want)
	}
	if !maps.Equal(levels, want) || epoch != int64(tf.image().Index) {
		t.Fatalf("finalized %v epoch %d, want %v at %d", levels, epoch, want, tf.image().Index)
	}
	for _, f := range SupportedFeatures() {
		if f.Max == 0 {
			t.Fatalf("SupportedFeatures lists %s at max 0", f.Name)
		}
	}
}

// UpdateFeatures' checks, with Kafka 4.4's messages.
func TestCheckFeatureUpdate(t *testing.T) {
	img := emptyImage()
	img.Features = defaultFeatureLevels()
	img.Features[FeatureTransactionVersion] = 1
	delete(img.Features, FeatureGroupVersion)
	for _, tc := range []struct {
		name  string
		u     FeatureUpdate
		write bool
		msg   string // "" for success
	}{
		{"upgrade to the same level", FeatureUpdate{FeatureTransactionVersion, 1, UpgradeUpgrade}, true, ""},
		{"upgrade", FeatureUpdate{FeatureGroupVersion, 1, UpgradeUpgrade}, true, ""},
		{"unknown upgrade type", FeatureUpdate{FeatureGroupVersion, 1, 7},
			false, "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{"negative level", FeatureUpdate{FeatureGroupVersion, -1, UpgradeSafeDowngrade},
			false, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{"unknown feature", FeatureUpdate{"foo.version", 1, UpgradeUpgrade},
			false, "Invalid update version 1 for feature foo.version. Local controller 3 does not support this feature."},
		{"unknown feature at 0", FeatureUpdate{"foo.version", 0, UpgradeUpgrade},
			false, "Invalid update version 0 for feature foo.version. Feature foo.version not found."},
		{"above the supported max", FeatureUpdate{FeatureTransactionVersion, 9, UpgradeUpgrade},
			false, "Invalid update version 9 for feature transaction.version. Local controller 3 only supports versions 0-"},
		{"share.version above sluice's max", FeatureUpdate{FeatureShareVersion, 3, UpgradeUpgrade},
			false, "Invalid update version 3 for feature share.version. Local controller 3 only supports versions 0-2"},
		{"downgrade without a downgrade type", FeatureUpdate{FeatureTransactionVersion, 0, UpgradeUpgrade},
			false, "Invalid update version 0 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"safe downgrade", FeatureUpdate{FeatureTransactionVersion, 0, UpgradeSafeDowngrade}, true, ""},
		{"unsafe downgrade", FeatureUpdate{FeatureTransactionVersion, 0, UpgradeUnsafeDowngrade}, true, ""},
		{"upgrade with a downgrade type", FeatureUpdate{FeatureGroupVersion, 1, UpgradeSafeDowngrade},
			false, "Invalid update version 1 for feature group.version. Can't downgrade to a newer version."},
		{"metadata.version below the minimum", FeatureUpdate{FeatureMetadataVersion, 6, UpgradeSafeDowngrade},
			false, "Invalid update version 6 for feature metadata.version. Local controller 3 only supports versions 7-33"},
		{"metadata.version downgrade across a change", FeatureUpdate{FeatureMetadataVersion, 32, UpgradeSafeDowngrade},
			false, "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata.version unsafe downgrade", FeatureUpdate{FeatureMetadataVersion, 32, UpgradeUnsafeDowngrade},
			false, "Unsupported metadata.version downgrade from 33 to 32. Unsafe metadata downgrade is not supported in this version."},
		{"kraft.version downgrade", FeatureUpdate{FeatureKRaftVersion, 0, UpgradeSafeDowngrade},
			false, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"kraft.version at its level", FeatureUpdate{FeatureKRaftVersion, 1, UpgradeUpgrade}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proposed := maps.Clone(img.Features)
			proposed[tc.u.Feature] = tc.u.Level
			write, err := checkFeatureUpdate(img, tc.u, proposed, 3)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.msg != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.msg)):
				t.Fatalf("error %v, want %q", err, tc.msg)
			case err == nil && write != tc.write:
				t.Fatalf("write %v, want %v", write, tc.write)
			}
		})
	}

	// A safe metadata.version downgrade between levels whose records did
	// not change is allowed (4.2-IV1 to 4.2-IV0).
	img.Features[FeatureMetadataVersion] = 29
	if err := checkMetadataVersion(29, FeatureUpdate{FeatureMetadataVersion, 28, UpgradeSafeDowngrade}); err != nil {
		t.Fatalf("4.2-IV1 to 4.2-IV0: %v", err)
	}
	// A level's dependency: ELR 1 needs metadata.version 23.
	if err := checkDependencies(FeatureUpdate{FeatureELRVersion, 1, UpgradeUpgrade}, map[string]int16{FeatureMetadataVersion: 22}); err == nil ||
		err.Error() != "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version=23 (4.0-IV1)" {
		t.Fatalf("ELR 1 at metadata.version 22: %v", err)
	}
}

// TestFeatureUpdateOrder: JavaHashMapOrder orders updates as java.util.HashMap does; Kafka checks the updates of
// one request in this order, so the first failing one it names is the
// one sluice names. The want order is what Java 17 prints for a HashMap
// filled with these names in this order.
func TestFeatureUpdateOrder(t *testing.T) {
	names := []string{"group.version", "transaction.version", "metadata.version", "share.version",
		"foo.version", "eligible.leader.replicas.version", "kraft.version", "streams.version"}
	want := []string{"group.version", "kraft.version", "metadata.version", "share.version",
		"streams.version", "transaction.version", "eligible.leader.replicas.version", "foo.version"}
	if got := JavaHashMapOrder(names); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestFeaturesReopenFromSnapshotAndLog: a new cluster starts at the
// defaults; levels set before a raft snapshot come back from the
// snapshot, levels set after it from the log, and a reopened controller
// does not bootstrap again.
func TestFeaturesReopenFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	if got := c.Image().Features; !maps.Equal(got, defaultFeatureLevels()) {
		t.Fatalf("new cluster at %v, want the defaults %v", got, defaultFeatureLevels())
	}
	update := func(name string, level int16, typ UpgradeType) {
		t.Helper()
		if err := c.UpdateFeatures(ctx, []FeatureUpdate{{name, level, typ}}, false); err != nil {
			t.Fatal(err)
		}
	}
	update(FeatureGroupVersion, 0, UpgradeSafeDowngrade)
	if err := c.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	update(FeatureTransactionVersion, 0, UpgradeSafeDowngrade)
	// ValidateOnly and failed requests write nothing.
	if err := c.UpdateFeatures(ctx, []FeatureUpdate{{FeatureTransactionVersion, 1, UpgradeUpgrade}}, true); err != nil {
		t.Fatal(err)
	}
	err := c.UpdateFeatures(ctx, []FeatureUpdate{{FeatureGroupVersion, 1, UpgradeUpgrade}, {"foo.version", 1, UpgradeUpgrade}}, false)
	wantKafkaErr(t, err, kerr.InvalidUpdateVersion)
	want := c.Image().Features
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, _ := openTest(t, cfg)
	got := c2.Image().Features
	if !maps.Equal(got, want) || got[FeatureGroupVersion] != 0 || got[FeatureTransactionVersion] != 0 || got[FeatureMetadataVersion] != 33 {
		t.Fatalf("after reopen %v, want %v (group.version and transaction.version 0)", got, want)
	}
	if levels, _ := FinalizedFeatures(c2.Image()); levels[FeatureTransactionVersion] != 0 {
		t.Fatalf("finalized after reopen %v", levels)
	}
}
