package security

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"

	"github.com/sluicedev/sluice/protocol"
)

// exchange runs mech's client session (franz-go's) against the server's
// exchange until one side ends it. It returns the server's exchange and
// the server's error, or the client's error when the client gave up.
func exchange(t *testing.T, srv protocol.SASLServer, mech sasl.Mechanism) (protocol.SASLExchange, error) {
	t.Helper()
	ctx := context.Background()
	sess, in, err := mech.Authenticate(ctx, "localhost:9092")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	x, ok := srv.Start(mech.Name(), &protocol.ConnInfo{})
	if !ok {
		t.Fatalf("mechanism %s not started", mech.Name())
	}
	for range 10 {
		out, done, err := x.Step(ctx, in)
		if err != nil {
			return x, err
		}
		cdone, next, cerr := sess.Challenge(out)
		if done {
			if cerr != nil || !cdone {
				t.Fatalf("server done, client not: done=%v err=%v", cdone, cerr)
			}
			return x, nil
		}
		if cerr != nil {
			return x, cerr
		}
		if cdone {
			t.Fatalf("client done, server not")
		}
		in = next
	}
	t.Fatal("exchange did not end")
	return nil, nil
}

func wantAuthFailed(t *testing.T, err error, msg string) {
	t.Helper()
	var af *protocol.AuthFailedError
	if !errors.As(err, &af) {
		t.Fatalf("error %v (%T), want *protocol.AuthFailedError %q", err, err, msg)
	}
	if af.Msg != msg {
		t.Fatalf("message %q, want %q", af.Msg, msg)
	}
}

