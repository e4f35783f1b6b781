package quotas

import (
	"maps"
	"slices"
	"strings"
)

// This file holds the client quotas in force (KIP-55): quota values set on
// entities, and which value a client is held to. It only answers
// questions; the metadata image builds a ClientConfig, the broker's
// enforcement asks it.

// Entity types, Kafka's ClientQuotaEntity names.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Quota keys, Kafka's QuotaConfig names.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// ClientKeys are the quota keys of user and client-id entities; an ip
// entity has ConnectionCreationRate only.
var ClientKeys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// Part is one component of an entity: absent, a named entity, or the
// <default> entity of its type (a null name in Kafka's protocol).
type Part struct {
	Set     bool   // the entity has this component
	Default bool   // the <default> entity of the type (Name is then "")
	Name    string // the name, when not Default
}

// Named is the part for a named entity.
func Named(name string) Part { return Part{Set: true, Name: name} }

// DefaultPart is the part for the <default> entity of a type.
func DefaultPart() Part { return Part{Set: true, Default: true} }

// String is the part as kafka-configs.sh prints a name: the name, or
// <default>.
func (p Part) String() string {
	if p.Default {
		return "<default>"
	}
	return p.Name
}

// matches reports whether a client called name falls under p.
func (p Part) matches(name string) bool {
	return p.Set && (p.Default || p.Name == name)
}

// Entity is a quota entity: a user, a client id, a user and client id, or
// an IP, each part named or <default>. Entity is comparable.
type Entity struct {
	User, ClientID, IP Part
}

// String is the entity as Kafka's tools name it, e.g.
// "user=alice, client-id=<default>".
func (e Entity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, EntityUser+"="+e.User.String())
	}
	if e.ClientID.Set {
		parts = append(parts, EntityClientID+"="+e.ClientID.String())
	}
	if e.IP.Set {
		parts = append(parts, EntityIP+"="+e.IP.String())
	}
	return strings.Join(parts, ", ")
}

// ClientConfig is an immutable set of client quotas: for each entity, its
// keys and values. The zero value and nil have no quotas.
type ClientConfig struct {
	quotas map[Entity]map[string]float64
}

// NewClientConfig builds a ClientConfig from entity → key → value; it
// copies what it is given and drops entities with no keys.
func NewClientConfig(quotas map[Entity]map[string]float64) *ClientConfig {
	c := &ClientConfig{quotas: make(map[Entity]map[string]float64, len(quotas))}
	for e, kv := range quotas {
		if len(kv) > 0 {
			c.quotas[e] = maps.Clone(kv)
		}
	}
	return c
}

// Entities lists the entities with at least one quota, in a stable order
// (by their String).
func (c *ClientConfig) Entities() []Entity {
	if c == nil {
		return nil
	}
	es := slices.Collect(maps.Keys(c.quotas))
	slices.SortFunc(es, func(a, b Entity) int { return strings.Compare(a.String(), b.String()) })
	return es
}

// Values are entity's quotas (key → value), nil if it has none. The map
// must not be modified.
func (c *ClientConfig) Values(e Entity) map[string]float64 {
	if c == nil {
		return nil
	}
	return c.quotas[e]
}

// Resolved is the quota a client is held to for one key.
type Resolved struct {
	Limit  float64
	Entity Entity // the entity the quota is configured on
	// User and ClientID are the client's own names for the parts of
	// Entity that are set ("" for the others): the clients that share
	// them share one rate, as they share one sensor in Kafka. A quota on
	// <default> users applies to each user on its own, a quota on a
	// named user to all of that user's client ids together.
	User, ClientID string
}

// Resolve finds the quota for key of a client with the given user
// principal and client id, in KIP-55's order (most specific first):
//
//	user=U, client-id=C
//	user=U, client-id=<default>
//	user=U
//	user=<default>, client-id=C
//	user=<default>, client-id=<default>
//	user=<default>
//	client-id=C
//	client-id=<default>
//
// ok is false when no entity sets key: the client is not limited.
func (c *ClientConfig) Resolve(user, clientID, key string) (Resolved, bool) {
	if c == nil || len(c.quotas) == 0 {
		return Resolved{}, false
	}
	for _, e := range [...]Entity{
		{User: Named(user), ClientID: Named(clientID)},
		{User: Named(user), ClientID: DefaultPart()},
		{User: Named(user)},
		{User: DefaultPart(), ClientID: Named(clientID)},
		{User: DefaultPart(), ClientID: DefaultPart()},
		{User: DefaultPart()},
		{ClientID: Named(clientID)},
		{ClientID: DefaultPart()},
	} {
		v, ok := c.quotas[e][key]
		if !ok {
			continue
		}
		r := Resolved{Limit: v, Entity: e}
		if e.User.matches(user) {
			r.User = user
		}
		if e.ClientID.matches(clientID) {
			r.ClientID = clientID
		}
		return r, true
	}
	return Resolved{}, false
}

// ResolveIP finds the connection_creation_rate quota of an IP address:
// the IP's own entity, else the <default> ip entity.
func (c *ClientConfig) ResolveIP(ip string) (float64, bool) {
	if c == nil {
		return 0, false
	}
	if v, ok := c.quotas[Entity{IP: Named(ip)}][ConnectionCreationRate]; ok {
		return v, true
	}
	v, ok := c.quotas[Entity{IP: DefaultPart()}][ConnectionCreationRate]
	return v, ok
}
