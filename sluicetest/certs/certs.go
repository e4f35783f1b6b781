// Package certs makes the certificates TLS tests need: a CA, a server
// certificate for 127.0.0.1 and localhost, and client certificates, each
// written as PEM files (plain and with an encrypted PKCS#8 key) and as a
// PKCS12 keystore, and the CA as PEM and PKCS12 truststores, with the
// ssl.* config lines that point a listener or a client at them.
//
// It imports nothing of sluice, so any package's tests can use it
// (security's included); sluicetest re-exports it as sluicetest.NewCerts.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Passwords of everything a Set writes: the PKCS12 keystores and
// truststore (ssl.keystore.password, ssl.truststore.password) and the
// encrypted PEM keys (ssl.key.password). Distinct, so a test that mixes
// them up fails.
const (
	StorePassword = "store-secret"
	KeyPassword   = "key-secret"
)

// Set is a CA and the certificates it issued, written under Dir.
type Set struct {
	Dir string
	CA  *Identity
	// Server is CN=localhost with 127.0.0.1, ::1 and localhost as
	// subject alternative names, usable for server and client
	// authentication alike (brokers dial each other with it).
	Server *Identity
	// Client is CN=client, a client certificate.
	Client *Identity

	// TruststorePEM is the CA certificate as a PEM file, TruststoreP12
	// the CA as a PKCS12 truststore (a Java trusted-certificate entry)
	// with StorePassword.
	TruststorePEM, TruststoreP12 string

	serial int64
}

// Identity is a certificate and its key, and the files they were
// written to.
type Identity struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// Chain is the certificate followed by its issuer's (nothing for
	// the CA itself).
	Chain []*x509.Certificate

	CertFile         string // the chain as PEM
	KeyFile          string // the key as unencrypted PKCS#8 PEM
	EncryptedKeyFile string // the key as PKCS#8 PEM encrypted with KeyPassword
	PEMFile          string // key and chain in one file (ssl.keystore.type=PEM)
	EncryptedPEMFile string // encrypted key and chain in one file
	P12File          string // PKCS12 keystore, StorePassword (store and key)

	ChainPEM, KeyPEM, EncryptedKeyPEM []byte
}

// New makes a Set in a temporary directory of t; it fails t on error.
func New(t testing.TB) *Set {
	t.Helper()
	s, err := Write(t.TempDir())
	if err != nil {
		t.Fatalf("certs: %v", err)
	}
	return s
}

