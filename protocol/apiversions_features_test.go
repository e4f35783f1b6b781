package protocol

// ApiVersions' KIP-584 feature fields, from the router's features source.

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsFeatures(t *testing.T) {
	r := testRouter(t)
	r.SetFeatures(func() Features {
		return Features{
			Supported: []SupportedFeature{
				{Name: "group.version", Min: 0, Max: 1},
				{Name: "metadata.version", Min: 7, Max: 33},
			},
			FinalizedEpoch: 42,
			Finalized: []FinalizedFeature{
				{Name: "group.version", Level: 1},
				{Name: "metadata.version", Level: 33},
				{Name: "share.version", Level: 0},
			},
		}
	})
	for _, tc := range []struct {
		version   int16
		supported []string // names listed, in order
		finalized int      // finalized features listed
		epoch     int64
	}{
		{2, nil, 0, -1},
		// Below v4 a feature whose minimum is 0 is left out (KAFKA-17492).
		{3, []string{"metadata.version"}, 2, 42},
		{4, []string{"group.version", "metadata.version"}, 2, 42},
		{5, []string{"group.version", "metadata.version"}, 2, 42},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = tc.version
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "0.1.0"
		out, err := r.Serve(context.Background(), nil, requestFrame(req, 7, kmsg.StringPtr("c")))
		if err != nil {
			t.Fatalf("v%d: %v", tc.version, err)
		}
		_, resp := decodeResponse(t, out, 18, tc.version, tc.version)
		av := resp.(*kmsg.ApiVersionsResponse)
		var names []string
		for _, f := range av.SupportedFeatures {
			names = append(names, f.Name)
		}
		if len(names) != len(tc.supported) {
			t.Fatalf("v%d: supported %v, want %v", tc.version, names, tc.supported)
		}
		for i := range names {
			if names[i] != tc.supported[i] {
				t.Fatalf("v%d: supported %v, want %v", tc.version, names, tc.supported)
			}
		}
		if tc.version < 3 {
			continue // the fields are not on the wire
		}
		if len(av.FinalizedFeatures) != tc.finalized || av.FinalizedFeaturesEpoch != tc.epoch {
			t.Fatalf("v%d: finalized %+v at epoch %d, want %d features at %d", tc.version, av.FinalizedFeatures, av.FinalizedFeaturesEpoch, tc.finalized, tc.epoch)
		}
		for _, f := range av.FinalizedFeatures {
			if f.MinVersionLevel != f.MaxVersionLevel || f.MaxVersionLevel == 0 {
				t.Fatalf("v%d: finalized %+v, want min = max > 0", tc.version, f)
			}
		}
	}
}
