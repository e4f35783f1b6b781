package broker_test

// Feature levels (KIP-584) as a client sees them: ApiVersions' supported
// and finalized features, UpdateFeatures' answers, and the levels
// surviving a restart and reaching every node.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// featureView is what one ApiVersions answer says of the features.
type featureView struct {
	supported map[string][2]int16
	finalized map[string]int16
	epoch     int64
}

// apiVersionsFeatures asks the node at addr for its ApiVersions at
// version, on a connection of its own (a client's version, not kgo's).
func apiVersionsFeatures(t *testing.T, addr string, version int16) featureView {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1"
	_, kresp := dialRawConn(t, addr).do(req)
	resp := kresp.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v%d: error %d", version, resp.ErrorCode)
	}
	v := featureView{supported: map[string][2]int16{}, finalized: map[string]int16{}, epoch: resp.FinalizedFeaturesEpoch}
	for _, f := range resp.SupportedFeatures {
		v.supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Fatalf("finalized %s has min %d max %d, Kafka sends min = max", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		v.finalized[f.Name] = f.MaxVersionLevel
	}
	return v
}

// updateFeatures sends one UpdateFeatures request at version to the node
// at addr, on a connection of its own, and returns the answer.
func updateFeatures(t *testing.T, addr string, version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = version
	req.ValidateOnly = validateOnly
	req.FeatureUpdates = updates
	_, kresp := dialRawConn(t, addr).do(req)
	return kresp.(*kmsg.UpdateFeaturesResponse)
}

func featureUpdate(name string, level int16, upgradeType int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	return u
}

func TestFeaturesInApiVersions(t *testing.T) {
	n := sluicetest.Start(t)
	addr := n.Addr()

	v4 := apiVersionsFeatures(t, addr, 4)
	// What a Kafka 4.4 broker lists for the features sluice implements;
	// transaction.version's max is sluice's own (2 with transactions v2).
	for name, want := range map[string][2]int16{
		"metadata.version": {7, 33},
		"kraft.version":    {0, 1},
		"group.version":    {0, 1},
		"streams.version":  {0, 1},
		"share.version":    {0, 2},
	} {
		if got, ok := v4.supported[name]; !ok || got != want {
			t.Errorf("supported %s = %v (listed %v), want %v", name, got, ok, want)
		}
	}
	tv, ok := v4.supported["transaction.version"]
	if !ok || tv[0] != 0 || tv[1] < 1 {
		t.Errorf("supported transaction.version = %v (listed %v), want 0 to at least 1", tv, ok)
	}
	// Every supported feature is finalized at its max on a new cluster,
	// kraft.version included; level 0 is never listed.
	for name, r := range v4.supported {
		if got := v4.finalized[name]; got != r[1] {
			t.Errorf("finalized %s = %d, want the supported max %d", name, got, r[1])
		}
	}
	if len(v4.finalized) != len(v4.supported) || v4.epoch <= 0 {
		t.Errorf("finalized %v at epoch %d, want the supported features at an epoch > 0", v4.finalized, v4.epoch)
	}

	// Below v4 a feature whose minimum is 0 is left out (KAFKA-17492).
	v3 := apiVersionsFeatures(t, addr, 3)
	if len(v3.supported) != 1 || v3.supported["metadata.version"] != [2]int16{7, 33} {
		t.Errorf("v3 supported %v, want metadata.version alone", v3.supported)
	}
	if v3.finalized["metadata.version"] != 33 || v3.finalized["group.version"] != 1 {
		t.Errorf("v3 finalized %v", v3.finalized)
	}
}