// Write makes a Set under dir (for tools and benchmarks outside tests).
func Write(dir string) (*Set, error) {
	s := &Set{Dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test CA " + filepath.Base(dir), Organization: []string{"sluice"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	s.serial = 1
	s.CA = &Identity{Cert: caCert, Key: caKey}
	if err := s.writeIdentity("ca", s.CA); err != nil {
		return nil, err
	}
	s.TruststorePEM = filepath.Join(dir, "truststore.pem")
	if err := os.WriteFile(s.TruststorePEM, certPEM(caCert), 0o600); err != nil {
		return nil, err
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{caCert}, StorePassword)
	if err != nil {
		return nil, err
	}
	s.TruststoreP12 = filepath.Join(dir, "truststore.p12")
	if err := os.WriteFile(s.TruststoreP12, ts, 0o600); err != nil {
		return nil, err
	}
	if s.Server, err = s.Issue("server", pkix.Name{CommonName: "localhost"}); err != nil {
		return nil, err
	}
	if s.Client, err = s.Issue("client", pkix.Name{CommonName: "client"}); err != nil {
		return nil, err
	}
	return s, nil
}

// Issue makes a certificate for subject signed by the CA, valid for
// server and client authentication on 127.0.0.1, ::1 and localhost, and
// writes its files as <name>.*.
func (s *Set) Issue(name string, subject pkix.Name) (*Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	s.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(s.serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.CA.Cert, key.Public(), s.CA.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	id := &Identity{Cert: cert, Key: key, Chain: []*x509.Certificate{cert, s.CA.Cert}}
	if err := s.writeIdentity(name, id); err != nil {
		return nil, err
	}
	return id, nil
}

// MustIssue is Issue failing t on error.
func (s *Set) MustIssue(t testing.TB, name string, subject pkix.Name) *Identity {
	t.Helper()
	id, err := s.Issue(name, subject)
	if err != nil {
		t.Fatalf("certs: %v", err)
	}
	return id
}

func (s *Set) writeIdentity(name string, id *Identity) error {
	if len(id.Chain) == 0 {
		id.Chain = []*x509.Certificate{id.Cert}
	}
	for _, c := range id.Chain {
		id.ChainPEM = append(id.ChainPEM, certPEM(c)...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(id.Key)
	if err != nil {
		return err
	}
	id.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	enc, err := EncryptPKCS8(keyDER, KeyPassword)
	if err != nil {
		return err
	}
	id.EncryptedKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc})
	p12, err := pkcs12.Modern.Encode(id.Key, id.Cert, id.Chain[1:], StorePassword)
	if err != nil {
		return err
	}
	path := func(suffix string) string { return filepath.Join(s.Dir, name+suffix) }
	id.CertFile, id.KeyFile, id.EncryptedKeyFile = path(".crt.pem"), path(".key.pem"), path(".key.enc.pem")
	id.PEMFile, id.EncryptedPEMFile, id.P12File = path(".pem"), path(".enc.pem"), path(".p12")
	files := map[string][]byte{
		id.CertFile:         id.ChainPEM,
		id.KeyFile:          id.KeyPEM,
		id.EncryptedKeyFile: id.EncryptedKeyPEM,
		id.PEMFile:          append(append([]byte{}, id.KeyPEM...), id.ChainPEM...),
		id.EncryptedPEMFile: append(append([]byte{}, id.EncryptedKeyPEM...), id.ChainPEM...),
		id.P12File:          p12,
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// TLSCertificate is id as crypto/tls takes it.
func (id *Identity) TLSCertificate() tls.Certificate {
	c := tls.Certificate{PrivateKey: id.Key, Leaf: id.Cert}
	for _, x := range id.Chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	return c
}

// Pool is a certificate pool holding the CA.
func (s *Set) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.CA.Cert)
	return p
}

// ClientConfig is a Go client's TLS configuration trusting the CA and
// presenting id (nil: no client certificate), for kgo.DialTLSConfig.
func (s *Set) ClientConfig(id *Identity) *tls.Config {
	c := &tls.Config{RootCAs: s.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if id != nil {
		c.Certificates = []tls.Certificate{id.TLSCertificate()}
	}
	return c
}

// KeystorePEM is the config lines of id as a PEM keystore file
// (ssl.keystore.type=PEM, ssl.keystore.location), each key prefixed by
// prefix (e.g. "listener.name.ssl." or "").
func (id *Identity) KeystorePEM(prefix string) []string {
	return []string{prefix + "ssl.keystore.type=PEM", prefix + "ssl.keystore.location=" + id.PEMFile}
}

// KeystoreP12 is the config lines of id as a PKCS12 keystore.
func (id *Identity) KeystoreP12(prefix string) []string {
	return []string{
		prefix + "ssl.keystore.type=PKCS12",
		prefix + "ssl.keystore.location=" + id.P12File,
		prefix + "ssl.keystore.password=" + StorePassword,
		prefix + "ssl.key.password=" + StorePassword,
	}
}

// TruststorePEMLines is the config lines of the CA as a PEM truststore.
func (s *Set) TruststorePEMLines(prefix string) []string {
	return []string{prefix + "ssl.truststore.type=PEM", prefix + "ssl.truststore.location=" + s.TruststorePEM}
}

// TruststoreP12Lines is the config lines of the CA as a PKCS12
// truststore.
func (s *Set) TruststoreP12Lines(prefix string) []string {
	return []string{
		prefix + "ssl.truststore.type=PKCS12",
		prefix + "ssl.truststore.location=" + s.TruststoreP12,
		prefix + "ssl.truststore.password=" + StorePassword,
	}
}

// ServerLines is the config lines of a listener serving Server from a
// PKCS12 keystore and trusting the CA: prefix is e.g. "listener.name.ssl."
// or "" for the top-level ssl.* keys. ssl.client.auth is the caller's.
func (s *Set) ServerLines(prefix string) []string {
	return append(s.Server.KeystoreP12(prefix), s.TruststoreP12Lines(prefix)...)
}
