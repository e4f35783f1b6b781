package broker

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// TestAuthorizedPrincipalAndHost: Broker.authorized asks about the
// connection's principal (protocol.ConnInfo.Principal, which the SASL and
// TLS layers set) and its remote address, with the ACLs of the broker's
// image; super.users pass whatever the ACLs say; without
// authorizer.class.name everything is allowed.
func TestAuthorizedPrincipalAndHost(t *testing.T) {
	cfg := config.Default()
	for k, v := range map[string]string{
		"authorizer.class.name": config.StandardAuthorizerClass,
		"super.users":           "User:root",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	b := &Broker{cfg: cfg, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	set := acl.NewSet([]acl.Entry{
		{ID: [16]byte{1}, Binding: acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "pay", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:alice", Host: "192.168.0.0/16", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow}},
		{ID: [16]byte{2}, Binding: acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "*", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:root", Host: "*", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny}},
	})
	b.image.Store(&controller.Image{ACLs: set})
	req := func(principal string, ip string) *protocol.Request {
		c := &protocol.ConnInfo{Remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
		if principal != "" {
			c.SetPrincipal(protocol.Principal{Type: "User", Name: principal})
		}
		return &protocol.Request{Conn: c}
	}
	write, topic := kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic
	for _, tc := range []struct {
		name string
		r    *protocol.Request
		res  string
		want bool
	}{
		{"alice in range", req("alice", "192.168.7.1"), "payments", true},
		{"alice out of range", req("alice", "10.0.0.1"), "payments", false},
		{"alice other topic", req("alice", "192.168.7.1"), "orders", false},
		{"bob", req("bob", "192.168.7.1"), "payments", false},
		{"anonymous", req("", "192.168.7.1"), "payments", false},
		{"super user despite DENY", req("root", "10.0.0.1"), "payments", true},
	} {
		if got := b.authorized(tc.r, write, topic, tc.res); got != tc.want {
			t.Errorf("%s: authorized = %v, want %v", tc.name, got, tc.want)
		}
	}
	z := b.authorizerFor(req("alice", "192.168.7.1"))
	if !z.enabled() || !z.allowedAny(write, topic) || z.allowedAny(kmsg.ACLOperationRead, topic) {
		t.Error("allowedAny")
	}
	if got, want := b.topicAuthorizedOps(req("alice", "192.168.7.1"), "payments"), int32(1<<write|1<<kmsg.ACLOperationDescribe); got != want {
		t.Errorf("topic operations %b, want %b", got, want)
	}

	// No authorizer: everything, and every supported operation.
	off := &Broker{cfg: config.Default()}
	off.image.Store(&controller.Image{ACLs: set})
	if !off.authorized(req("bob", "10.0.0.1"), write, topic, "payments") || off.clusterAuthorizedOps(req("bob", "10.0.0.1")) != 1<<5|1<<7|1<<8|1<<9|1<<10|1<<11|1<<12 {
		t.Error("without an authorizer something was refused")
	}
}

// TestAuthorizerWaitsForTheLog: after a start, a check waits until the
// image has applied the metadata log as far as it went, and decides from
// that image, not the older one it started with.
func TestAuthorizerWaitsForTheLog(t *testing.T) {
	cfg := config.Default()
	if err := cfg.Set("authorizer.class.name", config.StandardAuthorizerClass); err != nil {
		t.Fatal(err)
	}
	b := &Broker{cfg: cfg, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), applied: make(chan struct{})}
	b.authorizer()
	b.authz.loadIndex = 5
	// The snapshot's image, before an ACL that allows alice to read.
	b.image.Store(&controller.Image{Index: 3})
	allowed := make(chan bool)
	go func() {
		allowed <- b.authorized(&protocol.Request{Conn: &protocol.ConnInfo{Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}},
			kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")
	}()
	if b.authz.loaded.Load() {
		t.Fatal("loaded before the image reached the log's end")
	}
	alice := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:ANONYMOUS", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	b.onApplyForTest(&controller.Image{Index: 5, ACLs: acl.NewSet([]acl.Entry{{ID: [16]byte{1}, Binding: alice}})})
	if !<-allowed {
		t.Fatal("decided from the image the broker started with")
	}
	if !b.authz.loaded.Load() {
		t.Fatal("not marked loaded")
	}
}

// onApplyForTest publishes img as onApply does, without reconciling.
func (b *Broker) onApplyForTest(img *controller.Image) {
	b.image.Store(img)
	b.appliedMu.Lock()
	close(b.applied)
	b.applied = make(chan struct{})
	b.appliedMu.Unlock()
}