func TestUpdateFeaturesValidation(t *testing.T) {
	n := sluicetest.Start(t)
	addr := n.Addr()
	before := apiVersionsFeatures(t, addr, 4)

	for _, tc := range []struct {
		name    string
		updates []kmsg.UpdateFeaturesRequestFeatureUpdate
		msg     string
	}{
		{"unknown feature", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("foo.version", 1, 1)},
			"Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."},
		{"above sluice's max", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 3, 1)},
			"Invalid update version 3 for feature share.version. Local controller 1 only supports versions 0-2"},
		{"above the supported max", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 2, 1)},
			"Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"},
		{"downgrade as an upgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, 1)},
			"Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"unknown upgrade type", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 1, 9)},
			"Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{"metadata.version downgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 30, 2)},
			"Unsupported metadata.version downgrade from 33 to 30. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"kraft.version downgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("kraft.version", 0, 2)},
			"Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."},
		// One bad update fails the request; the good one is not applied.
		{"all or nothing", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, 2), featureUpdate("foo.version", 1, 1)},
			"Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, version := range []int16{1, 2} {
				resp := updateFeatures(t, addr, version, false, tc.updates...)
				want := "The update failed for all features since the following feature had an error: " + tc.msg
				if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
					t.Fatalf("v%d: error %d %v, want INVALID_UPDATE_VERSION %q", version, resp.ErrorCode, strPtr(resp.ErrorMessage), want)
				}
				if len(resp.Results) != 0 {
					t.Fatalf("v%d: a failed request lists results %+v", version, resp.Results)
				}
			}
		})
	}

	// ValidateOnly answers success and changes nothing.
	if resp := updateFeatures(t, addr, 1, true, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("validate-only downgrade: %d %v", resp.ErrorCode, strPtr(resp.ErrorMessage))
	}
	if after := apiVersionsFeatures(t, addr, 4); after.finalized["group.version"] != before.finalized["group.version"] {
		t.Fatalf("rejected or validate-only requests changed group.version: %v", after.finalized)
	}

	// v1 lists every feature with NONE on success.
	resp := updateFeatures(t, addr, 1, false, featureUpdate("group.version", 1, 1), featureUpdate("metadata.version", 33, 1))
	if resp.ErrorCode != 0 || len(resp.Results) != 2 || resp.Results[0].Feature != "group.version" || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("v1 no-op upgrade: %d %v results %+v", resp.ErrorCode, strPtr(resp.ErrorMessage), resp.Results)
	}
}

// TestUpdateFeaturesRoundTripSurvivesRestart drives kadm: a downgrade is
// reported at once by ApiVersions with a newer epoch, survives a restart,
// and the upgrade brings the level back.
func TestUpdateFeaturesRoundTripSurvivesRestart(t *testing.T) {
	n := sluicetest.Start(t)
	adm := n.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := apiVersionsFeatures(t, n.Addr(), 4)

	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res["group.version"].Err != nil {
		t.Fatalf("downgrade group.version: %v %+v", err, res)
	}
	after := apiVersionsFeatures(t, n.Addr(), 4)
	if _, ok := after.finalized["group.version"]; ok || after.epoch <= before.epoch || after.supported["group.version"] != [2]int16{0, 1} {
		t.Fatalf("after the downgrade: %+v (before %+v)", after, before)
	}

	n.Restart()
	restarted := apiVersionsFeatures(t, n.Addr(), 4)
	if _, ok := restarted.finalized["group.version"]; ok || restarted.finalized["metadata.version"] != 33 {
		t.Fatalf("after a restart: finalized %v, want group.version still 0", restarted.finalized)
	}

	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res["group.version"].Err != nil {
		t.Fatalf("upgrade group.version: %v %+v", err, res)
	}
	if got := apiVersionsFeatures(t, n.Addr(), 4).finalized["group.version"]; got != 1 {
		t.Fatalf("group.version %d after the upgrade, want 1", got)
	}
}

// TestUpdateFeaturesForwarded: an UpdateFeatures sent to a node that is
// not the active controller is forwarded, and every node reports the new
// level once the answer came (the answering node at once).
func TestUpdateFeaturesForwarded(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	ctrl := c.Controller()
	other := 1
	if other == ctrl {
		other = 2
	}
	addr := c.Node(other).Addr()
	if resp := updateFeatures(t, addr, 2, false, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("downgrade via node %d: %d %v", other, resp.ErrorCode, strPtr(resp.ErrorMessage))
	}
	if _, ok := apiVersionsFeatures(t, addr, 4).finalized["group.version"]; ok {
		t.Fatalf("node %d still reports group.version after answering", other)
	}
	for id := 1; id <= 3; id++ {
		sluicetest.WaitFor(t, 15*time.Second, func() error {
			if v, ok := apiVersionsFeatures(t, c.Node(id).Addr(), 4).finalized["group.version"]; ok {
				return fmt.Errorf("node %d reports group.version %d", id, v)
			}
			return nil
		})
	}
	// An error from the controller comes back through the forwarding
	// node unchanged.
	resp := updateFeatures(t, addr, 2, false, featureUpdate("foo.version", 1, 1))
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil ||
		!strings.HasSuffix(*resp.ErrorMessage, fmt.Sprintf("Local controller %d does not support this feature.", ctrl)) {
		t.Fatalf("forwarded error: %d %v", resp.ErrorCode, strPtr(resp.ErrorMessage))
	}
}

