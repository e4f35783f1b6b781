package security

// ssl.principal.mapping.rules: Kafka's SslPrincipalMapper. A client
// certificate's subject, written as Java's X500Principal.getName() writes
// it (RFC 2253), goes through the rules in order; the first that matches
// names the principal:
//
//	DEFAULT                        the subject as it is
//	RULE:pattern/replacement/      the subject must match pattern whole;
//	RULE:pattern/replacement/L     replacement ($1, $2 … for groups) is the
//	RULE:pattern/replacement/U     name, lower- or upper-cased with L or U
//
// Rules are separated by commas (a comma inside a pattern or a
// replacement belongs to it; "\/" is a slash in either). No rule matching
// means no principal: Kafka then fails the connection.
//
// Patterns are Go regular expressions (RE2), which read Java's for what
// such rules use (groups, classes, lazy quantifiers, anchors);
// look-arounds and backreferences in a pattern are refused when the rules
// are parsed. One difference is left: Java's replaceAll also replaces an
// empty match right after a match that reaches the end of the subject, so
// an unanchored RULE:(.*)/x$1/ gives "xCN=…x" in Kafka and "xCN=…" here.

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicedev/sluice/protocol"
)

// ErrNoMappingRule is a subject no ssl.principal.mapping.rules rule
// applies to.
var ErrNoMappingRule = errors.New("security: no ssl.principal.mapping.rules rule applies")

// PrincipalMapper is parsed ssl.principal.mapping.rules.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	text        string // as Kafka's SslPrincipalMapper prints it
	isDefault   bool
	pattern     *regexp.Regexp // unanchored, for the replacement
	whole       *regexp.Regexp // anchored at both ends: must match
	replacement string
	lower       bool
	upper       bool
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules; an empty
// string is Kafka's default, DEFAULT.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	s = strings.TrimSpace(s)
	if s == "" {
		s = "DEFAULT"
	}
	for i := 0; i < len(s); {
		i = skipSpace(s, i)
		if i == len(s) {
			break
		}
		if s[i] == ',' { // an empty rule is ignored
			i++
			continue
		}
		var r mappingRule
		start := i
		switch {
		case strings.HasPrefix(s[i:], "DEFAULT"):
			r.isDefault, r.text = true, "DEFAULT"
			i += len("DEFAULT")
		case strings.HasPrefix(s[i:], "RULE:"):
			i += len("RULE:")
			var pattern, replacement string
			var ok bool
			if pattern, i, ok = ruleField(s, i); !ok {
				return nil, fmt.Errorf("security: ssl.principal.mapping.rules: invalid rule %q: no '/' after its pattern", s[start:])
			}
			if replacement, i, ok = ruleField(s, i); !ok {
				return nil, fmt.Errorf("security: ssl.principal.mapping.rules: invalid rule %q: no '/' after its replacement", s[start:])
			}
			if i < len(s) && (s[i] == 'L' || s[i] == 'U') {
				r.lower, r.upper = s[i] == 'L', s[i] == 'U'
				i++
			}
			var err error
			if r.pattern, err = regexp.Compile(pattern); err != nil {
				return nil, fmt.Errorf("security: ssl.principal.mapping.rules: pattern %q: %w (patterns are RE2: no look-arounds or backreferences)", pattern, err)
			}
			r.whole = regexp.MustCompile(`^(?:` + pattern + `)$`)
			if err := checkReplacement(replacement); err != nil {
				return nil, fmt.Errorf("security: ssl.principal.mapping.rules: replacement %q: %w", replacement, err)
			}
			r.replacement = replacement
			r.text = "RULE:" + pattern + "/" + replacement
			if r.lower {
				r.text += "/L"
			} else if r.upper {
				r.text += "/U"
			}
		default:
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			return nil, fmt.Errorf("security: ssl.principal.mapping.rules: invalid rule %q", strings.TrimSpace(s[i:i+end]))
		}
		// Only spaces, then a comma or the end, may follow a rule.
		j := skipSpace(s, i)
		if j < len(s) && s[j] != ',' {
			end := strings.IndexByte(s[j:], ',')
			if end < 0 {
				end = len(s) - j
			}
			return nil, fmt.Errorf("security: ssl.principal.mapping.rules: invalid rule %q, unmatched substring %q", strings.TrimSpace(s[start:j+end]), s[i:j+end])
		}
		m.rules = append(m.rules, r)
		if j < len(s) {
			j++ // the comma
		}
		i = j
	}
	return m, nil
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f') {
		i++
	}
	return i
}

