package controller

// Client quotas (KIP-55, issue 18): quota values set on user, client-id,
// (user, client-id) and ip entities live in the metadata log, as Kafka's
// ClientQuotaRecord does, so every broker applies a change once its image
// has it and every node rebuilds them from its log or snapshot.
//
// The active controller validates a batch of alterations (one
// AlterClientQuotas request) as Kafka's ClientQuotaControlManager does and
// writes the changes of every valid entity as one alterClientQuotasCmd:
// the batch is applied whole or not at all, as Kafka writes it as one
// atomic batch of records. Entities that fail validation change nothing
// and get their own error; the others are applied.
//
// The image holds the quotas as a *quotas.ClientConfig, built once per
// change of quotas and shared by every later image, so a broker reads them
// on every request without building anything.

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/quotas"
)

// QuotaComponent is one component of a client quota entity as a request
// names it: an entity type ("user", "client-id", "ip" or anything a client
// sent) and a name, nil for the <default> entity of the type.
type QuotaComponent struct {
	Type string
	Name *string
}

// ClientQuotaOp is one change of an entity's quota: set Key to Value, or
// remove Key.
type ClientQuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// ClientQuotaAlteration is the changes of one entity, as an
// AlterClientQuotas request entry carries them.
type ClientQuotaAlteration struct {
	Entity []QuotaComponent
	Ops    []ClientQuotaOp
}

// ClientQuotaResult is the outcome for one entity of a batch. Entity is
// the entity as Kafka keys it (one component per type, the last one a
// request gave for a type), in the order Kafka answers it (javaMapOrder).
type ClientQuotaResult struct {
	Entity []QuotaComponent
	Err    error
}

// quotaValueTypes are the quota keys of each entity kind and their
// ConfigDef types (Kafka's QuotaConfig.userAndClientQuotaConfigs and
// ipConfigs).
var (
	clientQuotaTypes = map[string]string{
		quotas.ProducerByteRate:       "LONG",
		quotas.ConsumerByteRate:       "LONG",
		quotas.RequestPercentage:      "DOUBLE",
		quotas.ControllerMutationRate: "DOUBLE",
	}
	ipQuotaTypes = map[string]string{
		quotas.ConnectionCreationRate: "INT",
	}
)

// ipResolveTimeout bounds the host name lookup of an ip entity that is not
// an address (Kafka accepts any name InetAddress.getByName resolves).
const ipResolveTimeout = 2 * time.Second

// AlterClientQuotas validates a batch of alterations and applies the
// changes of every valid entity in one metadata command, or, when
// validateOnly, validates only. It answers one result per distinct entity,
// in the order Kafka's controller answers them (sortJavaResultOrder), with
// Kafka's errors:
//
//   - an entity with no component, with a component of a type other than
//     user, client-id or ip, with an empty name, or combining ip with
//     user or client-id: INVALID_REQUEST;
//   - an ip entity whose name is neither an address nor a resolvable host:
//     INVALID_REQUEST;
//   - a key the entity kind does not have, a value <= 0, a fractional
//     value for an integral key (producer_byte_rate, consumer_byte_rate,
//     connection_creation_rate) or one too large for its type:
//     INVALID_REQUEST;
//   - a key named twice in one entry, or an entity named by more than one
//     entry: INVALID_REQUEST "Ignoring duplicate entity ...". As in
//     Kafka, the first entry of a repeated entity is still applied when
//     valid; only its result is replaced by the error.
//
// Removing a key that is not set is no change and no error; setting a key
// to the value it has writes nothing. A failure to commit (not the
// controller, timeout) is every entity's error.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []ClientQuotaAlteration, validateOnly bool) []ClientQuotaResult {
	var (
		results []ClientQuotaResult
		index   = map[string]int{} // canonical entity → results index
		records []clientQuotaRecord
	)
	setResult := func(entity map[string]*string, components []QuotaComponent, err error) {
		key := entityKey(entity)
		if i, ok := index[key]; ok {
			results[i].Err = err
			return
		}
		index[key] = len(results)
		results = append(results, ClientQuotaResult{Entity: javaOrderedComponents(entity, components), Err: err})
	}

	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return ClientQuotaFailure(alts, err)
	}
	current := c.Image().ClientQuotas

	for _, a := range alts {
		entity := entityMap(a.Entity)
		// Kafka keeps one value per key; a key named twice marks the
		// entity as already answered, which the duplicate check below
		// then reports.
		changes := map[string]*float64{}
		var order []string
		dupKey := false
		for _, op := range a.Ops {
			if _, ok := changes[op.Key]; ok {
				dupKey = true
				continue
			}
			var v *float64
			if !op.Remove {
				v = &op.Value
			}
			changes[op.Key] = v
			order = append(order, op.Key)
		}
		if _, seen := index[entityKey(entity)]; seen || dupKey {
			setResult(entity, a.Entity, fmt.Errorf("%w: Ignoring duplicate entity %s", kerr.InvalidRequest, javaEntityString(entity, javaMapOrder(a.Entity))))
			continue
		}
		recs, err := c.validateClientQuotaEntity(ctx, current, entity, changes, order)
		if err == nil {
			records = append(records, recs...)
		}
		setResult(entity, a.Entity, err)
	}
	sortJavaResultOrder(results)
	if validateOnly || len(records) == 0 {
		return results
	}
	if err := c.apply(ctx, alterClientQuotasCmd{Records: records}); err != nil {
		for i := range results {
			results[i].Err = err
		}
	}
	return results
}