// TestGroupVersionGatesConsumerGroups: KIP-848 consumer groups need
// group.version 1, as on Kafka (isConsumerGroupProtocolEnabled): at 0
// ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
// UNSUPPORTED_VERSION, and the upgrade brings them back.
func TestGroupVersionGatesConsumerGroups(t *testing.T) {
	n := sluicetest.Start(t)
	addr := n.Addr()
	heartbeat := func(member string) int16 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group = "gv-group"
		req.MemberID = member
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{"gv-topic"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{} // empty, not null, on a join
		_, kresp := dialRawConn(t, addr).do(req)
		return kresp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	describe := func() int16 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"gv-group"}
		_, kresp := dialRawConn(t, addr).do(req)
		return kresp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode
	}
	// The group's coordinator is ready once its partition of
	// __consumer_offsets is created and loaded.
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "gv-group"
		if _, kresp := dialRawConn(t, addr).do(fc); kresp.(*kmsg.FindCoordinatorResponse).ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator: error %d", kresp.(*kmsg.FindCoordinatorResponse).ErrorCode)
		}
		if code := heartbeat("sluice-test-member-00001"); code != 0 {
			return fmt.Errorf("heartbeat at group.version 1: error %d", code)
		}
		return nil
	})
	if resp := updateFeatures(t, addr, 2, false, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("downgrade: %d %v", resp.ErrorCode, strPtr(resp.ErrorMessage))
	}
	if hb, d := heartbeat("sluice-test-member-00002"), describe(); hb != kerr.UnsupportedVersion.Code || d != kerr.UnsupportedVersion.Code {
		t.Fatalf("at group.version 0: heartbeat %d, describe %d, want UNSUPPORTED_VERSION (%d) for both", hb, d, kerr.UnsupportedVersion.Code)
	}
	if resp := updateFeatures(t, addr, 2, false, featureUpdate("group.version", 1, 1)); resp.ErrorCode != 0 {
		t.Fatalf("upgrade: %d %v", resp.ErrorCode, strPtr(resp.ErrorMessage))
	}
	if hb, d := heartbeat("sluice-test-member-00003"), describe(); hb != 0 || d != 0 {
		t.Fatalf("back at group.version 1: heartbeat %d, describe %d", hb, d)
	}
}

// Under the authorizer UpdateFeatures needs ALTER on the cluster, as
// Kafka's ControllerApis asks: without it the answer is a top-level
// CLUSTER_AUTHORIZATION_FAILED and the levels stay.
func TestUpdateFeaturesAuthorized(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	addr := n.Addr()
	// In one request, since CreateAcls itself needs ALTER on the cluster:
	// only User:admin may ALTER it from now on.
	createACLsAtOnce(t, n.Client(), aclEntry{kmsg.ACLResourceTypeCluster, "kafka-cluster", "User:admin",
		[]kmsg.ACLOperation{kmsg.ACLOperationAlter}})
	for _, version := range []int16{0, 1, 2} {
		u := featureUpdate("group.version", 0, 2)
		u.AllowDowngrade = true
		resp := updateFeatures(t, addr, version, false, u)
		if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Results) != 0 {
			t.Fatalf("v%d without ALTER: error %d, results %+v; want CLUSTER_AUTHORIZATION_FAILED and none", version, resp.ErrorCode, resp.Results)
		}
	}
	if got := apiVersionsFeatures(t, addr, 4).finalized["group.version"]; got != 1 {
		t.Fatalf("group.version %d after refused downgrades, want 1", got)
	}
}
