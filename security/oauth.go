package security

// SASL/OAUTHBEARER (RFC 7628), as Kafka's OAuthBearerSaslServer serves it.
//
// The client's one message is the GS2 header, then key=value pairs each
// ended by %x01, then %x01: n,[a=<authzid>],\x01auth=Bearer <token>\x01
// [<extension>=<value>\x01...]\x01. A message that does not parse fails
// with the generic message. The token is validated:
//
//   - by default with Kafka's unsecured validator
//     (OAuthBearerUnsecuredValidatorCallbackHandler): an unsecured JWS
//     (three dot-separated base64url parts, header alg "none", an empty
//     signature), a string principal claim (sub, or the configured one), a
//     numeric exp that is not past (less the allowed clock skew), an iat,
//     if present, not in the future, exp after iat, and the required scope
//     (unsecuredValidatorRequiredScope) within the token's scope claim;
//   - with OAuthConfig.JWKSURL set, as Kafka's broker JWT validator does: a
//     JWS signed (never alg none) by a key of the JWKS, with exp and iat,
//     nbf/exp/iat checked with sasl.oauthbearer.clock.skew.seconds, the
//     expected issuer and one of the expected audiences when configured,
//     and a string principal claim.
//
// A token that fails validation is answered, as RFC 7628 section 3.2.2
// and Kafka do, with the error JSON ({"status":"invalid_token"}, or
// {"status":"insufficient_scope", "scope":"[…]"} for a missing scope) as
// the server's challenge; the client answers %x01 and the login then
// fails with that JSON as its message. An authorization id other than
// the token's principal fails with Kafka's message. Extensions are
// accepted, as Kafka's default validators accept every extension.
//
// The session's Expiry is the token's exp: protocol ends the session then,
// whatever connections.max.reauth.ms says (KIP-368).

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sluicedev/sluice/protocol"
)

const (
	defaultJWKSRefresh = time.Hour
	// jwksMinRefresh bounds how often an unknown key id fetches the
	// JWKS again, so a client cannot make the broker hammer the issuer.
	jwksMinRefresh = 10 * time.Second
	jwksMaxBytes   = 1 << 20
)

// oauthValidator validates bearer tokens with one listener's settings.
type oauthValidator struct {
	subClaim, scopeClaim string
	requiredScope        []string
	unsecuredSkew        time.Duration
	skew                 time.Duration
	issuer               string
	audience             []string
	jwks                 *jwksCache // nil: the unsecured validator
	now                  func() time.Time
}

func newOAuthValidator(c OAuthConfig) (*oauthValidator, error) {
	v := &oauthValidator{
		subClaim:      strings.TrimSpace(c.SubClaimName),
		scopeClaim:    strings.TrimSpace(c.ScopeClaimName),
		requiredScope: c.RequiredScope,
		unsecuredSkew: c.UnsecuredClockSkew,
		skew:          30 * time.Second,
		issuer:        c.ExpectedIssuer,
		audience:      c.ExpectedAudience,
		now:           time.Now,
	}
	if v.subClaim == "" {
		v.subClaim = "sub"
	}
	if v.scopeClaim == "" {
		v.scopeClaim = "scope"
	}
	if c.ClockSkewSeconds > 0 {
		v.skew = time.Duration(c.ClockSkewSeconds) * time.Second
	}
	if c.JWKSURL != "" {
		j, err := newJWKSCache(c)
		if err != nil {
			return nil, err
		}
		v.jwks = j
	}
	return v, nil
}

// oauthToken is a validated token.
type oauthToken struct {
	principal string
	expiry    time.Time
}

// tokenError is a failed validation: the RFC 7628 status and, for a
// missing scope, the scope required. reason is for logs only.
type tokenError struct {
	status, scope, reason string
}

func (e *tokenError) Error() string { return e.reason }

func invalidToken(format string, args ...any) *tokenError {
	return &tokenError{status: "invalid_token", reason: fmt.Sprintf(format, args...)}
}

// json is the error JSON Kafka's OAuthBearerSaslServer answers with.
func (e *tokenError) json() string {
	s := fmt.Sprintf(`{"status":"%s"`, e.status)
	if e.scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, e.scope)
	}
	return s + "}"
}

func (v *oauthValidator) validate(ctx context.Context, token string) (oauthToken, *tokenError) {
	if v.jwks != nil {
		return v.validateSigned(ctx, token)
	}
	return v.validateUnsecured(token)
}

