package security

// TLS from Kafka's ssl.* keys (issue 19): a listener's server side
// (ServerTLS: keystore, truststore, ssl.client.auth, protocols and cipher
// suites, reload when the files change, certificate principals) and the
// client side of inter-broker connections (ClientTLS).
//
// Reload: Config is called for every new connection. At most once a
// second it reads the keystore and truststore files again and compares
// their content with what is loaded; when either changed it rebuilds the
// configuration, so the next connection gets the new certificates and
// existing connections keep theirs. A reload that fails (a half-written
// or wrong file) is logged once per content and the previous
// configuration stays in use.

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluicedev/sluice/protocol"
)

// TLSConfig is Kafka's ssl.* keys for one listener (or for the client side
// of inter-broker connections), after listener.name.<l>. overrides.
// Passwords and PEM contents are the values as configured.
type TLSConfig struct {
	KeystoreType             string // ssl.keystore.type: JKS (refused), PKCS12 or PEM; "": read from the file
	KeystoreLocation         string // ssl.keystore.location
	KeystorePassword         string // ssl.keystore.password
	KeyPassword              string // ssl.key.password
	KeystoreCertificateChain string // ssl.keystore.certificate.chain (PEM text)
	KeystoreKey              string // ssl.keystore.key (PEM text)

	TruststoreType         string // ssl.truststore.type: JKS (refused), PKCS12 or PEM; "": read from the file
	TruststoreLocation     string // ssl.truststore.location
	TruststorePassword     string // ssl.truststore.password
	TruststoreCertificates string // ssl.truststore.certificates (PEM text)

	ClientAuth       string   // ssl.client.auth: required, requested or none
	EnabledProtocols []string // ssl.enabled.protocols, e.g. TLSv1.2,TLSv1.3; empty: both
	// Protocol is ssl.protocol (TLSv1.2 or TLSv1.3; "" is Kafka's
	// default, TLSv1.3). As in Kafka it caps a client's version (a
	// TLSv1.2 client never offers TLSv1.3) and does not restrict a
	// server's, which ssl.enabled.protocols does.
	Protocol              string
	CipherSuites          []string // ssl.cipher.suites (IANA names); empty: Go's defaults
	PrincipalMappingRules string   // ssl.principal.mapping.rules
	// EndpointIdentification is ssl.endpoint.identification.algorithm,
	// for the client side: "https" checks the server's host name, ""
	// does not.
	EndpointIdentification string
}

// reloadInterval is how often Config looks at the files at most.
const reloadInterval = time.Second

// ServerTLS is a listener's TLS: the configuration each new connection
// gets, and the principal of a client certificate.
type ServerTLS struct {
	c      TLSConfig
	logger *slog.Logger
	mapper *PrincipalMapper
	base   *tls.Config // versions, suites, client auth: fixed at start

	mu        sync.Mutex
	current   *tls.Config
	loaded    [2][32]byte // hashes of the keystore and truststore files loaded
	failed    [2][32]byte // hashes of the last contents that failed to load
	failedErr string      // the last reload error logged
	lastCheck time.Time
}

// NewServerTLS loads the keystore and truststore of c. Logger receives a
// line when a reload fails (the previous certificates stay in use).
func NewServerTLS(c TLSConfig, logger *slog.Logger) (*ServerTLS, error) {
	if logger == nil {
		logger = slog.Default()
	}
	base, err := baseConfig(c)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(strings.TrimSpace(c.ClientAuth)) {
	case "required":
		base.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case "none", "":
		base.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("security: ssl.client.auth %q: must be required, requested or none", c.ClientAuth)
	}
	mapper, err := ParsePrincipalMappingRules(c.PrincipalMappingRules)
	if err != nil {
		return nil, err
	}
	s := &ServerTLS{c: c, logger: logger, mapper: mapper, base: base}
	hashes, err := s.fileHashes()
	if err != nil {
		return nil, err
	}
	cfg, err := s.load()
	if err != nil {
		return nil, err
	}
	s.current, s.loaded, s.lastCheck = cfg, hashes, time.Now()
	return s, nil
}

