package controller

// ACLs (issue 19): access control entries live in the metadata log, as
// Kafka's AccessControlEntryRecord and RemoveAccessControlEntryRecord do,
// so every broker's authorizer sees a change once its image has it, and
// every node rebuilds them from its log or snapshot after a restart.
//
// The active controller decides as Kafka's AclControlManager does:
//
//   - CreateACLs validates each binding (acl.ValidateCreate) and gives
//     each new one a random UUID id; a binding that already exists, or
//     that the request names twice, succeeds without a record. The
//     records of one request are one createACLsCmd, applied whole.
//   - DeleteACLs validates each filter (acl.ValidateDelete) and removes
//     every ACL a valid filter matches, in one deleteACLsCmd; an ACL
//     matched by several filters is listed by each and removed once. More
//     than maxACLRecordsPerOp removals fail the whole request.
//
// The image holds the ACLs as an immutable *ACLSet (an acl.Set, indexed
// for the authorizer), built once per change and shared by later images.

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
)

// ACLSet is the set of ACLs in an image: nil when there are none.
type ACLSet = acl.Set

// maxACLRecordsPerOp bounds the records of one ACL request, as Kafka's
// QuorumController.MAX_RECORDS_PER_USER_OP does.
const maxACLRecordsPerOp = 10000

// aclRecord is one ACL as the log and snapshots hold it: Kafka's
// AccessControlEntryRecord, codes as Kafka numbers them.
type aclRecord struct {
	ID           [16]byte `json:"id"`
	ResourceType int8     `json:"resourceType"`
	ResourceName string   `json:"resourceName"`
	PatternType  int8     `json:"patternType"`
	Principal    string   `json:"principal"`
	Host         string   `json:"host"`
	Operation    int8     `json:"operation"`
	Permission   int8     `json:"permission"`
}

func recordOf(e acl.Entry) aclRecord {
	return aclRecord{
		ID: e.ID, ResourceType: int8(e.ResourceType), ResourceName: e.ResourceName, PatternType: int8(e.PatternType),
		Principal: e.Principal, Host: e.Host, Operation: int8(e.Operation), Permission: int8(e.Permission),
	}
}

func (r aclRecord) entry() acl.Entry {
	return acl.Entry{ID: r.ID, Binding: acl.Binding{
		ResourceType: kmsg.ACLResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: kmsg.ACLOperation(r.Operation), Permission: kmsg.ACLPermissionType(r.Permission),
	}}
}

// createACLsCmd adds ACLs, the AccessControlEntryRecords of one CreateAcls
// request.
type createACLsCmd struct {
	Records []aclRecord `json:"records"`
}

func (createACLsCmd) commandType() commandType { return cmdCreateACLs }

// deleteACLsCmd removes ACLs by id, the RemoveAccessControlEntryRecords of
// one DeleteAcls request.
type deleteACLsCmd struct {
	IDs [][16]byte `json:"ids"`
}

func (deleteACLsCmd) commandType() commandType { return cmdDeleteACLs }

// ACLDeleteResult is the outcome of one DeleteAcls filter: an error, or
// the ACLs it removed.
type ACLDeleteResult struct {
	Err     error
	Deleted []acl.Binding
}

// CreateACLs validates bindings and creates the valid ones that do not
// exist yet, in one metadata command. It answers one error per binding, in
// order: nil for a binding created or already there, INVALID_REQUEST for
// one that fails validation (acl.ValidateCreate's messages), and the
// commit's error (NOT_CONTROLLER, a timeout) for every valid one when the
// command could not be written.
func (c *Controller) CreateACLs(ctx context.Context, bindings []acl.Binding) []error {
	errs := make([]error, len(bindings))
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	current := c.Image().ACLs
	var (
		records []aclRecord
		valid   []int
		batch   = map[acl.Binding]bool{}
		ids     = map[[16]byte]bool{}
	)
	for i, b := range bindings {
		if err := acl.ValidateCreate(b); err != nil {
			errs[i] = err
			continue
		}
		valid = append(valid, i)
		if current.Contains(b) || batch[b] {
			continue
		}
		batch[b] = true
		id := newUUID()
		for _, used := current.Get(id); used || ids[id]; _, used = current.Get(id) {
			id = newUUID()
		}
		ids[id] = true
		records = append(records, recordOf(acl.Entry{ID: id, Binding: b}))
	}
	if len(records) > maxACLRecordsPerOp {
		err := fmt.Errorf("%w: Cannot create more than %d acls in a single create operation.", kerr.InvalidRequest, maxACLRecordsPerOp)
		for _, i := range valid {
			errs[i] = err
		}
		return errs
	}
	if len(records) == 0 {
		return errs
	}
	if err := c.apply(ctx, createACLsCmd{Records: records}); err != nil {
		for _, i := range valid {
			errs[i] = err
		}
	}
	return errs
}

