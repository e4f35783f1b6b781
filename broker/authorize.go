package broker

// Authorization of requests (issue 19, ACLs).
//
// With authorizer.class.name set (Kafka's StandardAuthorizer class name,
// or the legacy AclAuthorizer's; config refuses any other at start), every
// check asks package acl about the request's principal
// (r.Conn.Principal()) and client address (r.Conn.Remote), with the ACLs
// of the broker's reconciled metadata image, super.users and
// allow.everyone.if.no.acl.found; without it everything is allowed, as in
// Kafka without an authorizer. What each handler checks is
// authorize_requests.go's.
//
// The ACLs come from the image the broker has reconciled (b.metadata()),
// so a CreateAcls or DeleteAcls answered by this broker is in force for
// the next request it serves (read-your-writes, forward.go), and every
// other broker applies it once its own image has it.
//
// A request that checks many resources takes one requestAuthz
// (b.authorizerFor), which reads the principal, the address and the ACL
// set once.
//
// Loading. After a restart the image comes from the last snapshot first;
// the metadata log's later entries (ACL changes among them) are applied
// once raft learns they are committed. Until the image has applied every
// command the node had logged when it started (New builds the
// authorizer right after opening the metadata log, reading
// controller.LastCommandIndex), a check waits for it (at most authorizerLoadTimeout), so a revoked ACL is never
// honoured from a stale image, as Kafka's StandardAuthorizer refuses to
// decide before it has loaded (AuthorizerNotReadyException) and keeps
// client listeners closed until then.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
)

// authorizerState is the broker's authorizer, built from its config on
// first use: nil when authorizer.class.name is empty.
type authorizerState struct {
	once sync.Once
	a    *acl.Authorizer
	// loadIndex is the metadata log's last command when the authorizer
	// was built; loaded turns true once the image has applied it.
	loadIndex uint64
	loaded    atomic.Bool
}

// authorizerLoadTimeout bounds a check's wait for the metadata log to be
// applied after a start; past it the check decides from the image it has.
const authorizerLoadTimeout = 15 * time.Second

// authorizer returns the broker's authorizer, nil when none is configured.
func (b *Broker) authorizer() *acl.Authorizer {
	b.authz.once.Do(func() {
		if b.cfg.AuthorizerClassName == "" {
			return
		}
		users, err := acl.ParseSuperUsers(b.cfg.SuperUsers)
		if err != nil {
			// config refuses such a value at load; a Broker built by
			// hand gets no super users rather than a guess.
			b.logger.Error("super.users ignored", "err", err)
			users = nil
		}
		b.authz.a = acl.New(users, b.cfg.AllowEveryoneIfNoACLFound)
		if b.ctrl != nil {
			b.authz.loadIndex = b.ctrl.LastCommandIndex()
		}
	})
	return b.authz.a
}

// waitACLsLoaded returns once the image has applied the metadata log as
// far as it went when the authorizer was built, or the wait timed out
// (logged once), or the connection closed.
func (b *Broker) waitACLsLoaded(conn *protocol.ConnInfo) {
	if b.authz.loaded.Load() {
		return
	}
	if img := b.metadata(); img != nil && img.Index >= b.authz.loadIndex {
		b.authz.loaded.Store(true)
		return
	}
	ctx := context.Background()
	if conn != nil {
		ctx = conn.Context()
	}
	ctx, cancel := context.WithTimeout(ctx, authorizerLoadTimeout)
	defer cancel()
	if err := b.waitApplied(ctx, b.authz.loadIndex); err != nil {
		if ctx.Err() == context.DeadlineExceeded && b.authz.loaded.CompareAndSwap(false, true) {
			b.logger.Warn("authorizing from a metadata image that has not applied the whole metadata log",
				"log_end", b.authz.loadIndex, "applied", b.metadata().Index)
		}
		return
	}
	b.authz.loaded.Store(true)
}

// requestAuthz answers authorization questions about one request: its
// principal and address, against the ACLs of one image. The zero value
// (no authorizer) allows everything.
type requestAuthz struct {
	a   *acl.Authorizer
	set *acl.Set
	who acl.Requester
}

// authorizerFor is the request's requestAuthz.
func (b *Broker) authorizerFor(r *protocol.Request) requestAuthz {
	a := b.authorizer()
	if a == nil {
		return requestAuthz{}
	}
	var conn *protocol.ConnInfo
	if r != nil {
		conn = r.Conn
	}
	b.waitACLsLoaded(conn)
	z := requestAuthz{a: a}
	if img := b.metadata(); img != nil {
		z.set = img.ACLs
	}
	if r != nil && r.Conn != nil {
		z.who = acl.NewRequester(r.Conn.Principal().String(), r.Conn.Remote)
	} else {
		z.who = acl.Requester{Principal: protocol.Anonymous.String()}
	}
	return z
}

// enabled reports whether an authorizer is configured.
func (z requestAuthz) enabled() bool { return z.a != nil }

// allowed reports whether the request may perform op on the named
// resource of type rt.
func (z requestAuthz) allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if z.a == nil {
		return true
	}
	return z.a.Authorize(z.set, z.who, op, rt, name)
}

// allowedAny reports whether the request may perform op on some resource
// of type rt, as Kafka's Authorizer.authorizeByResourceType decides
// (InitProducerId's "WRITE on any topic" check).
func (z requestAuthz) allowedAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if z.a == nil {
		return true
	}
	return z.a.AuthorizeByResourceType(z.set, z.who, op, rt)
}

// ops is the KIP-430 bitfield of the operations of rt the request may
// perform on the named resource (AuthHelper.authorizedOperations): every
// operation the type supports when no authorizer is configured.
func (z requestAuthz) ops(rt kmsg.ACLResourceType, name string) int32 {
	supported := acl.SupportedOperations(rt)
	if z.a == nil {
		return opsBits(supported...)
	}
	return z.a.AuthorizedOps(z.set, z.who, rt, name, supported)
}

// authorized reports whether the request's principal may perform op on
// the named resource of type rt (the CLUSTER resource is named
// acl.ClusterName, "kafka-cluster").
func (b *Broker) authorized(r *protocol.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return b.authorizerFor(r).allowed(op, rt, name)
}

// authorizeByResourceType reports whether the request's principal may
// perform op on at least one resource of type rt (Kafka's
// authorizeByResourceType; see requestAuthz.allowedAny).
func (b *Broker) authorizeByResourceType(r *protocol.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return b.authorizerFor(r).allowedAny(op, rt)
}
