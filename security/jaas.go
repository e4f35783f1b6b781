package security

// JAAS configuration text, as Kafka's sasl.jaas.config and
// listener.name.<l>.<mechanism>.sasl.jaas.config hold it (Kafka's
// JaasConfig): one login module entry,
//
//	<LoginModule class> <flag> [<option>=<value> ...];
//
// where flag is required, requisite, sufficient or optional and a value
// is a word or a quoted string ("…" or '…', with backslash escapes).

import (
	"fmt"
	"strings"
	"unicode"
)

// Login module classes of the mechanisms sluice serves.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// JAASEntry is one parsed login module entry.
type JAASEntry struct {
	LoginModule string
	Flag        string // lower case
	Options     map[string]string
}

// ParseJAAS reads JAAS text holding exactly one login module entry, as
// Kafka requires of a sasl.jaas.config value. Errors never quote values:
// they may be passwords.
func ParseJAAS(s string) (JAASEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAASEntry{}, err
	}
	var entries []JAASEntry
	for len(toks) > 0 {
		if len(toks) < 2 || toks[0].kind != tokWord || toks[1].kind != tokWord {
			return JAASEntry{}, fmt.Errorf("security: JAAS config: expected a login module class and a control flag")
		}
		e := JAASEntry{LoginModule: toks[0].text, Flag: strings.ToLower(toks[1].text), Options: map[string]string{}}
		switch e.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return JAASEntry{}, fmt.Errorf("security: JAAS config: invalid control flag %q of %s", toks[1].text, e.LoginModule)
		}
		toks = toks[2:]
		for {
			if len(toks) == 0 {
				return JAASEntry{}, fmt.Errorf("security: JAAS config: the entry of %s does not end with ';'", e.LoginModule)
			}
			if toks[0].kind == tokSemicolon {
				toks = toks[1:]
				break
			}
			if len(toks) < 3 || toks[0].kind != tokWord || toks[1].kind != tokEquals || (toks[2].kind != tokWord && toks[2].kind != tokQuoted) {
				return JAASEntry{}, fmt.Errorf("security: JAAS config: expected option=value in the entry of %s", e.LoginModule)
			}
			e.Options[toks[0].text] = toks[2].text
			toks = toks[3:]
		}
		entries = append(entries, e)
	}
	if len(entries) != 1 {
		return JAASEntry{}, fmt.Errorf("security: JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	return entries[0], nil
}

// ParsePlainJAAS reads Kafka's PlainLoginModule JAAS text
// (org.apache.kafka.common.security.plain.PlainLoginModule required
// username="admin" password="admin-secret" user_admin="admin-secret";):
// the login's own username and password (what a broker sends to its
// peers) and the user_<name> passwords it accepts.
func ParsePlainJAAS(s string) (username, password string, users map[string]string, err error) {
	e, err := ParseJAAS(s)
	if err != nil {
		return "", "", nil, err
	}
	if e.LoginModule != PlainLoginModule {
		return "", "", nil, fmt.Errorf("security: JAAS config: login module %s is not %s", e.LoginModule, PlainLoginModule)
	}
	users = map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return e.Options["username"], e.Options["password"], users, nil
}

// ParseScramJAAS reads ScramLoginModule JAAS text: the username and
// password a client (a broker talking to its peers) logs in with.
func ParseScramJAAS(s string) (username, password string, err error) {
	e, err := ParseJAAS(s)
	if err != nil {
		return "", "", err
	}
	if e.LoginModule != ScramLoginModule {
		return "", "", fmt.Errorf("security: JAAS config: login module %s is not %s", e.LoginModule, ScramLoginModule)
	}
	return e.Options["username"], e.Options["password"], nil
}

// OAuthJAASOptions applies a listener's OAuthBearerLoginModule JAAS text
// to c: the unsecured validator's options
// (unsecuredValidatorPrincipalClaimName, unsecuredValidatorScopeClaimName,
// unsecuredValidatorRequiredScope, unsecuredValidatorAllowableClockSkewMs).
// Other options (the client side's unsecuredLoginStringClaim_* and the
// like) are ignored.
func OAuthJAASOptions(s string, c *OAuthConfig) error {
	e, err := ParseJAAS(s)
	if err != nil {
		return err
	}
	if e.LoginModule != OAuthBearerLoginModule {
		return fmt.Errorf("security: JAAS config: login module %s is not %s", e.LoginModule, OAuthBearerLoginModule)
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorPrincipalClaimName"]); v != "" {
		c.SubClaimName = v
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorScopeClaimName"]); v != "" {
		c.ScopeClaimName = v
	}
	if v := e.Options["unsecuredValidatorRequiredScope"]; strings.TrimSpace(v) != "" {
		c.RequiredScope = nil
		for _, sc := range strings.Fields(strings.ReplaceAll(v, ",", " ")) {
			c.RequiredScope = append(c.RequiredScope, sc)
		}
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorAllowableClockSkewMs"]); v != "" {
		var ms int64
		if _, err := fmt.Sscanf(v, "%d", &ms); err != nil || ms < 0 {
			return fmt.Errorf("security: JAAS config: unsecuredValidatorAllowableClockSkewMs must be a non-negative integer: %q", v)
		}
		c.UnsecuredClockSkew = msDuration(ms)
	}
	return nil
}

type jaasTokenKind int

const (
	tokWord jaasTokenKind = iota
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind jaasTokenKind
	text string
}

// jaasTokens splits JAAS text as Kafka's StreamTokenizer set-up does:
// words, quoted strings, '=' and ';'; // and /* */ comments are skipped.
func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	r := []rune(s)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '/' && i+1 < len(r) && r[i+1] == '/':
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(r) && r[i+1] == '*':
			j := i + 2
			for j+1 < len(r) && (r[j] != '*' || r[j+1] != '/') {
				j++
			}
			if j+1 >= len(r) {
				return nil, fmt.Errorf("security: JAAS config: unterminated comment")
			}
			i = j + 2
		case c == '=':
			toks = append(toks, jaasToken{kind: tokEquals})
			i++
		case c == ';':
			toks = append(toks, jaasToken{kind: tokSemicolon})
			i++
		case c == '"' || c == '\'':
			var sb strings.Builder
			i++
			closed := false
			for i < len(r) {
				if r[i] == c {
					closed = true
					i++
					break
				}
				if r[i] == '\\' && i+1 < len(r) {
					i++
					switch r[i] {
					case 'n':
						sb.WriteRune('\n')
					case 't':
						sb.WriteRune('\t')
					case 'r':
						sb.WriteRune('\r')
					default:
						sb.WriteRune(r[i])
					}
					i++
					continue
				}
				sb.WriteRune(r[i])
				i++
			}
			if !closed {
				return nil, fmt.Errorf("security: JAAS config: unterminated quoted value")
			}
			toks = append(toks, jaasToken{kind: tokQuoted, text: sb.String()})
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && r[j] != '=' && r[j] != ';' && r[j] != '"' && r[j] != '\'' {
				j++
			}
			toks = append(toks, jaasToken{kind: tokWord, text: string(r[i:j])})
			i = j
		}
	}
	return toks, nil
}
