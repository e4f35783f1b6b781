package controller

// Feature levels (KIP-584): the finalized level of each cluster-wide
// feature lives in the metadata log, as Kafka's FeatureLevelRecord does,
// so every node reports the same levels in ApiVersions and every handler
// that gates a protocol on a feature (broker.featureLevel) sees the same
// answer once its image has the change.
//
// # What sluice supports
//
// supportedFeatures below is the one place that says which levels this
// binary implements; a feature's supported max is what sluice does now,
// never what Kafka 4.4 does:
//
//   - metadata.version 7-33 (3.3-IV3 to 4.4-IV2), Kafka 4.4's production
//     range. In Kafka the level gates record formats of the metadata log
//     and inter-broker protocols, neither of which sluice shares with
//     Kafka (its metadata log is its own), and no client picks a protocol
//     from it; 4.4-IV2 says that this cluster serves Kafka 4.4's client
//     protocol (ApiVersions v5, KIP-1242, is 4.4's), which is what
//     sluice's API table follows. The level is recorded and reported and
//     changed with Kafka's rules; it switches nothing in sluice.
//   - kraft.version 0-1, finalized at 1 and not in the image: sluice's
//     quorum keeps its voter set in the metadata log (hashicorp/raft's
//     configuration entries), which is what kraft.version 1 (KIP-853)
//     means. As in Kafka it is reported from the quorum, not from a
//     FeatureLevelRecord, and cannot be downgraded.
//   - transaction.version 0-2. Level 2 is KIP-890 part 2 (EndTxn v5's
//     epoch bump per transaction, partitions added by the partition
//     leader for Produce v12+ and TxnOffsetCommit v5+; package txn), what
//     Kafka's Java producer and franz-go switch on when it is finalized.
//     sluice serves both protocols at every level, as Kafka does: the
//     level only tells clients which one to use.
//   - group.version 0-1: KIP-848 consumer groups exist.
//   - eligible.leader.replicas.version 0-1: KIP-966's eligible leader
//     replicas (elr.go; level 1 needs metadata.version 23, 4.0-IV1), on
//     by default as on a new Kafka cluster since 4.1.
//   - share.version 0-2: KIP-932 share groups (groups/share*.go, package
//     share, the share coordinator on __share_group_state) at level 1;
//     level 2 adds the share-group dead-letter queue (KIP-1191,
//     broker/share_dlq.go), as Kafka 4.4's SV_2. Bootstrapped at 2, as
//     Kafka 4.4 formats a new cluster.
//   - streams.version 0-1: KIP-1071 streams groups (groups/streams*.go),
//     on by default as on a new Kafka 4.4 cluster.
//
// A feature whose supported max is 0 is not listed in ApiVersions'
// SupportedFeatures, as Kafka's BrokerFeatures leaves out every feature
// whose latest production level is 0, and so kafka-features.sh describe
// does not list it either; it cannot be finalized above 0.
//
// # Defaults
//
// Kafka formats a new cluster with the release's default levels
// (kafka-storage format). sluice has no format step: the first active
// controller writes InitCluster and then, in the same leadership
// establishment and before any broker registers, one UpdateFeatures
// command with the defaults of this binary (bootstrapFeatures): every
// supported feature at its supported max. A data dir whose log predates
// feature levels (no metadata.version in the image) gets the same
// bootstrap command from the first controller running this binary, so
// an existing cluster comes up at this release's defaults, which are what
// it already served. The bootstrap command is applied only while the
// image has no metadata.version, so two controllers racing to write it
// change nothing twice. Later binaries that raise a supported max do not
// raise a finalized level of an existing cluster: an operator does, with
// kafka-features.sh upgrade, as with Kafka. A node still running a binary
// older than feature levels stops at the bootstrap entry, as at any
// command type it does not know (fsm.go), and runs again once upgraded:
// upgrade every node of such a cluster, not some of them.
//
// # Validation
//
// UpdateFeatures follows Kafka 4.4's FeatureControlManager: updates are
// checked in the order Kafka's HashMap of them iterates, the first
// failure fails the whole request (INVALID_UPDATE_VERSION with Kafka's
// message, prefixed as QuorumController prefixes it) and nothing is
// written; ValidateOnly checks and writes nothing. Kafka also checks
// every registered broker's and controller's supported range; sluice
// brokers do not register supported features, so only this binary's
// table is checked (every node of a cluster is expected to run the same
// binary; a rolling upgrade that raises a supported max should not raise
// the finalized level before every node runs the new binary).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Feature names, as Kafka spells them.
const (
	FeatureMetadataVersion    = "metadata.version"
	FeatureKRaftVersion       = "kraft.version"
	FeatureTransactionVersion = "transaction.version"
	FeatureGroupVersion       = "group.version"
	FeatureELRVersion         = "eligible.leader.replicas.version"
	FeatureShareVersion       = "share.version"
	FeatureStreamsVersion     = "streams.version"
)