func TestSASLRefusesUnknownMechanism(t *testing.T) {
	if _, err := NewSASL(SASLConfig{Mechanisms: []string{"PLAIN", "GSSAPI"}}); err == nil {
		t.Fatal("GSSAPI accepted")
	}
	s, err := NewSASL(SASLConfig{Mechanisms: []string{"SCRAM-SHA-512", "PLAIN"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Mechanisms(); strings.Join(got, ",") != "SCRAM-SHA-512,PLAIN" {
		t.Fatalf("Mechanisms %v", got)
	}
	if _, ok := s.Start("OAUTHBEARER", nil); ok {
		t.Fatal("a mechanism not enabled was started")
	}
}

func TestPlain(t *testing.T) {
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"alice": "alice-secret", "bob": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := exchange(t, srv, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err != nil {
		t.Fatalf("good password: %v", err)
	}
	if p := x.Principal(); p.String() != "User:alice" {
		t.Fatalf("principal %v", p)
	}
	if !x.Expiry().IsZero() {
		t.Fatalf("PLAIN session has an expiry")
	}
	_, err = exchange(t, srv, plain.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err != nil {
		t.Fatalf("authzid equal to the user: %v", err)
	}
	const bad = "Authentication failed: Invalid username or password"
	_, err = exchange(t, srv, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())
	wantAuthFailed(t, err, bad)
	_, err = exchange(t, srv, plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism())
	wantAuthFailed(t, err, bad)
	_, err = exchange(t, srv, plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism())
	wantAuthFailed(t, err, "Authentication failed: Client requested an authorization id that is different from username")
	// A wrong authzid with a wrong password says only the password is wrong.
	_, err = exchange(t, srv, plain.Auth{Zid: "bob", User: "alice", Pass: "x"}.AsMechanism())
	wantAuthFailed(t, err, bad)

	// Malformed messages: the generic message.
	for _, in := range []string{"", "alice", "\x00alice", "\x00\x00secret", "\x00alice\x00"} {
		x, _ := srv.Start("PLAIN", nil)
		_, _, err := x.Step(context.Background(), []byte(in))
		wantAuthFailed(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN")
	}
	// The password is everything after the second NUL.
	srv2, _ := NewSASL(SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"u": "p\x00q"}})
	x, _ = srv2.Start("PLAIN", nil)
	if _, done, err := x.Step(context.Background(), []byte("\x00u\x00p\x00q")); err != nil || !done {
		t.Fatalf("password with NUL: done=%v err=%v", done, err)
	}
	// Re-authentication names its phase.
	conn := &protocol.ConnInfo{}
	conn.SetPrincipal(protocol.Principal{Type: "User", Name: "alice"})
	x, _ = srv.Start("PLAIN", conn)
	_, _, err = x.Step(context.Background(), []byte("\x00alice"))
	wantAuthFailed(t, err, "Authentication failed during re-authentication due to invalid credentials with SASL mechanism PLAIN")
}

// scramStore is a credential store with users' passwords salted as a
// client's AlterUserScramCredentials would.
func scramStore(t *testing.T, iterations int, users map[string]string) func(user, mechanism string) (ScramCredential, bool) {
	t.Helper()
	creds := map[string]ScramCredential{}
	for u, p := range users {
		for _, m := range []string{MechanismScramSHA256, MechanismScramSHA512} {
			hash := xscram.SHA256
			if m == MechanismScramSHA512 {
				hash = xscram.SHA512
			}
			c, err := hash.NewClient(u, p, "")
			if err != nil {
				t.Fatal(err)
			}
			salt := make([]byte, 16)
			rand.Read(salt)
			sc := c.GetStoredCredentials(xscram.KeyFactors{Salt: string(salt), Iters: iterations})
			creds[u+"/"+m] = ScramCredential{Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey, Iterations: iterations}
		}
	}
	return func(user, mechanism string) (ScramCredential, bool) {
		c, ok := creds[user+"/"+mechanism]
		return c, ok
	}
}

func TestScram(t *testing.T) {
	store := scramStore(t, 4096, map[string]string{"alice": "alice-secret", "bob": "bob-secret", "a,b=c": "x"})
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, Scram: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mech func(scram.Auth) sasl.Mechanism
	}{
		{"SCRAM-SHA-256", scram.Auth.AsSha256Mechanism},
		{"SCRAM-SHA-512", scram.Auth.AsSha512Mechanism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + tc.name
			x, err := exchange(t, srv, tc.mech(scram.Auth{User: "alice", Pass: "alice-secret"}))
			if err != nil {
				t.Fatalf("good password: %v", err)
			}
			if p := x.Principal(); p.String() != "User:alice" {
				t.Fatalf("principal %v", p)
			}
			if _, err := exchange(t, srv, tc.mech(scram.Auth{User: "a,b=c", Pass: "x"})); err != nil {
				t.Fatalf("user name with , and =: %v", err)
			}
			if _, err := exchange(t, srv, tc.mech(scram.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"})); err != nil {
				t.Fatalf("authzid equal to the user: %v", err)
			}
			_, err = exchange(t, srv, tc.mech(scram.Auth{User: "alice", Pass: "wrong"}))
			wantAuthFailed(t, err, generic)
			_, err = exchange(t, srv, tc.mech(scram.Auth{User: "mallory", Pass: "alice-secret"}))
			wantAuthFailed(t, err, generic)
			_, err = exchange(t, srv, tc.mech(scram.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}))
			wantAuthFailed(t, err, "Authentication failed: Client requested an authorization id that is different from username")
			// No delegation tokens: a tokenauth login fails.
			_, err = exchange(t, srv, tc.mech(scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}))
			wantAuthFailed(t, err, generic)
		})
	}
}

// TestScramTamperedProof changes one byte of a correct client proof.
func TestScramTamperedProof(t *testing.T) {
	store := scramStore(t, 4096, map[string]string{"alice": "alice-secret"})
	srv, _ := NewSASL(SASLConfig{Mechanisms: []string{"SCRAM-SHA-256"}, Scram: store})
	ctx := context.Background()
	for _, tamper := range []func([]byte) []byte{
		func(final []byte) []byte { // a proof bit flipped
			i := bytes.Index(final, []byte(",p=")) + 3
			proof, _ := base64.StdEncoding.DecodeString(string(final[i:]))
			proof[0] ^= 1
			return append(final[:i:i], base64.StdEncoding.EncodeToString(proof)...)
		},
		func(final []byte) []byte { // another nonce
			return bytes.Replace(final, []byte(",r="), []byte(",r=x"), 1)
		},
		func(final []byte) []byte { // a short proof
			i := bytes.Index(final, []byte(",p=")) + 3
			return append(final[:i:i], "AAAA"...)
		},
	} {
		sess, first, _ := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism().Authenticate(ctx, "")
		x, _ := srv.Start("SCRAM-SHA-256", nil)
		out, done, err := x.Step(ctx, first)
		if err != nil || done {
			t.Fatalf("first: done=%v err=%v", done, err)
		}
		_, final, err := sess.Challenge(out)
		if err != nil {
			t.Fatal(err)
		}
		_, done, err = x.Step(ctx, tamper(final))
		if done {
			t.Fatal("tampered final message accepted")
		}
		wantAuthFailed(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
	}
}

func TestScramBelowMinimumIterationsNotUsed(t *testing.T) {
	store := scramStore(t, 4095, map[string]string{"alice": "alice-secret"})
	srv, _ := NewSASL(SASLConfig{Mechanisms: []string{"SCRAM-SHA-256"}, Scram: store})
	_, err := exchange(t, srv, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	wantAuthFailed(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
}

func unsecuredJWT(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
	b, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

func TestOAuthUnsecured(t *testing.T) {
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"OAUTHBEARER"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	exp := now.Add(time.Hour).Unix()
	x, err := exchange(t, srv, oauth.Auth{Token: unsecuredJWT(map[string]any{"sub": "alice", "exp": exp, "iat": now.Unix()}), Extensions: map[string]string{"traceId": "123"}}.AsMechanism())
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	if x.Principal().String() != "User:alice" {
		t.Fatalf("principal %v", x.Principal())
	}
	if !x.Expiry().Equal(time.Unix(exp, 0)) {
		t.Fatalf("expiry %v, want %v", x.Expiry(), time.Unix(exp, 0))
	}
	invalid := `{"status":"invalid_token"}`
	for name, claims := range map[string]map[string]any{
		"no sub":         {"exp": exp},
		"blank sub":      {"sub": " ", "exp": exp},
		"numeric sub":    {"sub": 5, "exp": exp},
		"no exp":         {"sub": "alice"},
		"expired":        {"sub": "alice", "exp": now.Add(-time.Second).Unix()},
		"issued later":   {"sub": "alice", "exp": exp, "iat": now.Add(time.Minute).Unix()},
		"exp before iat": {"sub": "alice", "exp": now.Add(time.Minute).Unix(), "iat": now.Add(2 * time.Minute).Unix()},
	} {
		_, err := exchange(t, srv, oauth.Auth{Token: unsecuredJWT(claims)}.AsMechanism())
		if err == nil || err.Error() != invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The server's own view: the error JSON as a challenge, then the
	// failure with it as the message once the client answers %x01.
	ctx := context.Background()
	sx, _ := srv.Start("OAUTHBEARER", nil)
	_, first, _ := oauth.Auth{Token: unsecuredJWT(map[string]any{"exp": exp})}.AsMechanism().Authenticate(ctx, "")
	out, done, err := sx.Step(ctx, first)
	if err != nil || done || string(out) != `{"status":"invalid_token"}` {
		t.Fatalf("first answer %q done=%v err=%v", out, done, err)
	}
	_, _, err = sx.Step(ctx, []byte{1})
	wantAuthFailed(t, err, `{"status":"invalid_token"}`)

	// A signed token is not an unsecured one.
	signed := strings.TrimSuffix(unsecuredJWT(map[string]any{"sub": "alice", "exp": exp}), ".") + ".c2ln"
	if _, err := exchange(t, srv, oauth.Auth{Token: signed}.AsMechanism()); err == nil || err.Error() != invalid {
		t.Errorf("signature on an unsecured token: %v", err)
	}
	// An authzid other than the principal.
	_, err = exchange(t, srv, oauth.Auth{Zid: "bob", Token: unsecuredJWT(map[string]any{"sub": "alice", "exp": exp})}.AsMechanism())
	wantAuthFailed(t, err, "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)")
	// Messages that are not RFC 7628's.
	for _, in := range []string{"", "n,,\x01auth=Bearer\x01\x01", "n,,\x01auth=Basic abc\x01\x01", "y,,\x01auth=Bearer a.b.\x01\x01", "n,,\x01\x01", "n,,\x01auth=Bearer a.b.\x01"} {
		sx, _ := srv.Start("OAUTHBEARER", nil)
		_, _, err := sx.Step(ctx, []byte(in))
		wantAuthFailed(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")
	}
}

func TestOAuthUnsecuredOptions(t *testing.T) {
	var c OAuthConfig
	err := OAuthJAASOptions(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
		unsecuredLoginStringClaim_sub="admin"
		unsecuredValidatorPrincipalClaimName="user"
		unsecuredValidatorRequiredScope="read write"
		unsecuredValidatorAllowableClockSkewMs="60000";`, &c)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"OAUTHBEARER"}, OAuth: c})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	x, err := exchange(t, srv, oauth.Auth{Token: unsecuredJWT(map[string]any{"user": "carol", "exp": now.Add(-30 * time.Second).Unix(), "scope": []string{"read", "write", "x"}})}.AsMechanism())
	if err != nil {
		t.Fatalf("within the clock skew, with the scope: %v", err)
	}
	if x.Principal().Name != "carol" {
		t.Fatalf("principal %v", x.Principal())
	}
	_, err = exchange(t, srv, oauth.Auth{Token: unsecuredJWT(map[string]any{"user": "carol", "exp": now.Add(time.Hour).Unix(), "scope": "read"})}.AsMechanism())
	if want := `{"status":"insufficient_scope", "scope":"[read, write]"}`; err == nil || err.Error() != want {
		t.Fatalf("missing scope: %v, want %s", err, want)
	}
}

// jwksFixture is a signing key, its JWKS, and a token maker.
type jwksFixture struct {
	key  *rsa.PrivateKey
	kid  string
	jwks []byte
}

func newJWKSFixture(t *testing.T, kid string) *jwksFixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: kid, Algorithm: "RS256", Use: "sig"}}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return &jwksFixture{key: key, kid: kid, jwks: b}
}

func (f *jwksFixture) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: f.key}, (&jose.SignerOptions{}).WithHeader("kid", f.kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOAuthJWKS(t *testing.T) {
	good := newJWKSFixture(t, "k1")
	other := newJWKSFixture(t, "k1") // same key id, another key
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, good.jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"OAUTHBEARER"}, OAuth: OAuthConfig{
		JWKSURL:          "file://" + path,
		ExpectedIssuer:   "https://issuer.example",
		ExpectedAudience: []string{"kafka", "other"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	exp := now.Add(time.Hour).Unix()
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "iss": "https://issuer.example", "aud": []string{"kafka"}, "exp": exp, "iat": now.Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	x, err := exchange(t, srv, oauth.Auth{Token: good.token(t, claims(nil))}.AsMechanism())
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	if x.Principal().Name != "alice" || !x.Expiry().Equal(time.Unix(exp, 0)) {
		t.Fatalf("principal %v expiry %v", x.Principal(), x.Expiry())
	}
	invalid := `{"status":"invalid_token"}`
	for name, tok := range map[string]string{
		"wrong issuer":   good.token(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		"wrong audience": good.token(t, claims(func(c map[string]any) { c["aud"] = []string{"web"} })),
		"no audience":    good.token(t, claims(func(c map[string]any) { delete(c, "aud") })),
		"wrong key":      other.token(t, claims(nil)),
		"expired":        good.token(t, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no exp":         good.token(t, claims(func(c map[string]any) { delete(c, "exp") })),
		"no sub":         good.token(t, claims(func(c map[string]any) { delete(c, "sub") })),
		"unsecured":      unsecuredJWT(claims(nil)),
	} {
		_, err := exchange(t, srv, oauth.Auth{Token: tok}.AsMechanism())
		if err == nil || err.Error() != invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Within the default 30 s clock skew.
	if _, err := exchange(t, srv, oauth.Auth{Token: good.token(t, claims(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() }))}.AsMechanism()); err != nil {
		t.Fatalf("expired within the clock skew: %v", err)
	}
}

// TestOAuthJWKSOverHTTPS fetches the keys from an https endpoint, and
// again when a token names a key the cached set lacks (a rotated key).
func TestOAuthJWKSOverHTTPS(t *testing.T) {
	first := newJWKSFixture(t, "k1")
	rotated := newJWKSFixture(t, "k2")
	served := first.jwks
	var fetches int
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		w.Write(served)
	}))
	defer ts.Close()
	v, err := newOAuthValidator(OAuthConfig{JWKSURL: ts.URL + "/jwks", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	v.now = func() time.Time { return clock }
	v.jwks.now = v.now
	claims := map[string]any{"sub": "alice", "exp": clock.Add(time.Hour).Unix(), "iat": clock.Unix()}
	ctx := context.Background()
	if _, terr := v.validate(ctx, first.token(t, claims)); terr != nil {
		t.Fatalf("first key: %v", terr)
	}
	if _, terr := v.validate(ctx, first.token(t, claims)); terr != nil || fetches != 1 {
		t.Fatalf("cached: %v, %d fetches", terr, fetches)
	}
	served = rotated.jwks
	if _, terr := v.validate(ctx, rotated.token(t, claims)); terr == nil {
		t.Fatal("an unknown key id fetched again within jwksMinRefresh")
	}
	clock = clock.Add(jwksMinRefresh)
	if _, terr := v.validate(ctx, rotated.token(t, claims)); terr != nil || fetches != 2 {
		t.Fatalf("rotated key: %v, %d fetches", terr, fetches)
	}
}

func TestParseJAAS(t *testing.T) {
	user, pass, users, err := ParsePlainJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin"
		password="admin-secret"
		user_admin="admin-secret"
		user_alice='al"ice' /* a comment */
		user_bob="b\"ob";`)
	if err != nil {
		t.Fatal(err)
	}
	if user != "admin" || pass != "admin-secret" || len(users) != 3 || users["admin"] != "admin-secret" || users["alice"] != `al"ice` || users["bob"] != `b"ob` {
		t.Fatalf("got %q %q %v", user, pass, users)
	}
	u, p, err := ParseScramJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required username=admin password="s;e=c";`)
	if err != nil || u != "admin" || p != "s;e=c" {
		t.Fatalf("scram: %q %q %v", u, p, err)
	}
	for _, bad := range []string{
		``,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="a"`,
		`org.apache.kafka.common.security.plain.PlainLoginModule mandatory username="a";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="a;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required; org.apache.kafka.common.security.plain.PlainLoginModule required;`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="a";`,
	} {
		if _, _, _, err := ParsePlainJAAS(bad); err == nil {
			t.Errorf("accepted %q", bad)
		} else if strings.Contains(err.Error(), `"a`) {
			t.Errorf("error quotes a value: %v", err)
		}
	}
}

// TestOAuthUnsecuredTimeConsistency: within a clock skew that lets an iat
// in the future pass, an exp not after the iat still fails.
func TestOAuthUnsecuredTimeConsistency(t *testing.T) {
	srv, err := NewSASL(SASLConfig{Mechanisms: []string{"OAUTHBEARER"}, OAuth: OAuthConfig{UnsecuredClockSkew: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := exchange(t, srv, oauth.Auth{Token: unsecuredJWT(map[string]any{"sub": "a", "exp": now.Add(3 * time.Minute).Unix(), "iat": now.Add(2 * time.Minute).Unix()})}.AsMechanism()); err != nil {
		t.Fatalf("iat within the skew: %v", err)
	}
	_, err = exchange(t, srv, oauth.Auth{Token: unsecuredJWT(map[string]any{"sub": "a", "exp": now.Add(time.Minute).Unix(), "iat": now.Add(2 * time.Minute).Unix()})}.AsMechanism())
	wantAuthFailed(t, err, `{"status":"invalid_token"}`)
}
