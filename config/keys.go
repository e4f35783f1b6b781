package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Config types, numbered as Kafka's DescribeConfigs ConfigType (kmsg.ConfigType).
const (
	TypeBoolean  int8 = 1
	TypeString   int8 = 2
	TypeInt      int8 = 3
	TypeShort    int8 = 4
	TypeLong     int8 = 5
	TypeDouble   int8 = 6
	TypeList     int8 = 7
	TypeClass    int8 = 8
	TypePassword int8 = 9
)

// Config sources, numbered as Kafka's DescribeConfigs ConfigSource (kmsg.ConfigSource).
const (
	SourceDynamicTopic         int8 = 1
	SourceDynamicBroker        int8 = 2
	SourceDynamicDefaultBroker int8 = 3
	SourceStaticBroker         int8 = 4
	SourceDefault              int8 = 5
	SourceDynamicBrokerLogger  int8 = 6
)

// UpdateMode says whether a broker key can change without a restart, and at
// which level, as Kafka's documentation's "Update Mode" column does.
type UpdateMode int8

const (
	// ReadOnly keys take effect only from the file or overrides at start.
	ReadOnly UpdateMode = iota
	// PerBroker keys can be altered dynamically for one broker only.
	PerBroker
	// ClusterWide keys can be altered for one broker or as the cluster default.
	ClusterWide
)

// MinSegmentBytes is the smallest segment.bytes / log.segment.bytes sluice
// accepts. See the package doc for why it is below Kafka 4's 1 MiB.
const MinSegmentBytes = 14

// Sentinel errors wrapped by every error this package returns about a key.
var (
	ErrUnknownKey    = errors.New("config: unknown key")
	ErrInvalidValue  = errors.New("config: invalid value")
	ErrNotDynamic    = errors.New("config: key cannot be updated dynamically")
	ErrPerBrokerOnly = errors.New("config: key can only be set per broker")
)

// KeyError is the one error reported about one key. Its message names the key
// and, when known, where the value came from.
type KeyError struct {
	Key    string
	Detail string // what is wrong with the value; empty for unknown keys
	Where  string // "sluice.toml", "--override", ""
	Kind   error  // one of the sentinel errors
}

func (e *KeyError) Error() string {
	var s string
	if e.Kind == ErrUnknownKey {
		s = fmt.Sprintf("config: unknown key %q", e.Key)
	} else {
		s = fmt.Sprintf("config: %s: %s", e.Key, e.Detail)
	}
	if e.Where != "" {
		s += " (in " + e.Where + ")"
	}
	return s
}

// Unwrap returns the sentinel error.
func (e *KeyError) Unwrap() error { return e.Kind }

// checker inspects a value already normalized by its type and returns a
// description of what is wrong with it, or "".
type checker func(v string) string

// Status says what sluice does with a key it accepts (see KEYS.md).
type Status int8

const (
	// Supported keys are enforced: the value changes what sluice does.
	Supported Status = iota
	// Inert keys are accepted, stored and described but change nothing,
	// because the feature behind them cannot apply in sluice (a thread
	// pool of a design sluice does not have, Kerberos, KRaft's own raft).
	Inert
	// NotYet keys are described with Kafka's default, and any other value
	// is refused, at start-up and in AlterConfigs, until the issue that
	// builds the feature lands.
	NotYet
)

// String names the status as KEYS.md does.
func (s Status) String() string {
	switch s {
	case Inert:
		return "no effect in sluice"
	case NotYet:
		return "not supported yet"
	}
	return "supported"
}

// keyDef describes one broker key.
type keyDef struct {
	name      string
	typ       int8
	def       *string // nil: no default (DescribeConfigs reports null)
	mode      UpdateMode
	doc       string
	sensitive bool
	checks    []checker
	status    Status
	issue     int    // NotYet: the issue that builds the feature; 0 when none is filed
	why       string // Inert: why it cannot apply; NotYet: what is missing
	accept    []string
	extra     string // non-empty for a key Kafka 4.4's DescribeConfigs does not list: why sluice has it
	// atStart marks a supported key Kafka updates dynamically that
	// sluice reads only at start: a dynamic update is refused (why says so).
	atStart bool
}

// inert marks k accepted but without effect in sluice, for the reason why.
func (k keyDef) inert(why string) keyDef {
	k.status, k.why = Inert, why
	return k
}

// later marks k refused until issue (0: none filed yet) builds what: only
// its default is accepted.
func (k keyDef) later(issue int, what string) keyDef {
	k.status, k.issue, k.why = NotYet, issue, what
	def := ""
	if k.def != nil {
		def = *k.def
	}
	k.checks = append(slices.Clone(k.checks), notYet(def, notYetWhat(issue, what), k.accept...))
	return k
}

// startOnly marks k, a supported key Kafka can update dynamically, as
// read only at start in sluice: AlterConfigs refuses to change it, as not
// supported yet for the reason what.
func (k keyDef) startOnly(what string) keyDef {
	k.atStart, k.why = true, "read at start only; a dynamic update is not supported yet ("+notYetWhat(0, what)+")"
	return k
}

// alsoAccept names values besides the default that a NotYet key accepts
// because sluice already behaves that way; call it before later.
func (k keyDef) alsoAccept(values ...string) keyDef {
	k.accept = values
	return k
}