// DeleteACLs removes the ACLs that filters match, in one metadata command,
// and answers one result per filter, in order.
func (c *Controller) DeleteACLs(ctx context.Context, filters []acl.Filter) []ACLDeleteResult {
	results := make([]ACLDeleteResult, len(filters))
	fail := func(err error) []ACLDeleteResult {
		for i := range results {
			results[i] = ACLDeleteResult{Err: err}
		}
		return results
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return fail(err)
	}
	current := c.Image().ACLs
	var ids [][16]byte
	removing := map[[16]byte]bool{}
	for i, f := range filters {
		if err := acl.ValidateDelete(f); err != nil {
			results[i].Err = err
			continue
		}
		for _, e := range current.Match(f) {
			if !removing[e.ID] {
				if len(ids) >= maxACLRecordsPerOp {
					return fail(fmt.Errorf("%w: Cannot remove more than %d acls in a single delete operation.", kerr.InvalidRequest, maxACLRecordsPerOp))
				}
				removing[e.ID] = true
				ids = append(ids, e.ID)
			}
			results[i].Deleted = append(results[i].Deleted, e.Binding)
		}
	}
	if len(ids) == 0 {
		return results
	}
	if err := c.apply(ctx, deleteACLsCmd{IDs: ids}); err != nil {
		for i := range results {
			if results[i].Err == nil {
				results[i] = ACLDeleteResult{Err: err}
			}
		}
	}
	return results
}

// ACLDeleteFailure is the answer to n filters when the request as a whole
// failed with err.
func ACLDeleteFailure(n int, err error) []ACLDeleteResult {
	results := make([]ACLDeleteResult, n)
	for i := range results {
		results[i].Err = err
	}
	return results
}

// applyCreateACLs adds the command's ACLs to the image's set; an id or a
// binding the set already holds is skipped, so replaying is harmless.
func applyCreateACLs(b *imageBuilder, index uint64, payload []byte) error {
	var c createACLsCmd
	decodePayload(cmdCreateACLs, index, payload, &c)
	add := make([]acl.Entry, 0, len(c.Records))
	for _, r := range c.Records {
		add = append(add, r.entry())
	}
	b.next.ACLs = b.next.ACLs.With(add, nil)
	return nil
}

// applyDeleteACLs removes the command's ids from the image's set; an id it
// does not hold is skipped.
func applyDeleteACLs(b *imageBuilder, index uint64, payload []byte) error {
	var c deleteACLsCmd
	decodePayload(cmdDeleteACLs, index, payload, &c)
	b.next.ACLs = b.next.ACLs.With(nil, c.IDs)
	return nil
}

// aclSnapshotRecords are the records that rebuild s, in creation order.
func aclSnapshotRecords(s *ACLSet) []aclRecord {
	var out []aclRecord
	for _, e := range s.Entries() {
		out = append(out, recordOf(e))
	}
	return out
}

// aclsFromRecords rebuilds a snapshot's ACLs: nil when it has none.
func aclsFromRecords(records []aclRecord) (*ACLSet, error) {
	if len(records) == 0 {
		return nil, nil
	}
	entries := make([]acl.Entry, 0, len(records))
	for _, r := range records {
		entries = append(entries, r.entry())
	}
	return acl.NewSet(entries), nil
}

// LastCommandIndex is the index of the last command in this node's
// metadata log, committed or not (raft's own entries after it, its no-ops,
// barriers and configurations, never reach the image). An image whose
// Index has reached it holds every ACL change this node had logged: after
// a restart the broker's authorizer waits for that (the image first comes
// from the snapshot, and raft applies the entries after it only once it
// learns they are committed), as Kafka's StandardAuthorizer waits until it
// has loaded the metadata log. 0 when the log holds no command.
func (c *Controller) LastCommandIndex() uint64 {
	first, err := c.node.store.FirstIndex()
	if err != nil {
		return 0
	}
	for i := c.node.raft.LastIndex(); i >= first && i > 0; i-- {
		var l raft.Log
		if err := c.node.store.GetLog(i, &l); err != nil {
			return 0
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}
