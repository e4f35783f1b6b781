package controller

// SCRAM credentials (issue 19): each user's salted SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials live in the metadata log, as Kafka's
// UserScramCredentialRecord does, so every broker authenticates a user
// once its image has the credential.
//
// The active controller validates an AlterUserScramCredentials request as
// Kafka's ScramControlManager does and writes every accepted change as one
// alterScramCmd (Kafka writes them as one atomic batch). A record holds
// what Kafka's holds: the salt, the iterations, StoredKey and ServerKey,
// computed here from the salted password the client sent (RFC 5802:
// StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key")). The salted password itself is never
// written.
//
// The image holds the credentials as a *ScramCredentials, built once per
// change and shared by every later image.

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM mechanisms as the protocol numbers them (Kafka's
// ScramMechanism.type()).
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// scramMinIterations and scramMaxIterations are the iteration counts an
// upsertion may have: Kafka's ScramMechanism.minIterations (4096 for both
// mechanisms) and ScramControlManager.MAX_ITERATIONS.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// ScramMechanismName is the SASL name of a mechanism number, "" for one
// that is not SCRAM-SHA-256 or SCRAM-SHA-512.
func ScramMechanismName(m int8) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// ScramMechanismOf is the number of a SASL mechanism name, 0 for none.
func ScramMechanismOf(name string) int8 {
	switch name {
	case "SCRAM-SHA-256":
		return ScramSHA256
	case "SCRAM-SHA-512":
		return ScramSHA512
	}
	return 0
}

// ScramCredential is one stored credential: never the password nor the
// salted password, only what a server needs to check a client's proof.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramCredentials is the set of SCRAM credentials in an image. It is
// never modified once in an image; its methods take a nil receiver as
// the empty set.
type ScramCredentials struct {
	users map[string]map[int8]ScramCredential
}

// Lookup returns user's credential for mechanism.
func (s *ScramCredentials) Lookup(user string, mechanism int8) (ScramCredential, bool) {
	if s == nil {
		return ScramCredential{}, false
	}
	c, ok := s.users[user][mechanism]
	return c, ok
}

// Users are the users with at least one credential, sorted.
func (s *ScramCredentials) Users() []string {
	if s == nil {
		return nil
	}
	users := make([]string, 0, len(s.users))
	for u := range s.users {
		users = append(users, u)
	}
	slices.Sort(users)
	return users
}

// ScramCredentialInfo is what DescribeUserScramCredentials tells of a
// credential: its mechanism and iterations.
type ScramCredentialInfo struct {
	Mechanism  int8
	Iterations int32
}

// Infos are user's credentials, SCRAM-SHA-256 first.
func (s *ScramCredentials) Infos(user string) []ScramCredentialInfo {
	if s == nil {
		return nil
	}
	var out []ScramCredentialInfo
	for _, m := range []int8{ScramSHA256, ScramSHA512} {
		if c, ok := s.users[user][m]; ok {
			out = append(out, ScramCredentialInfo{Mechanism: m, Iterations: c.Iterations})
		}
	}
	return out
}

// ScramUpsertion sets a user's credential for a mechanism, as an
// AlterUserScramCredentials upsertion carries it.
type ScramUpsertion struct {
	User           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramDeletion removes a user's credential for a mechanism.
type ScramDeletion struct {
	User      string
	Mechanism int8
}

// ScramResult is the outcome for one user of an AlterUserScramCredentials
// request.
type ScramResult struct {
	User string
	Err  error
}

// AlterUserScramCredentials validates deletions and upsertions as Kafka's
// ScramControlManager does and writes every accepted one in one command.
// Each user named gets one result, with Kafka's errors:
//
//   - an empty user name: UNACCEPTABLE_CREDENTIAL "Username must not be
//     empty";
//   - a mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512):
//     UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
//   - an upsertion of fewer than 4096 or more than 16384 iterations:
//     UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations";
//   - a deletion of a credential that does not exist: RESOURCE_NOT_FOUND
//     "Attempt to delete a user credential that does not exist";
//   - a user named by more than one deletion or upsertion:
//     DUPLICATE_RESOURCE "A user credential cannot be altered twice in the
//     same request", and none of that user's changes is made.
//
// Results come in Kafka's order: the accepted deletions, the accepted
// upsertions, then the errors, each group in the iteration order of the
// java.util.HashMap Kafka keeps it in. A failure to commit (not the
// controller, timeout) is every accepted user's error.
func (c *Controller) AlterUserScramCredentials(ctx context.Context, dels []ScramDeletion, ups []ScramUpsertion) []ScramResult {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return ScramFailure(dels, ups, err)
	}
	current := c.Image().Scram

	toDelete := newJavaMap[ScramDeletion]()
	toUpsert := newJavaMap[ScramUpsertion]()
	errs := newJavaMap[error]()
	duplicate := fmt.Errorf("%w: A user credential cannot be altered twice in the same request", kerr.DuplicateResource)
	for _, d := range dels {
		if errs.has(d.User) {
			continue
		}
		if toDelete.remove(d.User) {
			errs.put(d.User, duplicate)
			continue
		}
		if err := validateScramUser(d.User, d.Mechanism); err != nil {
			errs.put(d.User, err)
			continue
		}
		if _, ok := current.Lookup(d.User, d.Mechanism); !ok {
			errs.put(d.User, fmt.Errorf("%w: Attempt to delete a user credential that does not exist", kerr.ResourceNotFound))
			continue
		}
		toDelete.put(d.User, d)
	}
	for _, u := range ups {
		if errs.has(u.User) {
			continue
		}
		if removedDel, removedUp := toDelete.remove(u.User), toUpsert.remove(u.User); removedDel || removedUp {
			errs.put(u.User, duplicate)
			continue
		}
		if err := validateScramUpsertion(u); err != nil {
			errs.put(u.User, err)
			continue
		}
		toUpsert.put(u.User, u)
	}

	var results []ScramResult
	var records []scramRecord
	for _, user := range toDelete.order() {
		d := toDelete.get(user)
		results = append(results, ScramResult{User: user})
		records = append(records, scramRecord{User: user, Mechanism: d.Mechanism, Remove: true})
	}
	for _, user := range toUpsert.order() {
		u := toUpsert.get(user)
		if len(u.SaltedPassword) == 0 {
			// Kafka's HMAC of an empty key fails ("Empty key") and
			// the user gets that unexpected error.
			errs.put(user, fmt.Errorf("%w: Empty key", kerr.UnknownServerError))
			continue
		}
		results = append(results, ScramResult{User: user})
		stored, server := scramKeys(u.Mechanism, u.SaltedPassword)
		records = append(records, scramRecord{User: user, Mechanism: u.Mechanism, Salt: u.Salt, StoredKey: stored, ServerKey: server, Iterations: u.Iterations})
	}
	accepted := len(results)
	for _, user := range errs.order() {
		results = append(results, ScramResult{User: user, Err: errs.get(user)})
	}
	if len(records) == 0 {
		return results
	}
	if err := c.apply(ctx, alterScramCmd{Records: records}); err != nil {
		for i := range results[:accepted] {
			results[i].Err = err
		}
	}
	return results
}

// ScramFailure is the answer to a request that failed as a whole with err
// (Kafka's AlterUserScramCredentialsRequest.getErrorResponse): every
// distinct user named, sorted, with err.
func ScramFailure(dels []ScramDeletion, ups []ScramUpsertion, err error) []ScramResult {
	var users []string
	for _, d := range dels {
		users = append(users, d.User)
	}
	for _, u := range ups {
		users = append(users, u.User)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	results := make([]ScramResult, 0, len(users))
	for _, u := range users {
		results = append(results, ScramResult{User: u, Err: err})
	}
	return results
}

func validateScramUser(user string, mechanism int8) error {
	if user == "" {
		return fmt.Errorf("%w: Username must not be empty", kerr.UnacceptableCredential)
	}
	if ScramMechanismName(mechanism) == "" {
		return fmt.Errorf("%w: Unknown SCRAM mechanism", kerr.UnsupportedSaslMechanism)
	}
	return nil
}

func validateScramUpsertion(u ScramUpsertion) error {
	if err := validateScramUser(u.User, u.Mechanism); err != nil {
		return err
	}
	if u.Iterations < scramMinIterations {
		return fmt.Errorf("%w: Too few iterations", kerr.UnacceptableCredential)
	}
	if u.Iterations > scramMaxIterations {
		return fmt.Errorf("%w: Too many iterations", kerr.UnacceptableCredential)
	}
	return nil
}

// scramKeys derives StoredKey and ServerKey from a salted password
// (RFC 5802 section 3).
func scramKeys(mechanism int8, salted []byte) (stored, server []byte) {
	h := sha256.New
	if mechanism == ScramSHA512 {
		h = sha512.New
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	sum := func(hf func() hash.Hash, b []byte) []byte { x := hf(); x.Write(b); return x.Sum(nil) }
	return sum(h, clientKey), mac(salted, "Server Key")
}

// javaMap keeps string keys in the iteration order of a
// java.util.HashMap of default capacity filled with the same puts and
// removes: by bucket of the spread String.hashCode in the largest table
// the map grew to, then by insertion. Kafka answers from such maps.
type javaMap[V any] struct {
	vals    map[string]V
	seq     map[string]int
	next    int
	maxSize int
}

func newJavaMap[V any]() *javaMap[V] {
	return &javaMap[V]{vals: map[string]V{}, seq: map[string]int{}}
}

func (m *javaMap[V]) has(k string) bool { _, ok := m.vals[k]; return ok }
func (m *javaMap[V]) get(k string) V    { return m.vals[k] }

func (m *javaMap[V]) put(k string, v V) {
	if _, ok := m.vals[k]; !ok {
		m.seq[k] = m.next
		m.next++
	}
	m.vals[k] = v
	m.maxSize = max(m.maxSize, len(m.vals))
}

func (m *javaMap[V]) remove(k string) bool {
	if _, ok := m.vals[k]; !ok {
		return false
	}
	delete(m.vals, k)
	delete(m.seq, k)
	return true
}

func (m *javaMap[V]) order() []string {
	table := 16
	for table*3/4 < m.maxSize {
		table <<= 1
	}
	keys := make([]string, 0, len(m.vals))
	for k := range m.vals {
		keys = append(keys, k)
	}
	bucket := func(k string) uint32 {
		h := javaStringHash(k)
		return (h ^ h>>16) & uint32(table-1)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(bucket(a), bucket(b)); c != 0 {
			return c
		}
		return cmp.Compare(m.seq[a], m.seq[b])
	})
	return keys
}

// JavaHashMapOrder is keys (distinct) in the iteration order of a
// java.util.HashMap of default capacity they were put into in turn, as
// Kafka's ScramImage.describe answers users.
func JavaHashMapOrder(keys []string) []string {
	m := newJavaMap[struct{}]()
	for _, k := range keys {
		m.put(k, struct{}{})
	}
	return m.order()
}

// alterScramCmd sets or removes SCRAM credentials, Kafka's
// UserScramCredentialRecords and RemoveUserScramCredentialRecords of one
// AlterUserScramCredentials request, applied together.
type alterScramCmd struct {
	Records []scramRecord `json:"records"`
}

func (alterScramCmd) commandType() commandType { return cmdAlterScram }

// scramRecord is one credential as the log and snapshots hold it: Kafka's
// UserScramCredentialRecord, or with Remove its
// RemoveUserScramCredentialRecord. Byte fields are base64 in JSON.
type scramRecord struct {
	User       string `json:"user"`
	Mechanism  int8   `json:"mechanism"`
	Remove     bool   `json:"remove,omitempty"`
	Salt       []byte `json:"salt,omitempty"`
	StoredKey  []byte `json:"storedKey,omitempty"`
	ServerKey  []byte `json:"serverKey,omitempty"`
	Iterations int32  `json:"iterations,omitempty"`
}

func applyAlterScram(b *imageBuilder, index uint64, payload []byte) error {
	var c alterScramCmd
	decodePayload(cmdAlterScram, index, payload, &c)
	b.next.Scram = applyScramRecords(b.base.Scram, c.Records)
	return nil
}

// applyScramRecords returns the credentials of base with records applied,
// nil when none remain. base is not modified.
func applyScramRecords(base *ScramCredentials, records []scramRecord) *ScramCredentials {
	users := map[string]map[int8]ScramCredential{}
	if base != nil {
		for u, m := range base.users {
			users[u] = m // replaced, never modified, below
		}
	}
	for _, r := range records {
		m := make(map[int8]ScramCredential, len(users[r.User])+1)
		for k, v := range users[r.User] {
			m[k] = v
		}
		if r.Remove {
			delete(m, r.Mechanism)
		} else {
			m[r.Mechanism] = ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
		}
		if len(m) == 0 {
			delete(users, r.User)
		} else {
			users[r.User] = m
		}
	}
	if len(users) == 0 {
		return nil
	}
	return &ScramCredentials{users: users}
}

// scramSnapshotRecords are the records that rebuild s, in a stable order.
func scramSnapshotRecords(s *ScramCredentials) []scramRecord {
	var out []scramRecord
	for _, u := range s.Users() {
		for _, m := range []int8{ScramSHA256, ScramSHA512} {
			if c, ok := s.users[u][m]; ok {
				out = append(out, scramRecord{User: u, Mechanism: m, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
			}
		}
	}
	return out
}

func scramFromRecords(records []scramRecord) (*ScramCredentials, error) {
	for _, r := range records {
		if r.Remove || ScramMechanismName(r.Mechanism) == "" {
			return nil, fmt.Errorf("bad SCRAM credential record for %q", r.User)
		}
	}
	return applyScramRecords(nil, records), nil
}
