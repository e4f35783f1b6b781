package broker_test

// UnregisterController (api key 94, KIP-1312) on real nodes, sent raw with
// franz-go: sluice keeps no controller registrations, so every request is
// answered with Kafka 4.4's refusal for its case (94_unregister_controller.go).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// The active controller's own id is INVALID_REQUEST and any other id,
// a voter's or an unknown one, CONTROLLER_ID_NOT_REGISTERED, with Kafka's
// messages, whichever node the request is sent to; the cluster is
// unchanged afterwards.
func TestUnregisterController(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c)
	active := quorumRequest(t, cl, 1, kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse).ControllerID
	if active < 1 || active > 3 {
		t.Fatalf("DescribeCluster names controller %d", active)
	}
	other := active%3 + 1 // a voter that is not the active controller
	unregister := func(node int, id int32) *kmsg.UnregisterControllerResponse {
		req := kmsg.NewPtrUnregisterControllerRequest()
		req.ControllerID = id
		return quorumRequest(t, cl, node, req).(*kmsg.UnregisterControllerResponse)
	}
	check := func(what string, r *kmsg.UnregisterControllerResponse, want *kerr.Error, msg string) {
		t.Helper()
		if r.ErrorCode != want.Code || deref(r.ErrorMessage) != msg {
			t.Fatalf("%s: %v %q, want %v %q", what, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), want, msg)
		}
	}
	for node := 1; node <= 3; node++ {
		check("active controller", unregister(node, active), kerr.InvalidRequest,
			"Controller cannot unregister itself while it is active.")
		check("voter", unregister(node, other), kerr.ControllerIDNotRegistered,
			fmt.Sprintf("Controller ID %d is not currently registered.", other))
	}

	// Through kgo.Client.Request, which picks the node itself.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrUnregisterControllerRequest()
	req.ControllerID = 9999
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	check("unknown id", resp, kerr.ControllerIDNotRegistered, "Controller ID 9999 is not currently registered.")

	dc := quorumRequest(t, cl, 1, kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
	if len(dc.Brokers) != 3 {
		t.Fatalf("DescribeCluster lists %d brokers after UnregisterController, want 3", len(dc.Brokers))
	}
}

// Without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED.
func TestUnregisterControllerAuthorized(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	cl := n.Client()
	createACLsAtOnce(t, cl, aclEntry{kmsg.ACLResourceTypeCluster, "kafka-cluster", "User:admin",
		[]kmsg.ACLOperation{kmsg.ACLOperationAlter}})
	req := kmsg.NewPtrUnregisterControllerRequest()
	req.ControllerID = 9999
	if code := quorumRequest(t, cl, 1, req).(*kmsg.UnregisterControllerResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("UnregisterController without ALTER: %v", kerr.ErrorForCode(code))
	}
}