// sluiceOnly marks a key Kafka 4.4 does not list in DescribeConfigs, with
// the reason sluice keeps it.
func (k keyDef) sluiceOnly(reason string) keyDef {
	k.extra = reason
	return k
}

// notYetWhat is the parenthesis of a refusal: what is missing and the
// issue that brings it.
func notYetWhat(issue int, what string) string {
	if issue == 0 {
		return what + "; no issue filed yet"
	}
	return fmt.Sprintf("%s; issue %d", what, issue)
}

// v returns a pointer to s, for defaults in the key tables.
func v(s string) *string { return &s }

const (
	maxInt32 = "2147483647"
	maxInt64 = "9223372036854775807"
	maxFloat = "1.7976931348623157E308"
)

var typeNames = map[int8]string{
	TypeBoolean: "boolean", TypeString: "string", TypeInt: "int", TypeShort: "short",
	TypeLong: "long", TypeDouble: "double", TypeList: "list", TypeClass: "class", TypePassword: "password",
}

// normalize checks that raw parses as typ and returns it in a canonical form
// (booleans lower case, numbers trimmed, list items trimmed and comma-joined).
func normalize(typ int8, raw string) (string, string) {
	s := strings.TrimSpace(raw)
	bad := fmt.Sprintf("%q is not a valid %s", raw, typeNames[typ])
	switch typ {
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return "true", ""
		case "false":
			return "false", ""
		}
		return "", bad
	case TypeInt, TypeShort, TypeLong:
		bits := map[int8]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[typ]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return "", bad
		}
		return strconv.FormatInt(n, 10), ""
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return "", bad
		}
		return s, ""
	case TypeList:
		if s == "" {
			return "", ""
		}
		items := strings.Split(s, ",")
		for i := range items {
			items[i] = strings.TrimSpace(items[i])
		}
		return strings.Join(items, ","), ""
	default:
		return raw, ""
	}
}

// checkValue normalizes raw for the key and runs its checks.
func checkValue(typ int8, checks []checker, raw string) (string, string) {
	norm, bad := normalize(typ, raw)
	if bad != "" {
		return "", bad
	}
	for _, c := range checks {
		if bad := c(norm); bad != "" {
			return "", bad
		}
	}
	return norm, ""
}

// atLeast accepts numbers no smaller than min.
func atLeast(min int64) checker {
	return func(s string) string {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= min {
				return ""
			}
		} else if f, _ := strconv.ParseFloat(s, 64); f >= float64(min) {
			return ""
		}
		return fmt.Sprintf("%s is out of range: must be at least %d", s, min)
	}
}

// notYet accepts only the key's default (for a key without one, only an
// empty value): the Kafka feature behind the key is not built yet, and a
// setting sluice would silently ignore is a promise broken. The message
// names what is missing and which issue builds it.
func notYet(def, what string, also ...string) checker {
	return func(s string) string {
		if s == def || slices.Contains(also, s) {
			return ""
		}
		shown := def
		if def == "" {
			shown = "(none)"
		}
		if len(also) > 0 {
			return fmt.Sprintf("not supported yet (%s); only %s and %s are accepted", what, shown, strings.Join(also, ", "))
		}
		return fmt.Sprintf("not supported yet (%s); only the default %s is accepted", what, shown)
	}
}

// between accepts numbers in [lo, hi].
func between(lo, hi float64) checker {
	return func(s string) string {
		f, _ := strconv.ParseFloat(s, 64)
		if f < lo || f > hi {
			return fmt.Sprintf("%s is out of range: must be between %g and %g", s, lo, hi)
		}
		return ""
	}
}

// oneOf accepts exactly one of the given strings (for lists: each item).
func oneOf(allowed ...string) checker {
	return func(s string) string {
		if slices.Contains(allowed, s) {
			return ""
		}
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
}

// eachOf accepts a comma list whose every item is one of allowed.
func eachOf(allowed ...string) checker {
	return func(s string) string {
		if s == "" {
			return ""
		}
		for _, item := range strings.Split(s, ",") {
			if !slices.Contains(allowed, item) {
				return fmt.Sprintf("%q is not one of %s", item, strings.Join(allowed, ", "))
			}
		}
		return ""
	}
}

// nonEmpty rejects an empty list or string.
func nonEmpty(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return ""
}

// validListeners accepts a comma list of NAME://host:port.
func validListeners(s string) string {
	if _, err := ParseListeners(s); err != nil {
		return err.Error()
	}
	return ""
}

// validProtocolMap accepts NAME:PROTOCOL pairs with a known protocol.
func validProtocolMap(s string) string {
	if _, err := parseProtocolMap(s); err != nil {
		return err.Error()
	}
	return ""
}

// validThrottledReplicas accepts "*", "" or partition:broker pairs.
func validThrottledReplicas(s string) string {
	if s == "" || s == "*" {
		return ""
	}
	for _, item := range strings.Split(s, ",") {
		p, b, ok := strings.Cut(item, ":")
		_, e1 := strconv.ParseInt(p, 10, 32)
		_, e2 := strconv.ParseInt(b, 10, 32)
		if !ok || e1 != nil || e2 != nil {
			return fmt.Sprintf("%q is not \"*\" or a list of partition:broker", s)
		}
	}
	return ""
}
