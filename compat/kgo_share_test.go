package compat

// Share groups (KIP-932) for the rows that use them: the kgo suite's
// share-group tests (kgo, kgo-rf3, kgo-security, kgo-security-rf3) and the
// kafka-share-consumer row (java_share_consumer_test.go).
//
// sluice serves the share-group APIs only while share.version is finalized
// at 1 or more, as Kafka does; until then it advertises them and answers
// UNSUPPORTED_VERSION. franz-go's share tests decide whether to run from the
// advertised versions of ShareFetch and ShareAcknowledge alone, so against
// a cluster at share.version 0 they would run and fail. So the rows ask the
// cluster first (enableShareGroups): when the binary supports share.version
// 1 and the cluster has not finalized it (a data dir from an older binary),
// the row finalizes it with UpdateFeatures, as `kafka-features.sh upgrade
// --feature share.version=1` would; when the binary's supported max is 0,
// the kgo rows leave the share tests out, each with the reason logged, and
// the kafka-share-consumer row skips. A test that also needs an API the
// cluster does not advertise (TestShareGroupOffsetsAdmin, the share-group
// offset admin APIs 90-92) is left out until it does. Once left out for
// no reason, a share test must pass: a share test that skips itself fails
// the row.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoShareTests are the kgo suite's tests that need share groups, each
// with the API keys it needs besides the share-group ones (76-79).
var kgoShareTests = []struct {
	name string
	apis []int16
}{
	{"TestShareGroup", nil},
	{"TestShareGroupETL", nil},
	{"TestShareGroupAckOnClose", nil},
	{"TestConsumeRegexShareSkipsInternal", nil},
	// DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
	// DeleteShareGroupOffsets (92).
	{"TestShareGroupOffsetsAdmin", []int16{90, 91, 92}},
}

// shareSupport is what a cluster offers of share groups, from node 1's
// ApiVersions once enableShareGroups is done.
type shareSupport struct {
	supportedMax int16 // share.version's supported max (0: not listed)
	finalized    int16 // share.version's finalized level
	apis         map[int16]bool
}

// enabled reports whether the cluster serves share groups.
func (s *shareSupport) enabled() bool { return s.finalized >= 1 }

// why is the reason the cluster cannot run share groups, or "".
func (s *shareSupport) why() string {
	switch {
	case s.supportedMax < 1:
		return "share.version's supported max is 0 on this build (controller/features.go): share groups are gated off"
	case s.finalized < 1:
		return fmt.Sprintf("share.version is finalized at %d", s.finalized)
	}
	return ""
}

// kgoLeftOut returns the kgo share tests the cluster cannot run, each with
// its reason.
func (s *shareSupport) kgoLeftOut() map[string]string {
	out := map[string]string{}
	for _, tc := range kgoShareTests {
		if why := s.why(); why != "" {
			out[tc.name] = why
			continue
		}
		var missing []string
		for _, key := range tc.apis {
			if !s.apis[key] {
				missing = append(missing, strconv.Itoa(int(key)))
			}
		}
		if len(missing) > 0 {
			out[tc.name] = "the cluster does not advertise API key(s) " + strings.Join(missing, ", ")
		}
	}
	return out
}

// apiVersionsOf asks addr for its ApiVersions.
func apiVersionsOf(ctx context.Context, addr string, opts ...kgo.Opt) (*kmsg.ApiVersionsResponse, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-compat", "1"
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions of %s: %w", addr, err)
	}
	return kresp.(*kmsg.ApiVersionsResponse), nil
}