// load builds a configuration from the files as they are now.
func (s *ServerTLS) load() (*tls.Config, error) {
	cert, ok, err := loadKeystore(s.c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("security: a TLS listener needs a keystore (ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key)")
	}
	trusted, err := loadTruststore(s.c)
	if err != nil {
		return nil, err
	}
	cfg := s.base.Clone()
	cfg.Certificates = []tls.Certificate{cert}
	if trusted != nil {
		cfg.ClientCAs = x509.NewCertPool()
		for _, t := range trusted {
			cfg.ClientCAs.AddCert(t)
		}
	}
	return cfg, nil
}

// fileHashes hashes the keystore and truststore files (zero for a store
// given as text or not at all).
func (s *ServerTLS) fileHashes() (h [2][32]byte, err error) {
	for i, path := range []string{s.c.KeystoreLocation, s.c.TruststoreLocation} {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return h, fmt.Errorf("security: %w", err)
		}
		h[i] = sha256.Sum256(data)
	}
	return h, nil
}

// Config returns the TLS configuration for a new connection, reloading
// the files first if they changed. The caller must not modify it.
func (s *ServerTLS) Config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.lastCheck) < reloadInterval {
		return s.current
	}
	s.lastCheck = now
	s.reloadLocked()
	return s.current
}

// reloadLocked reloads the files if their content changed. s.mu is held.
func (s *ServerTLS) reloadLocked() {
	hashes, err := s.fileHashes()
	if err == nil {
		if hashes == s.loaded || hashes == s.failed {
			return // unchanged, or already failed and logged
		}
		var cfg *tls.Config
		if cfg, err = s.load(); err == nil {
			// A file written between hashing and loading is seen
			// at the next check: its hash differs from this one.
			s.current, s.loaded, s.failed, s.failedErr = cfg, hashes, [2][32]byte{}, ""
			leaf := cfg.Certificates[0].Leaf
			s.logger.Info("security: reloaded TLS keystore and truststore",
				"keystore", s.c.KeystoreLocation, "truststore", s.c.TruststoreLocation,
				"subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
			return
		}
		s.failed = hashes
	}
	if err.Error() != s.failedErr {
		s.failedErr = err.Error()
		s.logger.Warn("security: TLS keystore or truststore changed but does not load; the previous certificates stay in use", "err", err)
	}
}

// Principal maps a verified client certificate to a principal with
// ssl.principal.mapping.rules: User:<mapped name>. When no rule applies
// it returns the zero Principal, which names nobody: Kafka fails such a
// connection, and the caller should close it (MapPrincipal says why).
func (s *ServerTLS) Principal(cert *x509.Certificate) protocol.Principal {
	p, err := s.MapPrincipal(cert)
	if err != nil {
		return protocol.Principal{}
	}
	return p
}

// MapPrincipal is Principal with the reason when there is none: a subject
// that does not parse, or ErrNoMappingRule.
func (s *ServerTLS) MapPrincipal(cert *x509.Certificate) (protocol.Principal, error) {
	return certPrincipal(s.mapper, cert)
}

func certPrincipal(m *PrincipalMapper, cert *x509.Certificate) (protocol.Principal, error) {
	dn, err := DistinguishedName(cert)
	if err != nil {
		return protocol.Principal{}, err
	}
	name, err := m.Map(dn)
	if err != nil {
		return protocol.Principal{}, err
	}
	return protocol.Principal{Type: "User", Name: name}, nil
}

// ClientTLS returns the TLS configuration of a client (a broker dialling
// another broker's inter-broker listener) from c: its truststore, and its
// keystore when the server asks for a certificate. serverName is the host
// dialled, checked when EndpointIdentification is "https". The files are
// read on every call, so a caller that calls it per connection follows
// their changes.
func ClientTLS(c TLSConfig, serverName string) (*tls.Config, error) {
	cfg, err := baseConfig(c)
	if err != nil {
		return nil, err
	}
	if c.Protocol != "" {
		v, err := tlsVersion(c.Protocol, "ssl.protocol")
		if err != nil {
			return nil, err
		}
		if v < cfg.MinVersion {
			return nil, fmt.Errorf("security: ssl.protocol %s is below every version in ssl.enabled.protocols", c.Protocol)
		}
		cfg.MaxVersion = min(cfg.MaxVersion, v)
	}
	cert, ok, err := loadKeystore(c)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Certificates = []tls.Certificate{cert}
	}
	trusted, err := loadTruststore(c)
	if err != nil {
		return nil, err
	}
	var roots *x509.CertPool
	if trusted != nil {
		roots = x509.NewCertPool()
		for _, t := range trusted {
			roots.AddCert(t)
		}
	}
	cfg.RootCAs = roots
	cfg.ServerName = serverName
	switch strings.ToLower(strings.TrimSpace(c.EndpointIdentification)) {
	case "https":
	case "":
		// The chain is verified, the host name is not: crypto/tls
		// has no such mode, so its verification is replaced by ours.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots)
		}
	default:
		return nil, fmt.Errorf("security: ssl.endpoint.identification.algorithm %q: must be https or empty", c.EndpointIdentification)
	}
	return cfg, nil
}