// validateUnsecured is Kafka's OAuthBearerUnsecuredJws plus
// OAuthBearerUnsecuredValidatorCallbackHandler's checks.
func (v *oauthValidator) validateUnsecured(token string) (oauthToken, *tokenError) {
	if strings.Contains(token, "..") {
		return oauthToken{}, invalidToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return oauthToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := decodeJWTPart(parts[0])
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	claims, err := decodeJWTPart(parts[1])
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return oauthToken{}, invalidToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return oauthToken{}, invalidToken("Unsecured JWS must not contain a digital signature")
	}
	scope, terr := scopeOf(claims, v.scopeClaim)
	if terr != nil {
		return oauthToken{}, terr
	}
	exp, ok, terr := numberClaim(claims, "exp")
	if terr != nil {
		return oauthToken{}, terr
	}
	if !ok {
		return oauthToken{}, invalidToken("No expiration time in JWT")
	}
	rawPrincipal := claims[v.subClaim]
	principal, isString := rawPrincipal.(string)
	if rawPrincipal != nil && !isString {
		return oauthToken{}, invalidToken("The '%s' claim was not of type String", v.subClaim)
	}
	if strings.TrimSpace(principal) == "" {
		return oauthToken{}, invalidToken("No principal name in JWT claim: %s", v.subClaim)
	}
	iat, hasIat, terr := numberClaim(claims, "iat")
	if terr != nil {
		return oauthToken{}, terr
	}
	nowMs := v.now().UnixMilli()
	skewMs := v.unsecuredSkew.Milliseconds()
	if hasIat && secondsToMs(iat) > nowMs+skewMs {
		return oauthToken{}, invalidToken("The Issued At value (%v seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", iat, nowMs, skewMs)
	}
	expMs := secondsToMs(exp)
	if nowMs-skewMs >= expMs {
		return oauthToken{}, invalidToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%v seconds)", nowMs, skewMs, exp)
	}
	if hasIat && expMs <= secondsToMs(iat) {
		return oauthToken{}, invalidToken("The Expiration Time time (%v seconds) was not after the Issued At time (%v seconds)", exp, iat)
	}
	for _, want := range v.requiredScope {
		if !slices.Contains(scope, want) {
			return oauthToken{}, &tokenError{
				status: "insufficient_scope",
				scope:  "[" + strings.Join(v.requiredScope, ", ") + "]",
				reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s)", scope, want),
			}
		}
	}
	return oauthToken{principal: principal, expiry: time.UnixMilli(expMs)}, nil
}

// decodeJWTPart decodes one base64url (or, as Kafka's decoder takes it,
// base64) part of a JWS into a JSON object.
func decodeJWTPart(s string) (map[string]any, error) {
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("malformed Base64 URL encoded value")
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, errors.New("malformed JSON")
	}
	return m, nil
}

func numberClaim(claims map[string]any, name string) (float64, bool, *tokenError) {
	v, ok := claims[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, invalidToken("The '%s' claim was not of type Number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, invalidToken("The '%s' claim was not of type Number", name)
	}
	return f, true, nil
}

func secondsToMs(s float64) int64 { return int64(math.Round(s * 1000)) }

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// scopeOf is the token's scope: a string claim is one scope (trimmed), a
// list its non-blank elements.
func scopeOf(claims map[string]any, name string) ([]string, *tokenError) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}, nil
		}
		return nil, nil
	case []any:
		var out []string
		for _, e := range v {
			s := strings.TrimSpace(fmt.Sprint(e))
			if s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	default:
		return nil, invalidToken("The '%s' claim was not of type List", name)
	}
}

// signedAlgorithms are the JWS algorithms a JWKS-validated token may use.
var signedAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// validateSigned checks a signed JWT against the JWKS.
func (v *oauthValidator) validateSigned(ctx context.Context, token string) (oauthToken, *tokenError) {
	tok, err := jwt.ParseSigned(token, signedAlgorithms)
	if err != nil {
		return oauthToken{}, invalidToken("malformed or unsigned JWT: %v", err)
	}
	if len(tok.Headers) != 1 {
		return oauthToken{}, invalidToken("JWT must have one signature")
	}
	key, err := v.jwks.key(ctx, tok.Headers[0].KeyID, string(tok.Headers[0].Algorithm))
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	var std jwt.Claims
	var raw map[string]any
	if err := tok.Claims(key, &std, &raw); err != nil {
		return oauthToken{}, invalidToken("JWT signature: %v", err)
	}
	if std.Expiry == nil {
		return oauthToken{}, invalidToken("No Expiration Time (exp) claim present")
	}
	if std.IssuedAt == nil {
		return oauthToken{}, invalidToken("No Issued At (iat) claim present")
	}
	exp := jwt.Expected{Issuer: v.issuer, AnyAudience: v.audience, Time: v.now()}
	if err := std.ValidateWithLeeway(exp, v.skew); err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if !v.now().Add(-v.skew).Before(std.Expiry.Time()) {
		return oauthToken{}, invalidToken("token expired")
	}
	principal, _ := raw[v.subClaim].(string)
	if strings.TrimSpace(principal) == "" {
		return oauthToken{}, invalidToken("No principal name in JWT claim: %s", v.subClaim)
	}
	return oauthToken{principal: principal, expiry: std.Expiry.Time()}, nil
}

// jwksCache holds the keys of a JWKS endpoint (https://) or file
// (file://), fetched when first needed and again after refresh, or
// sooner when a token names a key id the set lacks.
type jwksCache struct {
	url     *url.URL
	client  *http.Client
	refresh time.Duration
	now     func() time.Time

	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time
}