// readShareSupport reads share.version and the advertised keys from addr.
func readShareSupport(ctx context.Context, addr string, opts ...kgo.Opt) (*shareSupport, error) {
	resp, err := apiVersionsOf(ctx, addr, opts...)
	if err != nil {
		return nil, err
	}
	s := &shareSupport{apis: map[int16]bool{}}
	for _, f := range resp.SupportedFeatures {
		if f.Name == "share.version" {
			s.supportedMax = f.MaxVersion
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "share.version" {
			s.finalized = f.MaxVersionLevel
		}
	}
	for _, k := range resp.ApiKeys {
		s.apis[k.ApiKey] = true
	}
	return s, nil
}

// enableShareGroups reads what the row's cluster offers of share groups
// and, when the binary supports share.version 1 but the cluster has it
// finalized below, finalizes it at 1 with UpdateFeatures and waits until
// every node reports it. opts are the client options the row's listeners
// need (TLS).
func enableShareGroups(ctx context.Context, env *rowEnv, opts ...kgo.Opt) (*shareSupport, error) {
	s, err := readShareSupport(ctx, env.broker.addr, opts...)
	if err != nil {
		return nil, err
	}
	if s.supportedMax < 1 || s.finalized >= 1 {
		return s, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.bootstrap...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", 1, 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, fmt.Errorf("UpdateFeatures share.version=1: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("UpdateFeatures share.version=1: %w: %s", err, strOr(resp.ErrorMessage))
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("UpdateFeatures %s: %w: %s", r.Feature, err, strOr(r.ErrorMessage))
		}
	}
	for _, n := range env.nodes {
		err := pollUntil(ctx, 20*time.Second, func() error {
			got, err := readShareSupport(ctx, n.addr, opts...)
			if err == nil && got.finalized < 1 {
				err = fmt.Errorf("node %d reports share.version at %d after the upgrade", n.id, got.finalized)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	env.t.Logf("share.version was finalized at %d: upgraded to 1 (UpdateFeatures) for the row", s.finalized)
	s.finalized = 1
	return s, nil
}

// strOr is *s, or "" for nil.
func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// kgoShareExclusions prepares the cluster for the suite's share tests
// (enableShareGroups) and returns those it cannot run, logging why.
func kgoShareExclusions(ctx context.Context, env *rowEnv, opts ...kgo.Opt) ([]string, error) {
	s, err := enableShareGroups(ctx, env, opts...)
	if err != nil {
		return nil, err
	}
	left := s.kgoLeftOut()
	var names []string
	for _, tc := range kgoShareTests {
		if why, ok := left[tc.name]; ok {
			names = append(names, tc.name)
			env.t.Logf("kgo: leaving out %s: %s", tc.name, why)
		}
	}
	if s.enabled() {
		env.t.Logf("kgo: share.version %d (supported max %d): %d of %d share tests run", s.finalized, s.supportedMax, len(kgoShareTests)-len(names), len(kgoShareTests))
	}
	return names, nil
}

// checkShareTestsRan fails when a share test the row did not leave out
// did not pass (it skipped itself, say, because ShareFetch v2 was not
// advertised).
func checkShareTestsRan(sum *testSummary, leftOut []string) error {
	for _, tc := range kgoShareTests {
		if slices.Contains(leftOut, tc.name) {
			continue
		}
		if st := sum.state[tc.name]; st != "pass" {
			return fmt.Errorf("%s: %q, want pass (the cluster serves share groups)", tc.name, st)
		}
	}
	return nil
}

// TestKgoShareTestsNotExcluded checks that no exclusion file lists a share
// test: the runner decides about them from what the cluster offers. It
// needs no broker.
func TestKgoShareTestsNotExcluded(t *testing.T) {
	for _, file := range []string{kgoExcludedFile, kgoExcludedClusterFile, kgoExcludedTLSFile} {
		names, err := readExclusions(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range kgoShareTests {
			if slices.Contains(names, tc.name) {
				t.Errorf("%s lists %s, which kgo_share_test.go gates on the cluster's share.version", file, tc.name)
			}
		}
	}
	s := &shareSupport{supportedMax: 1, finalized: 1, apis: map[int16]bool{90: true, 91: true}}
	left := s.kgoLeftOut()
	if len(left) != 1 || !strings.Contains(left["TestShareGroupOffsetsAdmin"], "92") {
		t.Errorf("without API 92 the left-out tests are %v, want TestShareGroupOffsetsAdmin for want of 92", left)
	}
	s.supportedMax, s.finalized = 0, 0
	if left := s.kgoLeftOut(); len(left) != len(kgoShareTests) {
		t.Errorf("at share.version 0 %d of %d share tests are left out", len(left), len(kgoShareTests))
	}
}