// ruleField reads a rule's pattern or replacement from s[i:] up to an
// unescaped '/', which it consumes; escapes are kept as written (the
// pattern and the replacement each read them in their own way).
func ruleField(s string, i int) (field string, next int, ok bool) {
	start := i
	for i < len(s) {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return "", i, false
			}
			i += 2
		case '/':
			return s[start:i], i + 1, true
		default:
			i++
		}
	}
	return "", i, false
}

// checkReplacement refuses what Java's Matcher refuses in a replacement:
// a trailing backslash, and a '$' not followed by a group number or name.
func checkReplacement(r string) error {
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '\\':
			if i+1 >= len(r) {
				return errors.New("a trailing '\\' escapes nothing")
			}
			i++
		case '$':
			if i+1 >= len(r) || !(isDigit(r[i+1]) || r[i+1] == '{') {
				return errors.New("'$' must be followed by a group number (write \\$ for a dollar sign)")
			}
			if r[i+1] == '{' && !strings.Contains(r[i:], "}") {
				return errors.New("unclosed '${' group name")
			}
		}
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Map returns the principal name of a subject distinguished name (RFC
// 2253, as DistinguishedName writes it), or ErrNoMappingRule.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		name := r.replaceAll(dn)
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w to %s, rules %s", ErrNoMappingRule, dn, m)
}

// String lists the rules as Kafka's SslPrincipalMapper does, e.g.
// [RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT].
func (m *PrincipalMapper) String() string {
	texts := make([]string, len(m.rules))
	for i, r := range m.rules {
		texts[i] = r.text
	}
	return "[" + strings.Join(texts, ", ") + "]"
}

// replaceAll is Java's String.replaceAll(pattern, replacement) with
// Kafka's handling of back references past the last group: taken as
// literal text.
func (r *mappingRule) replaceAll(s string) string {
	var out strings.Builder
	last := 0
	for _, loc := range r.pattern.FindAllStringSubmatchIndex(s, -1) {
		out.WriteString(s[last:loc[0]])
		r.expand(&out, s, loc)
		last = loc[1]
	}
	out.WriteString(s[last:])
	return out.String()
}

// expand writes the replacement for one match (loc as FindSubmatchIndex
// gives it), reading '\x' as a literal x, '$n' as group n (Java's rule:
// more digits are taken while the number stays a group), '${name}' as a
// named group; a group number past the last group is literal text, as
// Kafka's escapeLiteralBackReferences makes it.
func (r *mappingRule) expand(out *strings.Builder, s string, loc []int) {
	groups := r.pattern.NumSubexp()
	group := func(n int) {
		if loc[2*n] >= 0 {
			out.WriteString(s[loc[2*n]:loc[2*n+1]])
		}
	}
	rep := r.replacement
	for i := 0; i < len(rep); i++ {
		c := rep[i]
		switch {
		case c == '\\' && i+1 < len(rep):
			i++
			out.WriteByte(rep[i])
		case c == '$' && i+1 < len(rep) && rep[i+1] == '{':
			end := strings.IndexByte(rep[i:], '}')
			name := rep[i+2 : i+end]
			if n := r.pattern.SubexpIndex(name); n >= 0 {
				group(n)
			} else {
				out.WriteString(rep[i : i+end+1])
			}
			i += end
		case c == '$' && i+1 < len(rep) && isDigit(rep[i+1]):
			j := i + 2
			n := int(rep[i+1] - '0')
			for j < len(rep) && isDigit(rep[j]) && n*10+int(rep[j]-'0') <= groups {
				n = n*10 + int(rep[j]-'0')
				j++
			}
			if n > groups {
				out.WriteString(rep[i:j])
			} else {
				group(n)
			}
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
}

// DistinguishedName writes a certificate's subject as Java's
// X500Principal.getName() does (RFC 2253), the string Kafka's principal
// builder maps: protocol.CertSubjectName, the one implementation (Go's
// pkix.Name.String() differs: it names SERIALNUMBER and POSTALCODE, does
// not escape '=' or a '#' past the first character, and escapes only the
// first of several leading spaces). The error is kept for callers; the
// subject of a parsed certificate always prints.
func DistinguishedName(cert *x509.Certificate) (string, error) {
	return protocol.CertSubjectName(cert), nil
}
