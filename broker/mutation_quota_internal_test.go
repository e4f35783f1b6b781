package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMutationQuotaTag: the account a forwarded request carries decodes
// to what was encoded, and a malformed tag is ignored (the request is
// then not charged), never a panic.
func TestMutationQuotaTag(t *testing.T) {
	for _, q := range []*mutationQuota{
		{user: "ANONYMOUS", clientID: "admin-1", strict: true},
		{user: "", clientID: "", strict: false},
		{user: "alice", clientID: "ünïcode client"},
	} {
		var tags kmsg.Tags
		tags.Set(mutationQuotaTag, encodeMutationQuota(q))
		got := decodeMutationQuota(&tags)
		if got == nil || got.user != q.user || got.clientID != q.clientID || got.strict != q.strict {
			t.Errorf("round trip of %+v: %+v", q, got)
		}
	}
	for name, val := range map[string][]byte{
		"empty":            {},
		"bad strict byte":  {2, 0},
		"no length":        {1},
		"length past end":  {1, 5, 'a'},
		"overlong uvarint": {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"huge length":      {0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		var tags kmsg.Tags
		tags.Set(mutationQuotaTag, val)
		if got := decodeMutationQuota(&tags); got != nil {
			t.Errorf("%s: decoded %+v, want nothing", name, got)
		}
	}
	var none kmsg.Tags
	if got := decodeMutationQuota(&none); got != nil {
		t.Errorf("no tag: decoded %+v", got)
	}
}
