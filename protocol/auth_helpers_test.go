package protocol

// Helpers for the TLS and SASL tests: certificates made in the test, a
// PLAIN-like SASL mechanism, a router that records who each request came
// from, and a raw client that speaks SASL by hand.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

var testSerial struct {
	sync.Mutex
	n int64
}

// issue signs a leaf certificate for subject: a server certificate for
// 127.0.0.1 and localhost, or a client certificate.
func (ca *testCA) issue(t testing.TB, subject pkix.Name, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	testSerial.Lock()
	testSerial.n++
	serial := testSerial.n + 1
	testSerial.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// serverTLS is a listener's TLS configuration: a server certificate from
// ca, client certificates checked against ca as clientAuth says.
func (ca *testCA) serverTLS(t testing.TB, clientAuth tls.ClientAuthType) func() *tls.Config {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, pkix.Name{CommonName: "localhost"}, true)},
		ClientCAs:    ca.pool,
		ClientAuth:   clientAuth,
		MinVersion:   tls.VersionTLS12,
	}
	return func() *tls.Config { return cfg }
}

// clientTLS is a client's TLS configuration trusting ca, with certs as its
// own.
func (ca *testCA) clientTLS(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: certs}
}

// fakeSASL is a PLAIN-like mechanism (RFC 4616 tokens:
// authzid NUL user NUL password) under the names PLAIN and PLAIN-TOO. It
// counts the exchanges begun on each connection.
type fakeSASL struct {
	users map[string]string
	// expiry, when set, is every credential's expiry.
	expiry time.Time

	mu     sync.Mutex
	starts map[uint64]int // exchanges begun, by connection id
}

func newFakeSASL() *fakeSASL {
	return &fakeSASL{users: map[string]string{"alice": "alice-secret", "bob": "bob-secret"}, starts: map[uint64]int{}}
}

func (f *fakeSASL) Mechanisms() []string { return []string{"PLAIN", "PLAIN-TOO"} }

func (f *fakeSASL) Start(mechanism string, conn *ConnInfo) (SASLExchange, bool) {
	if mechanism != "PLAIN" && mechanism != "PLAIN-TOO" {
		return nil, false
	}
	f.mu.Lock()
	f.starts[conn.ID]++
	f.mu.Unlock()
	return &fakeExchange{f: f}, true
}

// mostStarts is the most exchanges begun on one connection.
func (f *fakeSASL) mostStarts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	most := 0
	for _, n := range f.starts {
		most = max(most, n)
	}
	return most
}

type fakeExchange struct {
	f    *fakeSASL
	user string
}

func (x *fakeExchange) Step(_ context.Context, in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 {
		return nil, false, errMalformedToken
	}
	user, pass := string(parts[1]), string(parts[2])
	if want, ok := x.f.users[user]; !ok || want != pass {
		return nil, false, &AuthFailedError{Msg: "Authentication failed: Invalid username or password"}
	}
	x.user = user
	return nil, true, nil
}

func (x *fakeExchange) Principal() Principal { return Principal{Type: "User", Name: x.user} }
func (x *fakeExchange) Expiry() time.Time    { return x.f.expiry }

type malformedToken struct{}

func (malformedToken) Error() string { return "malformed PLAIN token" }

var errMalformedToken error = malformedToken{}

func plainToken(user, pass string) []byte {
	return []byte("\x00" + user + "\x00" + pass)
}

// principals records the principal of each Metadata request served.
type principals struct {
	mu  sync.Mutex
	got []Principal
}

func (p *principals) add(pr Principal) {
	p.mu.Lock()
	p.got = append(p.got, pr)
	p.mu.Unlock()
}

func (p *principals) all() []Principal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Principal(nil), p.got...)
}

// authRouter serves Metadata (recording the principal), Produce, and
// SaslHandshake and SaslAuthenticate as the broker does on a connection
// that is not authenticating: ILLEGAL_SASL_STATE. handshakeMax is the
// highest SaslHandshake version registered.
func authRouter(t testing.TB, rec *principals, handshakeMax int16) *Router {
	r := NewRouter(quietLogger(t))
	r.Register(3, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		rec.add(req.Conn.Principal())
		return metadataHandler(ctx, req)
	})
	r.Register(0, 3, 9, produceHandler)
	r.Register(17, 0, handshakeMax, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	})
	r.Register(36, 0, 2, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	})
	return r
}

// request sends req (at its set version) over c and decodes the answer.
func (c *rawConn) request(req kmsg.Request, correlationID int32) kmsg.Response {
	c.t.Helper()
	c.write(withSize(requestFrame(req, correlationID, kmsg.StringPtr("raw"))))
	corr, resp := decodeResponse(c.t, c.readFrame(), req.Key(), req.GetVersion(), req.GetVersion())
	if corr != correlationID {
		c.t.Fatalf("correlation id %d, want %d", corr, correlationID)
	}
	return resp
}

// handshake sends SaslHandshake at version for mechanism.
func (c *rawConn) handshake(version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mechanism
	return c.request(req, 17).(*kmsg.SASLHandshakeResponse)
}

// authenticate sends token in a SaslAuthenticate at version.
func (c *rawConn) authenticate(version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, token
	return c.request(req, 36).(*kmsg.SASLAuthenticateResponse)
}

// login authenticates c as user with SaslHandshake v1 and SaslAuthenticate
// v2, and returns the session lifetime the broker gave.
func (c *rawConn) login(user, pass string) int64 {
	c.t.Helper()
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake: error %d", hs.ErrorCode)
	}
	resp := c.authenticate(2, plainToken(user, pass))
	if resp.ErrorCode != 0 {
		c.t.Fatalf("SaslAuthenticate: error %d (%v)", resp.ErrorCode, resp.ErrorMessage)
	}
	return resp.SessionLifetimeMillis
}

// readToken reads a raw SASL answer: an int32 size and that many bytes,
// which may be none.
func (c *rawConn) readToken() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var prefix [4]byte
	if _, err := io.ReadFull(c.nc, prefix[:]); err != nil {
		c.t.Fatalf("reading a raw SASL answer: %v", err)
	}
	token := make([]byte, binary.BigEndian.Uint32(prefix[:]))
	if _, err := io.ReadFull(c.nc, token); err != nil {
		c.t.Fatalf("reading a raw SASL answer: %v", err)
	}
	return token
}

// metadata sends a Metadata request and checks it was answered.
func (c *rawConn) metadata(correlationID int32) {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.request(req, correlationID)
}

// logRecords is a slog handler that keeps every record, for tests that
// check what a connection's close was logged with.
type logRecords struct {
	mu   sync.Mutex
	recs []string
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	return nil
}

// find returns the first record holding every one of parts.
func (l *logRecords) find(parts ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, r := range l.recs {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		return r, true
	}
	return "", false
}
