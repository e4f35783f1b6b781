package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// result is what each side of a handshake saw.
type result struct {
	serverErr, clientErr error
	state                tls.ConnectionState // the server's
}

// handshake runs one TLS handshake over loopback between a server with
// cfg and a client with client, and a byte each way so that a client
// certificate the server refuses under TLS 1.3 shows on both sides.
func handshake(t *testing.T, cfg *tls.Config, client *tls.Config) result {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r result
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		raw, err := ln.Accept()
		if err != nil {
			r.serverErr = err
			return
		}
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(10 * time.Second))
		c := tls.Server(raw, cfg)
		if r.serverErr = c.Handshake(); r.serverErr != nil {
			return
		}
		r.state = c.ConnectionState()
		_, r.serverErr = c.Write([]byte{1})
		_, _ = io.ReadFull(c, make([]byte, 1))
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, client)
	if r.clientErr = c.Handshake(); r.clientErr == nil {
		if _, r.clientErr = io.ReadFull(c, make([]byte, 1)); r.clientErr == nil {
			_, _ = c.Write([]byte{1})
		}
	}
	raw.Close()
	wg.Wait()
	return r
}

func (r result) ok() error {
	if r.serverErr != nil || r.clientErr != nil {
		return fmt.Errorf("server: %v; client: %v", r.serverErr, r.clientErr)
	}
	return nil
}