func newJWKSCache(c OAuthConfig) (*jwksCache, error) {
	u, err := url.Parse(c.JWKSURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "file" && u.Scheme != "http") {
		return nil, fmt.Errorf("security: sasl.oauthbearer.jwks.endpoint.url must be an https://, http:// or file:// URL")
	}
	j := &jwksCache{url: u, client: c.HTTPClient, refresh: c.JWKSRefresh, now: time.Now}
	if j.refresh <= 0 {
		j.refresh = defaultJWKSRefresh
	}
	if j.client == nil {
		j.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	}
	if u.Scheme == "file" {
		// A file that cannot be read is a configuration error.
		if _, err := j.fetch(context.Background()); err != nil {
			return nil, err
		}
	}
	return j, nil
}

func (j *jwksCache) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	var body []byte
	if j.url.Scheme == "file" {
		b, err := os.ReadFile(j.url.Path)
		if err != nil {
			return nil, fmt.Errorf("security: reading JWKS file: %w", err)
		}
		body = b
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := j.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("security: fetching JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("security: fetching JWKS: HTTP %d", resp.StatusCode)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes)); err != nil {
			return nil, fmt.Errorf("security: fetching JWKS: %w", err)
		}
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("security: parsing JWKS: %w", err)
	}
	j.mu.Lock()
	j.keys, j.fetched = &set, j.now()
	j.mu.Unlock()
	return &set, nil
}

// key returns the public key of kid (any key usable for alg when the
// token names no key id and the set has exactly one such key).
func (j *jwksCache) key(ctx context.Context, kid, alg string) (any, error) {
	j.mu.Lock()
	keys, fetched := j.keys, j.fetched
	j.mu.Unlock()
	age := j.now().Sub(fetched)
	if keys == nil || age >= j.refresh {
		if k, err := j.fetch(ctx); err == nil {
			keys = k
		} else if keys == nil {
			return nil, err
		}
	} else if findKey(keys, kid, alg) == nil && age >= jwksMinRefresh {
		if k, err := j.fetch(ctx); err == nil {
			keys = k
		}
	}
	k := findKey(keys, kid, alg)
	if k == nil {
		return nil, fmt.Errorf("no key in the JWKS for key id %q", kid)
	}
	return k.Public().Key, nil
}

func findKey(set *jose.JSONWebKeySet, kid, alg string) *jose.JSONWebKey {
	var match []*jose.JSONWebKey
	for i := range set.Keys {
		k := &set.Keys[i]
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		if kid != "" && k.KeyID != kid {
			continue
		}
		match = append(match, k)
	}
	if len(match) != 1 {
		return nil
	}
	return match[0]
}

// The client initial response (RFC 7628 section 3.1) as Kafka's
// OAuthBearerClientInitialResponse reads it.
var (
	oauthInitialResponse = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuthValue       = regexp.MustCompile(`^(\w+) +([-_.a-zA-Z0-9]+)$`)
)

type oauthExchange struct {
	v         *oauthValidator
	reauth    bool
	errorJSON string
	done      bool
	principal protocol.Principal
	expiry    time.Time
}

func (x *oauthExchange) Step(ctx context.Context, in []byte) ([]byte, bool, error) {
	if x.done {
		return nil, false, errExchangeOver
	}
	if len(in) == 1 && in[0] == 0x01 && x.errorJSON != "" {
		// The client's %x01 after our error JSON: the login fails with
		// the JSON as its message.
		x.done = true
		return nil, false, &protocol.AuthFailedError{Msg: x.errorJSON}
	}
	x.errorJSON = ""
	m := oauthInitialResponse.FindSubmatch(in)
	if m == nil {
		x.done = true
		return nil, false, x.failed()
	}
	authzid := string(m[1])
	var token string
	found := false
	for _, kv := range strings.Split(string(m[2]), "\x01") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k != "auth" {
			continue // an extension: accepted, as Kafka's validators do
		}
		a := oauthAuthValue.FindStringSubmatch(val)
		if a == nil || !strings.EqualFold(a[1], "bearer") {
			x.done = true
			return nil, false, x.failed()
		}
		token, found = a[2], true
	}
	if !found {
		x.done = true
		return nil, false, x.failed()
	}
	tok, terr := x.v.validate(ctx, token)
	if terr != nil {
		x.errorJSON = terr.json()
		return []byte(x.errorJSON), false, nil
	}
	x.done = true
	if authzid != "" && authzid != tok.principal {
		return nil, false, &protocol.AuthFailedError{Msg: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, tok.principal)}
	}
	x.principal, x.expiry = user(tok.principal), tok.expiry
	return []byte{}, true, nil
}

func (x *oauthExchange) failed() error { return invalidCredentials(MechanismOAuthBearer, x.reauth) }

func (x *oauthExchange) Principal() protocol.Principal { return x.principal }
func (x *oauthExchange) Expiry() time.Time             { return x.expiry }