// FeatureRange is the range of levels of one feature this binary
// supports.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// supportedFeatures is what this binary implements, one line per feature
// (see the file comment). Raise a Max only together with the code that
// makes the level true, and its tests.
var supportedFeatures = []FeatureRange{
	{FeatureMetadataVersion, 7, 33},
	{FeatureKRaftVersion, 0, 1},
	{FeatureTransactionVersion, 0, 2},
	{FeatureGroupVersion, 0, 1},
	{FeatureELRVersion, 0, 1},
	{FeatureShareVersion, 0, 2},
	{FeatureStreamsVersion, 0, 1},
}

// kraftVersion is the level of kraft.version this quorum is at: its voter
// set lives in the log (KIP-853's level 1).
const kraftVersion = 1

// featureDependency is a feature level that needs another feature at a
// minimum level, Kafka's FeatureVersion.dependencies.
type featureDependency struct {
	Feature   string
	Level     int16
	Needs     string
	NeedLevel int16
}

// featureDependencies are the dependencies of the levels of Kafka 4.4's
// features that have one.
var featureDependencies = []featureDependency{
	{FeatureELRVersion, 1, FeatureMetadataVersion, 23},
}

// metadataVersions names metadata.version levels 7 (3.3-IV3) to 33
// (4.4-IV2), and marks the ones whose records changed (Kafka's
// didMetadataChange): a downgrade across one of those is refused.
var metadataVersions = []struct {
	Name    string
	Changed bool
}{
	{"3.3-IV3", true}, {"3.4-IV0", true}, {"3.5-IV0", false}, {"3.5-IV1", false},
	{"3.5-IV2", true}, {"3.6-IV0", false}, {"3.6-IV1", true}, {"3.6-IV2", true},
	{"3.7-IV0", true}, {"3.7-IV1", false}, {"3.7-IV2", true}, {"3.7-IV3", false},
	{"3.7-IV4", false}, {"3.8-IV0", false}, {"3.9-IV0", false}, {"4.0-IV0", false},
	{"4.0-IV1", true}, {"4.0-IV2", false}, {"4.0-IV3", false}, {"4.1-IV0", false},
	{"4.1-IV1", false}, {"4.2-IV0", false}, {"4.2-IV1", false}, {"4.3-IV0", true},
	{"4.4-IV0", false}, {"4.4-IV1", true}, {"4.4-IV2", true},
}

// firstMetadataVersion is the level of metadataVersions[0].
const firstMetadataVersion = 7

// MetadataVersionName is Kafka's name of a metadata.version level
// ("4.4-IV2"), or the number for a level sluice does not know.
func MetadataVersionName(level int16) string {
	if i := int(level) - firstMetadataVersion; i >= 0 && i < len(metadataVersions) {
		return metadataVersions[i].Name
	}
	return strconv.Itoa(int(level))
}

