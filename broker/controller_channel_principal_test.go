package broker_test

import (
	"context"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/sluicetest"
	"github.com/sluicedev/sluice/sluicetest/certs"
)

// On an SSL controller listener the controller channel's principal is the
// peer certificate's: with an authorizer, a node certificate named in
// super.users may send the inter-broker APIs, another certificate of the
// same CA is refused CLUSTER_AUTHORIZATION_FAILED, as on Kafka's
// controller listener.
func TestControllerChannelPrincipalFromCertificate(t *testing.T) {
	set := sluicetest.NewCerts(t)
	lines := append(clusterSecurityLines(set, set.Server, gossipKey(t)),
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// The Kafka listeners stay PLAINTEXT here, so replica fetches
		// and the test's admin client are ANONYMOUS.
		"super.users=User:CN=localhost;User:ANONYMOUS")
	c := sluicetest.StartCluster(t, 3, lines...)
	c.WaitForBrokers(3)
	ctrl := c.Controller()
	addr := controllerListener(t, c, ctrl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	allocate := func(id *certs.Identity) int16 {
		t.Helper()
		cl := channelClient(t, addr, func(ctx context.Context, network, addr string) (net.Conn, error) {
			return controller.DialControllerTLS(ctx, nil, network, addr, set.ClientConfig(id))
		})
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = int32(ctrl), -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AllocateProducerIds as %s: %v", id.Cert.Subject, err)
		}
		return resp.ErrorCode
	}
	other := set.MustIssue(t, "other", pkix.Name{CommonName: "not-a-broker"})
	if code := allocate(other); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("CN=not-a-broker: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	if code := allocate(set.Server); code == kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("CN=localhost (a super user) was refused CLUSTER_ACTION")
	}
}