func newServer(t *testing.T, c TLSConfig) *ServerTLS {
	t.Helper()
	s, err := NewServerTLS(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each way of giving a keystore and a truststore serves a handshake that
// verifies the client certificate against the truststore.
func TestTLSStoreFormats(t *testing.T) {
	s := certs.New(t)
	keystores := map[string]TLSConfig{
		"PEM file": {KeystoreType: "PEM", KeystoreLocation: s.Server.PEMFile},
		"PEM file with an encrypted key": {KeystoreType: "PEM", KeystoreLocation: s.Server.EncryptedPEMFile,
			KeyPassword: certs.KeyPassword},
		"PEM text": {KeystoreType: "PEM", KeystoreCertificateChain: string(s.Server.ChainPEM),
			KeystoreKey: string(s.Server.KeyPEM)},
		"PEM text with an encrypted key": {KeystoreType: "PEM", KeystoreCertificateChain: string(s.Server.ChainPEM),
			KeystoreKey: string(s.Server.EncryptedKeyPEM), KeyPassword: certs.KeyPassword},
		"PKCS12": {KeystoreType: "PKCS12", KeystoreLocation: s.Server.P12File,
			KeystorePassword: certs.StorePassword, KeyPassword: certs.StorePassword},
		// Java 9+ reads a PKCS12 file under the type JKS, Kafka's default.
		"PKCS12 named JKS": {KeystoreType: "JKS", KeystoreLocation: s.Server.P12File,
			KeystorePassword: certs.StorePassword},
		"PKCS12, no type": {KeystoreLocation: s.Server.P12File, KeystorePassword: certs.StorePassword},
	}
	truststores := map[string]TLSConfig{
		"PEM file":         {TruststoreType: "PEM", TruststoreLocation: s.TruststorePEM},
		"PEM text":         {TruststoreType: "PEM", TruststoreCertificates: string(s.CA.ChainPEM)},
		"PKCS12":           {TruststoreType: "PKCS12", TruststoreLocation: s.TruststoreP12, TruststorePassword: certs.StorePassword},
		"PKCS12 named JKS": {TruststoreType: "JKS", TruststoreLocation: s.TruststoreP12, TruststorePassword: certs.StorePassword},
	}
	for kname, ks := range keystores {
		for tname, ts := range truststores {
			c := ks
			c.TruststoreType, c.TruststoreLocation, c.TruststorePassword, c.TruststoreCertificates =
				ts.TruststoreType, ts.TruststoreLocation, ts.TruststorePassword, ts.TruststoreCertificates
			c.ClientAuth = "required"
			t.Run(kname+"/"+tname, func(t *testing.T) {
				srv := newServer(t, c)
				r := handshake(t, srv.Config(), s.ClientConfig(s.Client))
				if err := r.ok(); err != nil {
					t.Fatal(err)
				}
				if got := r.state.PeerCertificates[0].Subject.CommonName; got != "client" {
					t.Errorf("client certificate %q", got)
				}
			})
		}
	}
}

func TestTLSStoreErrors(t *testing.T) {
	s := certs.New(t)
	dir := t.TempDir()
	jks := filepath.Join(dir, "server.jks")
	os.WriteFile(jks, append([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, bytes.Repeat([]byte{7}, 64)...), 0o600)
	// A PKCS12 file of certificates alone, without the attribute that
	// marks Java's trusted entries, as openssl pkcs12 -export -nokeys
	// writes it (testdata, made once).
	plainCerts := "testdata/openssl-certs-only.p12"
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not a keystore"), 0o600)
	for _, tc := range []struct {
		name string
		c    TLSConfig
		want string
	}{
		{"PKCS12 wrong password", TLSConfig{KeystoreType: "PKCS12", KeystoreLocation: s.Server.P12File, KeystorePassword: "wrong"},
			"ssl.keystore.password does not open the PKCS12 keystore"},
		{"PKCS12 truststore wrong password", TLSConfig{KeystoreLocation: s.Server.PEMFile,
			TruststoreType: "PKCS12", TruststoreLocation: s.TruststoreP12, TruststorePassword: "wrong"},
			"ssl.truststore.password does not open the PKCS12 truststore"},
		{"PKCS12 keystore as truststore", TLSConfig{KeystoreLocation: s.Server.PEMFile,
			TruststoreType: "PKCS12", TruststoreLocation: s.Server.P12File, TruststorePassword: certs.StorePassword},
			""}, // Java trusts a key entry's certificate: so do we
		{"PKCS12 of certificates without Java's trust attribute", TLSConfig{KeystoreLocation: s.Server.PEMFile,
			TruststoreType: "PKCS12", TruststoreLocation: plainCerts, TruststorePassword: "openssl-secret"},
			"keytool -importcert"},
		{"encrypted key, wrong password", TLSConfig{KeystoreType: "PEM", KeystoreLocation: s.Server.EncryptedPEMFile, KeyPassword: "wrong"},
			"ssl.key.password does not decrypt the private key"},
		{"encrypted key, no password", TLSConfig{KeystoreType: "PEM", KeystoreLocation: s.Server.EncryptedPEMFile},
			"ssl.key.password is not set"},
		{"PEM with a store password", TLSConfig{KeystoreType: "PEM", KeystoreLocation: s.Server.PEMFile, KeystorePassword: "x"},
			"ssl.keystore.password cannot be set for a PEM keystore"},
		{"JKS", TLSConfig{KeystoreType: "JKS", KeystoreLocation: jks, KeystorePassword: "x"},
			"keytool -importkeystore"},
		{"JKS file as PKCS12", TLSConfig{KeystoreType: "PKCS12", KeystoreLocation: jks, KeystorePassword: "x"},
			"keytool -importkeystore"},
		{"JKS truststore", TLSConfig{KeystoreLocation: s.Server.PEMFile, TruststoreType: "JKS", TruststoreLocation: jks},
			"-deststoretype PKCS12"},
		{"unknown type", TLSConfig{KeystoreType: "JCEKS", KeystoreLocation: s.Server.PEMFile}, `"JCEKS" is not supported`},
		{"garbage", TLSConfig{KeystoreLocation: garbage}, "neither PEM nor PKCS12"},
		{"missing file", TLSConfig{KeystoreLocation: filepath.Join(dir, "nope")}, "no such file"},
		{"no keystore", TLSConfig{}, "needs a keystore"},
		{"key of another certificate", TLSConfig{KeystoreType: "PEM", KeystoreCertificateChain: string(s.Server.ChainPEM),
			KeystoreKey: string(s.Client.KeyPEM)}, "does not belong"},
		{"TLSv1.1", TLSConfig{KeystoreLocation: s.Server.PEMFile, EnabledProtocols: []string{"TLSv1.1", "TLSv1.2"}},
			"TLSv1.1 is obsolete"},
		{"ssl.protocol SSLv3", TLSConfig{KeystoreLocation: s.Server.PEMFile, Protocol: "SSLv3"}, "SSLv3 is obsolete"},
		{"unknown suite", TLSConfig{KeystoreLocation: s.Server.PEMFile, CipherSuites: []string{"TLS_MADE_UP"}},
			`unknown cipher suite "TLS_MADE_UP"`},
		{"insecure suite", TLSConfig{KeystoreLocation: s.Server.PEMFile, CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}},
			"insecure"},
		{"client auth", TLSConfig{KeystoreLocation: s.Server.PEMFile, ClientAuth: "sometimes"}, "required, requested or none"},
		{"mapping rules", TLSConfig{KeystoreLocation: s.Server.PEMFile, PrincipalMappingRules: "RULE:x"}, "invalid rule"},
	} {
		_, err := NewServerTLS(tc.c, nil)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

// Keys encrypted by openssl pkcs8 -topk8 (testdata, made once) decrypt to
// the key openssl wrote unencrypted.
func TestEncryptedPKCS8FromOpenSSL(t *testing.T) {
	plain, _ := pem.Decode(mustRead(t, "testdata/openssl-key.pem"))
	want, err := x509.ParsePKCS8PrivateKey(plain.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"openssl-key-aes256.enc.pem", "openssl-key-aes128-sha1.enc.pem", "openssl-key-des3.enc.pem"} {
		b, _ := pem.Decode(mustRead(t, "testdata/"+f))
		got, err := parsePEMKey(b, "openssl-secret")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !got.(interface{ Equal(crypto.PrivateKey) bool }).Equal(want) {
			t.Errorf("%s: decrypted to another key", f)
		}
		if _, err := parsePEMKey(b, "wrong"); !errors.Is(err, errKeyPassword) {
			t.Errorf("%s with a wrong password: %v", f, err)
		}
	}
	// PKCS#12-style PBE (openssl pkcs8 -v1): refused by name.
	b, _ := pem.Decode(mustRead(t, "testdata/openssl-key-pbe-sha1-3des.enc.pem"))
	if _, err := parsePEMKey(b, "openssl-secret"); err == nil || !strings.Contains(err.Error(), "not PBES2") {
		t.Errorf("PBE-SHA1-3DES key: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ssl.client.auth over a real handshake: required refuses a client
// without a certificate, requested takes one or none, none asks for none;
// a certificate from another CA is refused whenever one is checked.
func TestTLSClientAuthModes(t *testing.T) {
	s := certs.New(t)
	other := certs.New(t) // another CA
	base := TLSConfig{KeystoreLocation: s.Server.P12File, KeystorePassword: certs.StorePassword,
		TruststoreLocation: s.TruststorePEM}
	for _, tc := range []struct {
		mode           string
		client         *certs.Identity
		ok             bool
		wantPeerCommon string
	}{
		{"required", s.Client, true, "client"},
		{"required", nil, false, ""},
		{"required", other.Client, false, ""},
		{"requested", s.Client, true, "client"},
		{"requested", nil, true, ""},
		{"requested", other.Client, false, ""},
		{"none", s.Client, true, ""},
		{"none", other.Client, true, ""},
		{"", nil, true, ""},
	} {
		c := base
		c.ClientAuth = tc.mode
		srv := newServer(t, c)
		client := s.ClientConfig(tc.client)
		if tc.client != nil {
			// Go's client sends nothing when its certificate is not
			// of a CA the server names; send it regardless.
			cert := tc.client.TLSCertificate()
			client.Certificates = nil
			client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		}
		r := handshake(t, srv.Config(), client)
		name := fmt.Sprintf("%s, client %v", tc.mode, tc.client != nil)
		if tc.client == other.Client {
			name += " of another CA"
		}
		if err := r.ok(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		got := ""
		if len(r.state.PeerCertificates) > 0 {
			got = r.state.PeerCertificates[0].Subject.CommonName
			if p := srv.Principal(r.state.PeerCertificates[0]); p.String() != "User:CN=client" {
				t.Errorf("%s: principal %s", name, p)
			}
		}
		if got != tc.wantPeerCommon {
			t.Errorf("%s: server saw client certificate %q, want %q", name, got, tc.wantPeerCommon)
		}
	}
}

func TestTLSProtocolsAndSuites(t *testing.T) {
	s := certs.New(t)
	base := TLSConfig{KeystoreLocation: s.Server.PEMFile}

	c := base
	c.EnabledProtocols = []string{"TLSv1.2"}
	c.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
	r := handshake(t, newServer(t, c).Config(), s.ClientConfig(nil))
	if err := r.ok(); err != nil {
		t.Fatal(err)
	}
	if r.state.Version != tls.VersionTLS12 || r.state.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("negotiated %s, %s", tls.VersionName(r.state.Version), tls.CipherSuiteName(r.state.CipherSuite))
	}
	onlyTLS13 := s.ClientConfig(nil)
	onlyTLS13.MinVersion = tls.VersionTLS13
	if err := handshake(t, newServer(t, c).Config(), onlyTLS13).ok(); err == nil {
		t.Error("a TLSv1.2-only listener accepted a TLSv1.3-only client")
	}

	// TLS 1.3 suites only: TLS 1.2 is left with none, so the listener
	// speaks TLS 1.3 only.
	c = base
	c.CipherSuites = []string{"TLS_AES_128_GCM_SHA256"}
	onlyTLS12 := s.ClientConfig(nil)
	onlyTLS12.MaxVersion = tls.VersionTLS12
	if err := handshake(t, newServer(t, c).Config(), onlyTLS12).ok(); err == nil {
		t.Error("a listener with TLS 1.3 suites only accepted a TLS 1.2 client")
	}

	// ssl.protocol=TLSv1.2 caps a client.
	cc, err := ClientTLS(TLSConfig{TruststoreLocation: s.TruststorePEM, Protocol: "TLSv1.2", EndpointIdentification: "https"}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	r = handshake(t, newServer(t, base).Config(), cc)
	if err := r.ok(); err != nil || r.state.Version != tls.VersionTLS12 {
		t.Errorf("ssl.protocol=TLSv1.2 client: %v, version %s", err, tls.VersionName(r.state.Version))
	}
}

// ClientTLS presents the keystore, trusts the truststore and checks the
// host name only with ssl.endpoint.identification.algorithm=https.
func TestClientTLS(t *testing.T) {
	s := certs.New(t)
	other := certs.New(t)
	srv := newServer(t, TLSConfig{KeystoreLocation: s.Server.PEMFile, TruststoreLocation: s.TruststorePEM, ClientAuth: "required"})
	otherSrv := newServer(t, TLSConfig{KeystoreLocation: other.Server.PEMFile, TruststoreLocation: s.TruststorePEM, ClientAuth: "required"})
	client := TLSConfig{KeystoreLocation: s.Client.P12File, KeystorePassword: certs.StorePassword,
		TruststoreLocation: s.TruststoreP12, TruststorePassword: certs.StorePassword}
	for _, tc := range []struct {
		name       string
		endpoint   string
		serverName string
		server     *ServerTLS
		ok         bool
	}{
		{"https, right name", "https", "localhost", srv, true},
		{"https, IP", "https", "127.0.0.1", srv, true},
		{"https, wrong name", "https", "broker.example", srv, false},
		{"no identification, wrong name", "", "broker.example", srv, true},
		{"no identification, server of another CA", "", "localhost", otherSrv, false},
		{"https, server of another CA", "https", "localhost", otherSrv, false},
	} {
		c := client
		c.EndpointIdentification = tc.endpoint
		cfg, err := ClientTLS(c, tc.serverName)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := handshake(t, tc.server.Config(), cfg)
		if err := r.ok(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
		if tc.ok && r.state.PeerCertificates[0].Subject.CommonName != "client" {
			t.Errorf("%s: the server did not get the client's certificate", tc.name)
		}
	}
	// Without a keystore a client presents nothing: a listener that
	// requires a certificate refuses it.
	cfg, err := ClientTLS(TLSConfig{TruststoreLocation: s.TruststorePEM, EndpointIdentification: "https"}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, srv.Config(), cfg).ok(); err == nil {
		t.Error("a client without a keystore passed ssl.client.auth=required")
	}
}

// logBuffer collects log lines for the tests to wait on.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// waitFor polls cond until it holds or 20s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Rewriting the keystore serves the new certificate to new connections; a
// broken rewrite is logged once and the last good certificate stays; a
// rewritten truststore admits clients of the new CA.
func TestServerTLSReload(t *testing.T) {
	s := certs.New(t)
	dir := t.TempDir()
	keystore := filepath.Join(dir, "keystore.p12")
	truststore := filepath.Join(dir, "truststore.pem")
	write := func(path string, data []byte) {
		t.Helper()
		// Write then rename, as tools that replace certificates do;
		// a plain rewrite is tried below too.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(keystore, mustRead(t, s.Server.P12File))
	write(truststore, mustRead(t, s.TruststorePEM))
	var logs logBuffer
	srv, err := NewServerTLS(TLSConfig{KeystoreType: "PKCS12", KeystoreLocation: keystore, KeystorePassword: certs.StorePassword,
		TruststoreLocation: truststore, ClientAuth: "requested"}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	serverCert := func() *x509.Certificate {
		t.Helper()
		cfg := srv.Config()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			raw, err := ln.Accept()
			if err == nil {
				tls.Server(raw, cfg).Handshake()
				raw.Close()
			}
		}()
		client := s.ClientConfig(nil)
		client.InsecureSkipVerify = true
		c, err := tls.Dial("tcp", ln.Addr().String(), client)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	if got := serverCert(); !got.Equal(s.Server.Cert) {
		t.Fatalf("first certificate %s", got.Subject)
	}

	renewed := s.MustIssue(t, "renewed", pkix.Name{CommonName: "localhost", Organization: []string{"renewed"}})
	write(keystore, mustRead(t, renewed.P12File))
	waitFor(t, "the renewed certificate", func() bool { return serverCert().Equal(renewed.Cert) })

	// A broken keystore: logged once, the renewed one stays.
	if err := os.WriteFile(keystore, []byte("half-written"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed reload's log line", func() bool {
		srv.Config() // checks the files at most once a second
		return logs.count("does not load") > 0
	})
	for range 3 {
		if got := serverCert(); !got.Equal(renewed.Cert) {
			t.Fatalf("after a broken rewrite the server serves %s", got.Subject)
		}
	}
	// Later checks see the same broken content: still one line.
	for range 3 {
		srv.mu.Lock()
		srv.lastCheck = time.Time{}
		srv.mu.Unlock()
		serverCert()
	}
	if n := logs.count("does not load"); n != 1 {
		t.Errorf("the broken keystore was logged %d times", n)
	}

	// A plain rewrite with a good keystore is picked up again.
	third := s.MustIssue(t, "third", pkix.Name{CommonName: "localhost", Organization: []string{"third"}})
	if err := os.WriteFile(keystore, mustRead(t, third.P12File), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the third certificate", func() bool { return serverCert().Equal(third.Cert) })

	// The truststore: a client of another CA is refused, then admitted
	// once that CA is in the file.
	other := certs.New(t)
	clientOf := func(set *certs.Set) error {
		cl := s.ClientConfig(nil)
		cert := set.Client.TLSCertificate()
		cl.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		cl.InsecureSkipVerify = true
		return handshake(t, srv.Config(), cl).ok()
	}
	if err := clientOf(other); err == nil {
		t.Fatal("a client of another CA was admitted")
	}
	write(truststore, append(mustRead(t, s.TruststorePEM), mustRead(t, other.TruststorePEM)...))
	waitFor(t, "the new truststore", func() bool { return clientOf(other) == nil })
	if err := clientOf(s); err != nil {
		t.Errorf("a client of the first CA after the truststore grew: %v", err)
	}
}