// sortJavaResultOrder puts results in the order Kafka's controller answers
// them: the iteration order of its result map, a java.util.HashMap of
// default capacity keyed by ClientQuotaEntity, filled in request order
// (whose hash is Objects.hash of the entity's type → name map).
func sortJavaResultOrder(results []ClientQuotaResult) {
	tableSize := 16
	for tableSize*3/4 < len(results) {
		tableSize <<= 1
	}
	bucket := func(r ClientQuotaResult) uint32 {
		var h uint32
		for _, c := range r.Entity {
			var v uint32
			if c.Name != nil {
				v = javaStringHash(*c.Name)
			}
			h += javaStringHash(c.Type) ^ v
		}
		h += 31
		return (h ^ h>>16) & uint32(tableSize-1)
	}
	slices.SortStableFunc(results, func(a, b ClientQuotaResult) int { return cmp.Compare(bucket(a), bucket(b)) })
}

// javaStringHash is Java's String.hashCode.
func javaStringHash(s string) uint32 {
	var h uint32
	for _, r := range utf16.Encode([]rune(s)) {
		h = 31*h + uint32(r)
	}
	return h
}

// ClientQuotaFailure is the answer to alts when the batch as a whole
// failed with err: one result per distinct entity, each with err.
func ClientQuotaFailure(alts []ClientQuotaAlteration, err error) []ClientQuotaResult {
	var results []ClientQuotaResult
	seen := map[string]bool{}
	for _, a := range alts {
		entity := entityMap(a.Entity)
		if key := entityKey(entity); !seen[key] {
			seen[key] = true
			results = append(results, ClientQuotaResult{Entity: javaOrderedComponents(entity, a.Entity), Err: err})
		}
	}
	return results
}

// validateClientQuotaEntity checks one entity and its changes against the
// quotas in force and returns the records that make them.
func (c *Controller) validateClientQuotaEntity(ctx context.Context, current *quotas.ClientConfig, entity map[string]*string, changes map[string]*float64, order []string) ([]clientQuotaRecord, error) {
	if len(entity) == 0 {
		return nil, fmt.Errorf("%w: Invalid empty client quota entity", kerr.InvalidRequest)
	}
	for _, typ := range sortedTypes(entity) {
		switch typ {
		case quotas.EntityUser, quotas.EntityClientID, quotas.EntityIP:
		default:
			return nil, fmt.Errorf("%w: Unhandled client quota entity type: %s", kerr.InvalidRequest, typ)
		}
		if name := entity[typ]; name != nil && *name == "" {
			return nil, fmt.Errorf("%w: Empty %s not supported", kerr.InvalidRequest, typ)
		}
	}
	_, hasUser := entity[quotas.EntityUser]
	_, hasClient := entity[quotas.EntityClientID]
	ip, hasIP := entity[quotas.EntityIP]
	keyTypes := clientQuotaTypes
	if hasIP {
		if hasUser || hasClient {
			// Kafka's message, its missing space included.
			return nil, fmt.Errorf("%w: Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId", kerr.InvalidRequest)
		}
		if ip != nil && !validIPEntity(ctx, *ip) {
			return nil, fmt.Errorf("%w: %s is not a valid IP or resolvable host.", kerr.InvalidRequest, *ip)
		}
		keyTypes = ipQuotaTypes
	}

	e := quotaEntity(entity)
	set := current.Values(e)
	var records []clientQuotaRecord
	for _, key := range order {
		v := changes[key]
		if v == nil {
			if _, ok := set[key]; ok {
				records = append(records, clientQuotaRecord{Entity: recordEntity(entity), Key: key, Remove: true})
			}
			continue
		}
		if err := validateQuotaValue(keyTypes, key, *v); err != nil {
			return nil, err
		}
		if old, ok := set[key]; ok && (old == *v || math.IsNaN(old) && math.IsNaN(*v)) {
			continue
		}
		records = append(records, clientQuotaRecord{Entity: recordEntity(entity), Key: key, Value: formatQuotaValue(*v)})
	}
	return records, nil
}