// SupportedFeatures returns the features this binary supports at a level
// above 0, by name, as ApiVersions lists them.
func SupportedFeatures() []FeatureRange {
	var out []FeatureRange
	for _, f := range supportedFeatures {
		if f.Max > 0 {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b FeatureRange) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// supportedRange returns name's supported range; a feature this binary
// does not know is supported at level 0 only (Kafka's
// QuorumFeatures.DISABLED).
func supportedRange(name string) FeatureRange {
	for _, f := range supportedFeatures {
		if f.Name == name {
			return f
		}
	}
	return FeatureRange{Name: name}
}

// knownFeature reports whether name is one of Kafka 4.4's features.
func knownFeature(name string) bool {
	for _, f := range supportedFeatures {
		if f.Name == name {
			return true
		}
	}
	return false
}

// FinalizedFeatures returns the finalized level of every feature above 0
// in img, kraft.version included, and the epoch of that information: the
// image's raft index, as Kafka reports the metadata offset of its image.
// Before the cluster's first levels are applied it returns nil and -1,
// Kafka's unknown epoch.
func FinalizedFeatures(img *Image) (levels map[string]int16, epoch int64) {
	if img.Features[FeatureMetadataVersion] == 0 {
		return nil, -1
	}
	levels = make(map[string]int16, len(img.Features)+1)
	for name, level := range img.Features {
		if level > 0 {
			levels[name] = level
		}
	}
	levels[FeatureKRaftVersion] = kraftVersion
	return levels, int64(img.Index)
}

// FinalizedLevel returns the finalized level of one feature in img, 0
// when it is not finalized.
func FinalizedLevel(img *Image, name string) int16 {
	if name == FeatureKRaftVersion {
		return kraftVersion
	}
	return img.Features[name]
}

// defaultFeatureLevels are the levels a new cluster starts at: every
// supported feature at its supported max (kraft.version is the quorum's).
func defaultFeatureLevels() map[string]int16 {
	levels := map[string]int16{}
	for _, f := range supportedFeatures {
		if f.Max > 0 && f.Name != FeatureKRaftVersion {
			levels[f.Name] = f.Max
		}
	}
	return levels
}

// UpgradeType is how an UpdateFeatures entry may move a level, Kafka's
// FeatureUpdate.UpgradeType codes.
type UpgradeType int8

const (
	UpgradeUnknown         UpgradeType = 0
	UpgradeUpgrade         UpgradeType = 1
	UpgradeSafeDowngrade   UpgradeType = 2
	UpgradeUnsafeDowngrade UpgradeType = 3
)

// FeatureUpdate is one entry of an UpdateFeatures request.
type FeatureUpdate struct {
	Feature string
	Level   int16
	Type    UpgradeType
}

// updateFeaturesCmd sets finalized feature levels; a level of 0 removes
// the feature from the image (Kafka's FeatureLevelRecord at level 0).
// Bootstrap marks the defaults written by the first controller
// (bootstrapFeatures): applied only while the image has no
// metadata.version.
type updateFeaturesCmd struct {
	Levels    map[string]int16 `json:"levels"`
	Bootstrap bool             `json:"bootstrap,omitempty"`
}

func (updateFeaturesCmd) commandType() commandType { return cmdUpdateFeatures }

func applyUpdateFeatures(b *imageBuilder, index uint64, payload []byte) error {
	var c updateFeaturesCmd
	decodePayload(cmdUpdateFeatures, index, payload, &c)
	if c.Bootstrap && b.base.Features[FeatureMetadataVersion] != 0 {
		return fmt.Errorf("%w: feature levels are already set", kerr.InvalidUpdateVersion)
	}
	for name, level := range c.Levels {
		if level < 0 {
			return fmt.Errorf("%w: Invalid update version %d for feature %s. A feature version cannot be less than 0.", kerr.InvalidUpdateVersion, level, name)
		}
	}
	next := maps.Clone(b.base.Features)
	if next == nil {
		next = map[string]int16{}
	}
	for name, level := range c.Levels {
		if level == 0 {
			delete(next, name)
		} else {
			next[name] = level
		}
	}
	b.next.Features = next
	return nil
}

// bootstrapFeatures writes this binary's default levels if the image has
// none yet (a new cluster, or a log written before feature levels). The
// caller is the leadership establishment, before any registration.
func (c *Controller) bootstrapFeatures(ctx context.Context) error {
	if c.Image().Features[FeatureMetadataVersion] != 0 {
		return nil
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if c.Image().Features[FeatureMetadataVersion] != 0 {
		return nil
	}
	levels := defaultFeatureLevels()
	if err := c.apply(ctx, updateFeaturesCmd{Levels: levels, Bootstrap: true}); err != nil {
		return err
	}
	c.log.Info("finalized default feature levels", "levels", levels)
	return nil
}

// UpdateFeatures changes finalized feature levels as Kafka 4.4's
// controller does (FeatureControlManager.updateFeatures): each update is
// checked in turn, in the order Kafka's HashMap of them iterates, and the
// first failure is the answer for the whole request, nothing written. The
// error is INVALID_UPDATE_VERSION with Kafka's message; NOT_CONTROLLER and
// commit failures as for every decision. validateOnly checks only.
func (c *Controller) UpdateFeatures(ctx context.Context, updates []FeatureUpdate, validateOnly bool) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	img := c.Image()
	// Kafka keeps one entry per feature name, the last one a request gave.
	byName := map[string]FeatureUpdate{}
	var names []string
	for _, u := range updates {
		if _, ok := byName[u.Feature]; !ok {
			names = append(names, u.Feature)
		}
		byName[u.Feature] = u
	}
	proposed := maps.Clone(img.Features)
	if proposed == nil {
		proposed = map[string]int16{}
	}
	for _, name := range names {
		proposed[name] = byName[name].Level
	}
	levels := map[string]int16{}
	for _, name := range JavaHashMapOrder(names) {
		u := byName[name]
		write, err := checkFeatureUpdate(img, u, proposed, c.cfg.NodeID)
		if err != nil {
			return fmt.Errorf("%w: The update failed for all features since the following feature had an error: %s", kerr.InvalidUpdateVersion, err.Error())
		}
		if write {
			levels[name] = u.Level
		}
	}
	if validateOnly || len(levels) == 0 {
		return nil
	}
	return c.apply(ctx, updateFeaturesCmd{Levels: levels})
}

// checkFeatureUpdate checks one update against img as Kafka's
// FeatureControlManager.updateFeature does, returning its message on
// failure and whether a level must be written (kraft.version at its level
// writes nothing).
func checkFeatureUpdate(img *Image, u FeatureUpdate, proposed map[string]int16, nodeID int32) (write bool, err error) {
	invalid := func(msg string) error {
		return fmt.Errorf("Invalid update version %d for feature %s. %s", u.Level, u.Feature, msg)
	}
	if u.Type != UpgradeUpgrade && u.Type != UpgradeSafeDowngrade && u.Type != UpgradeUnsafeDowngrade {
		return false, invalid("The controller does not support the given upgrade type.")
	}
	current := FinalizedLevel(img, u.Feature)
	if u.Level < 0 {
		return false, invalid("A feature version cannot be less than 0.")
	}
	if r := supportedRange(u.Feature); u.Level < r.Min || u.Level > r.Max {
		if r.Max == 0 {
			return false, invalid(fmt.Sprintf("Local controller %d does not support this feature.", nodeID))
		}
		return false, invalid(fmt.Sprintf("Local controller %d only supports versions %s", nodeID, versionRangeString(r)))
	}
	if u.Level < current && u.Type == UpgradeUpgrade {
		return false, invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	}
	if u.Level > current && u.Type != UpgradeUpgrade {
		return false, invalid("Can't downgrade to a newer version.")
	}
	switch u.Feature {
	case FeatureMetadataVersion:
		return true, checkMetadataVersion(current, u)
	case FeatureKRaftVersion:
		if u.Type != UpgradeUpgrade && u.Level != current {
			return false, invalid("Can't downgrade the version of this feature.")
		}
		return false, nil
	}
	if !knownFeature(u.Feature) {
		return false, invalid(fmt.Sprintf("Feature %s not found.", u.Feature))
	}
	if err := checkDependencies(u, proposed); err != nil {
		return false, invalid(err.Error())
	}
	return true, nil
}

// checkDependencies is Kafka's Feature.validateVersion: a level that
// needs another feature at some level fails unless the levels proposed
// (the current ones with the request's updates) have it.
func checkDependencies(u FeatureUpdate, proposed map[string]int16) error {
	for _, d := range featureDependencies {
		if d.Feature != u.Feature || u.Level < d.Level || proposed[d.Needs] >= d.NeedLevel {
			continue
		}
		if d.Needs == FeatureMetadataVersion {
			return fmt.Errorf("%s could not be set to %d because it depends on metadata.version=%d (%s)",
				u.Feature, u.Level, d.NeedLevel, MetadataVersionName(d.NeedLevel))
		}
		return fmt.Errorf("%s could not be set to %d because it depends on %s level %d",
			u.Feature, u.Level, d.Needs, d.NeedLevel)
	}
	return nil
}

// checkMetadataVersion is Kafka's updateMetadataVersion: a downgrade is
// allowed only when no level between the two changed the metadata
// records, and an unsafe downgrade is not supported at all.
func checkMetadataVersion(current int16, u FeatureUpdate) error {
	if u.Level >= current {
		return nil
	}
	changed := false
	for level := current; level > u.Level; level-- {
		if i := int(level) - firstMetadataVersion; i >= 0 && i < len(metadataVersions) && metadataVersions[i].Changed {
			changed = true
			break
		}
	}
	if !changed {
		return nil
	}
	reason := "Refusing to perform the requested downgrade because it might delete metadata information."
	if u.Type == UpgradeUnsafeDowngrade {
		reason = "Unsafe metadata downgrade is not supported in this version."
	}
	return fmt.Errorf("Unsupported metadata.version downgrade from %d to %d. %s", current, u.Level, reason)
}

// versionRangeString is Kafka's VersionRange.toString.
func versionRangeString(r FeatureRange) string {
	if r.Min == r.Max {
		return strconv.Itoa(int(r.Min))
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}
