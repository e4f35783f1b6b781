package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// listConfigResources sends one ListConfigResources of version and types
// and returns the answer as "type/name" strings.
func listConfigResources(t *testing.T, cl kmsg.Requestor, version int16, types ...int8) (int16, []string) {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version, req.ResourceTypes = version, types
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("ListConfigResources v%d: %v", version, err)
	}
	resp := kresp.(*kmsg.ListConfigResourcesResponse)
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, kmsg.ConfigResourceType(r.Type).String()+"/"+r.Name)
	}
	return resp.ErrorCode, out
}

// TestListConfigResources: ListConfigResources v1 lists a group id that
// only has group configs (as kafka-configs.sh --entity-type groups
// --describe needs to find it), every topic and broker, refuses an
// unknown type with UNSUPPORTED_VERSION as Kafka 4.4 does, and v0
// (ListClientMetricsResources) lists no client-metrics resources.
func TestListConfigResources(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	versions, err := n.Admin().ApiVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if _, _, ok := v.KeyVersions(74); !ok {
			t.Fatal("ListConfigResources (api key 74) is not advertised")
		}
		break
	}
	createTopic(t, n, "listed-topic", 1, nil)
	mustAlterGroupConfigs(t, cl, "only-configs", "set:consumer.session.timeout.ms=50000")

	code, groups := listConfigResources(t, cl, 1, 32)
	if code != 0 || !slices.Equal(groups, []string{"GROUP_CONFIG/only-configs"}) {
		t.Errorf("ListConfigResources of groups: %v %v, want the group with configs", kerr.ErrorForCode(code), groups)
	}
	code, all := listConfigResources(t, cl, 1)
	for _, want := range []string{"GROUP_CONFIG/only-configs", "TOPIC/listed-topic", "BROKER/1", "BROKER_LOGGER/1"} {
		if !slices.Contains(all, want) {
			t.Errorf("ListConfigResources of every type: %v %v, want %s among them", kerr.ErrorForCode(code), all, want)
		}
	}
	if code, got := listConfigResources(t, cl, 1, 3); code != kerr.UnsupportedVersion.Code || len(got) != 0 {
		t.Errorf("ListConfigResources of type 3: %v %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(code), got)
	}
	v0 := kversion.Stable()
	v0.SetMaxKeyVersion(74, 0)
	if code, got := listConfigResources(t, n.Client(kgo.MaxVersions(v0)), 0); code != 0 || len(got) != 0 {
		t.Errorf("ListClientMetricsResources: %v %v, want no client-metrics resources", kerr.ErrorForCode(code), got)
	}
}