// validateQuotaValue checks one key and value as Kafka's controller does:
// the key must be one of the entity kind's, the value positive, and an
// integral key's value whole and within its type.
func validateQuotaValue(keyTypes map[string]string, key string, v float64) error {
	typ, ok := keyTypes[key]
	if !ok {
		return fmt.Errorf("%w: Invalid configuration key %s", kerr.InvalidRequest, key)
	}
	if v <= 0 {
		return fmt.Errorf("%w: Quota %s must be greater than 0", kerr.InvalidRequest, key)
	}
	switch typ {
	case "DOUBLE":
		return nil
	case "INT":
		if v > math.MaxInt32 {
			return fmt.Errorf("%w: Proposed value for %s is too large for an INT.", kerr.InvalidRequest, key)
		}
	case "LONG":
		if v > math.MaxInt64 {
			return fmt.Errorf("%w: Proposed value for %s is too large for a LONG.", kerr.InvalidRequest, key)
		}
	}
	// Java's % on doubles is math.Mod: NaN stays NaN and passes, as in
	// Kafka.
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return fmt.Errorf("%w: %s cannot be a fractional value.", kerr.InvalidRequest, key)
	}
	return nil
}

// validIPEntity reports whether name is an IP address or a host name that
// resolves, as InetAddress.getByName decides for Kafka.
func validIPEntity(ctx context.Context, name string) bool {
	if net.ParseIP(name) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, ipResolveTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}

// entityMap keys a request's entity components by type, the last
// component of a type winning, as Kafka builds a ClientQuotaEntity.
func entityMap(components []QuotaComponent) map[string]*string {
	m := make(map[string]*string, len(components))
	for _, c := range components {
		m[c.Type] = c.Name
	}
	return m
}

// typeRank orders entity types user, client-id, ip, then the rest.
func typeRank(typ string) int {
	switch typ {
	case quotas.EntityUser:
		return 0
	case quotas.EntityClientID:
		return 1
	case quotas.EntityIP:
		return 2
	}
	return 3
}

