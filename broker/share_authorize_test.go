package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// ShareFetch and ShareAcknowledge need READ on the share group (else
// GROUP_AUTHORIZATION_FAILED for the whole request) and READ on each topic
// (else TOPIC_AUTHORIZATION_FAILED for its partitions), as in Kafka's
// KafkaApis (authorize_requests_test.go explains the ACL setup).
func TestShareFetchNeedsGroupAndTopicRead(t *testing.T) {
	broker.ForceShareGroups(t)
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	adm := n.Admin()
	createTopic(t, n, "sq-open", 1, nil)
	createTopic(t, n, "sq-closed", 1, nil)
	open, closed := topicID(t, n, "sq-open"), topicID(t, n, "sq-closed")
	createACLs(t, adm, kadm.NewACLs().Groups("g-closed").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Topics("sq-closed").Allow("User:admin").AllowHosts("*").Operations(kadm.OpRead))

	m := newShareFetcher(t, n, "g-closed", "m", open)
	if resp := m.fetch(m.fetchReq(0)); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("ShareFetch without READ on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := m.acknowledge(1); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("ShareAcknowledge without READ on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	m = newShareFetcher(t, n, "g-open", "m", closed)
	if p := oneSharePartition(t, m.fetch(m.fetchReq(0))); p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("ShareFetch without READ on the topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	m = newShareFetcher(t, n, "g-open", "m2", open)
	if p := oneSharePartition(t, m.fetch(m.fetchReq(0))); p.ErrorCode != 0 {
		t.Fatalf("ShareFetch with READ on group and topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}