// verifyChain verifies a server's chain against roots (the system's when
// nil) without checking its name.
func verifyChain(chain []*x509.Certificate, roots *x509.CertPool) error {
	if len(chain) == 0 {
		return errors.New("security: the server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(opts)
	return err
}

// baseConfig is what does not depend on the files: versions and suites.
func baseConfig(c TLSConfig) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	if len(c.EnabledProtocols) > 0 {
		cfg.MinVersion, cfg.MaxVersion = 0, 0
		for _, p := range c.EnabledProtocols {
			if strings.TrimSpace(p) == "" {
				continue
			}
			v, err := tlsVersion(p, "ssl.enabled.protocols")
			if err != nil {
				return nil, err
			}
			if cfg.MinVersion == 0 || v < cfg.MinVersion {
				cfg.MinVersion = v
			}
			cfg.MaxVersion = max(cfg.MaxVersion, v)
		}
		if cfg.MinVersion == 0 {
			return nil, errors.New("security: ssl.enabled.protocols is empty")
		}
	}
	if c.Protocol != "" {
		if _, err := tlsVersion(c.Protocol, "ssl.protocol"); err != nil {
			return nil, err
		}
	}
	if len(c.CipherSuites) > 0 {
		ids, tls13Only, err := cipherSuites(c.CipherSuites)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			// Only TLS 1.3 suites named: TLS 1.2 has none left.
			if !tls13Only || cfg.MaxVersion < tls.VersionTLS13 {
				return nil, errors.New("security: ssl.cipher.suites leaves no suite for the enabled protocols")
			}
			cfg.MinVersion = tls.VersionTLS13
		}
		cfg.CipherSuites = ids
	}
	return cfg, nil
}

// tlsVersion maps Kafka's protocol names; anything before TLSv1.2 is
// refused.
func tlsVersion(name, key string) (uint16, error) {
	switch strings.TrimSpace(name) {
	case "TLSv1.3":
		return tls.VersionTLS13, nil
	case "TLSv1.2":
		return tls.VersionTLS12, nil
	case "TLS":
		// Java's generic context: every supported version.
		return tls.VersionTLS13, nil
	case "TLSv1", "TLSv1.1", "SSLv3", "SSLv2", "SSL", "SSLv2Hello":
		return 0, fmt.Errorf("security: %s: %s is obsolete and insecure and sluice does not offer it; use TLSv1.2 or TLSv1.3", key, name)
	}
	return 0, fmt.Errorf("security: %s: unknown protocol %q (TLSv1.2 or TLSv1.3)", key, name)
}

// cipherSuites maps IANA suite names (Kafka's ssl.cipher.suites values)
// to crypto/tls's IDs. TLS 1.3's suites are accepted but not configurable
// in Go (all three are always on), so they add no ID; tls13Only reports a
// list that named nothing else.
func cipherSuites(names []string) (ids []uint16, tls13Only bool, err error) {
	known := map[string]*tls.CipherSuite{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s
	}
	insecure := map[string]bool{}
	for _, s := range tls.InsecureCipherSuites() {
		insecure[s.Name] = true
	}
	tls13Only = true
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		s, ok := known[n]
		switch {
		case !ok && insecure[n]:
			return nil, false, fmt.Errorf("security: ssl.cipher.suites: %s is insecure and sluice does not offer it", n)
		case !ok:
			return nil, false, fmt.Errorf("security: ssl.cipher.suites: unknown cipher suite %q (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", n)
		}
		if len(s.SupportedVersions) == 1 && s.SupportedVersions[0] == tls.VersionTLS13 {
			continue
		}
		tls13Only = false
		ids = append(ids, s.ID)
	}
	return ids, tls13Only, nil
}