func sortedTypes(entity map[string]*string) []string {
	types := make([]string, 0, len(entity))
	for t := range entity {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b string) int {
		if ra, rb := typeRank(a), typeRank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return types
}

// javaOrderedComponents is entity's components in the order Kafka answers
// them for a request that named components (javaMapOrder).
func javaOrderedComponents(entity map[string]*string, components []QuotaComponent) []QuotaComponent {
	var out []QuotaComponent
	for _, t := range javaMapOrder(components) {
		out = append(out, QuotaComponent{Type: t, Name: entity[t]})
	}
	return out
}

// entityKey is a canonical string of an entity, for telling repeats apart.
func entityKey(entity map[string]*string) string {
	var sb strings.Builder
	for _, t := range sortedTypes(entity) {
		sb.WriteString(strconv.Quote(t))
		if n := entity[t]; n != nil {
			sb.WriteString("=" + strconv.Quote(*n))
		}
		sb.WriteString(";")
	}
	return sb.String()
}

// javaEntityString is the entity as Kafka's ClientQuotaEntity.toString
// prints it in its messages, e.g. "ClientQuotaEntity(entries={client-id=perf,
// user=null})", in the order of Kafka's hash map (javaMapOrder).
func javaEntityString(entity map[string]*string, order []string) string {
	var parts []string
	for _, t := range order {
		name := "null"
		if n := entity[t]; n != nil {
			name = *n
		}
		parts = append(parts, t+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// javaMapOrder is the order a java.util.HashMap created with capacity
// len(components) iterates the entity types of components put into it in
// turn, as Kafka builds a request's ClientQuotaEntity: by bucket (the
// spread String.hashCode masked by the table size, which doubles whenever
// the distinct keys exceed three quarters of it), then by first insertion.
// Kafka's messages and its answer's entity components come in this order.
func javaMapOrder(components []QuotaComponent) []string {
	tableSize := 1
	for tableSize < len(components) {
		tableSize <<= 1
	}
	var types []string
	seen := map[string]bool{}
	for _, c := range components {
		if seen[c.Type] {
			continue
		}
		seen[c.Type] = true
		types = append(types, c.Type)
		if len(types) > tableSize*3/4 {
			tableSize <<= 1
		}
	}
	bucket := func(s string) uint32 {
		h := javaStringHash(s)
		return (h ^ h>>16) & uint32(tableSize-1)
	}
	slices.SortStableFunc(types, func(a, b string) int { return cmp.Compare(bucket(a), bucket(b)) })
	return types
}

// quotaEntity is a validated entity (user, client-id and ip components
// only) as quotas.Entity.
func quotaEntity(entity map[string]*string) quotas.Entity {
	part := func(typ string) quotas.Part {
		name, ok := entity[typ]
		switch {
		case !ok:
			return quotas.Part{}
		case name == nil:
			return quotas.DefaultPart()
		default:
			return quotas.Named(*name)
		}
	}
	return quotas.Entity{User: part(quotas.EntityUser), ClientID: part(quotas.EntityClientID), IP: part(quotas.EntityIP)}
}

// alterClientQuotasCmd sets or removes quota values of entities, Kafka's
// ClientQuotaRecords of one AlterClientQuotas request, applied together.
type alterClientQuotasCmd struct {
	Records []clientQuotaRecord `json:"records"`
}

func (alterClientQuotasCmd) commandType() commandType { return cmdAlterClientQuotas }

// clientQuotaRecord is Kafka's ClientQuotaRecord: an entity, a key, and a
// value or a removal. Value is the float64 in its shortest exact decimal form
// (formatQuotaValue), a string so that NaN and +Inf fit, which JSON
// numbers cannot hold (Kafka's controller accepts NaN, and +Inf for a
// DOUBLE key).
type clientQuotaRecord struct {
	Entity []quotaEntityRecord `json:"entity"`
	Key    string              `json:"key"`
	Value  string              `json:"value,omitempty"`
	Remove bool                `json:"remove,omitempty"`
}

// quotaEntityRecord is one component of a record's entity; a nil Name is
// the <default> entity of the type.
type quotaEntityRecord struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

func recordEntity(entity map[string]*string) []quotaEntityRecord {
	var out []quotaEntityRecord
	for _, t := range sortedTypes(entity) {
		out = append(out, quotaEntityRecord{Type: t, Name: entity[t]})
	}
	return out
}

// formatQuotaValue renders v exactly: plainly (1048576, 0.5) when that is
// short, with an exponent otherwise, NaN and ±Inf as strconv spells them.
func formatQuotaValue(v float64) string {
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// applyAlterClientQuotas applies a batch of quota records: the image gets a
// new ClientConfig with every record applied in order.
func applyAlterClientQuotas(b *imageBuilder, index uint64, payload []byte) error {
	var c alterClientQuotasCmd
	decodePayload(cmdAlterClientQuotas, index, payload, &c)
	next, err := applyQuotaRecords(b.base.ClientQuotas, c.Records)
	if err != nil {
		panic(fmt.Sprintf("controller: %v at index %d: %v", cmdAlterClientQuotas, index, err))
	}
	b.next.ClientQuotas = next
	return nil
}

// applyQuotaRecords returns the quotas of base with records applied, nil
// when none remain.
func applyQuotaRecords(base *quotas.ClientConfig, records []clientQuotaRecord) (*quotas.ClientConfig, error) {
	all := map[quotas.Entity]map[string]float64{}
	for _, e := range base.Entities() {
		all[e] = base.Values(e) // replaced, never modified, below
	}
	for _, r := range records {
		m := map[string]*string{}
		for _, c := range r.Entity {
			m[c.Type] = c.Name
		}
		e := quotaEntity(m)
		kv := make(map[string]float64, len(all[e])+1)
		for k, v := range all[e] {
			kv[k] = v
		}
		if r.Remove {
			delete(kv, r.Key)
		} else {
			v, err := strconv.ParseFloat(r.Value, 64)
			if err != nil {
				return nil, fmt.Errorf("quota value %q of %s: %v", r.Value, r.Key, err)
			}
			kv[r.Key] = v
		}
		all[e] = kv
	}
	next := quotas.NewClientConfig(all)
	if len(next.Entities()) == 0 {
		return nil, nil
	}
	return next, nil
}

// quotaSnapshotRecords are the records that rebuild qs, in a stable order.
func quotaSnapshotRecords(qs *quotas.ClientConfig) []clientQuotaRecord {
	var out []clientQuotaRecord
	for _, e := range qs.Entities() {
		kv := qs.Values(e)
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, clientQuotaRecord{Entity: entityRecords(e), Key: k, Value: formatQuotaValue(kv[k])})
		}
	}
	return out
}

// entityRecords is a quotas.Entity as record components.
func entityRecords(e quotas.Entity) []quotaEntityRecord {
	var out []quotaEntityRecord
	add := func(typ string, p quotas.Part) {
		if !p.Set {
			return
		}
		var name *string
		if !p.Default {
			n := p.Name
			name = &n
		}
		out = append(out, quotaEntityRecord{Type: typ, Name: name})
	}
	add(quotas.EntityUser, e.User)
	add(quotas.EntityClientID, e.ClientID)
	add(quotas.EntityIP, e.IP)
	return out
}
