package security

// Keystores and truststores as Kafka configures them (ssl.keystore.*,
// ssl.truststore.*): PEM files or PEM text (ssl.keystore.type=PEM) and
// PKCS12 files. JKS is refused with the keytool command that converts it;
// a file named as JKS that is really PKCS12 is read, as Java 9+'s JKS
// keystore type reads PKCS12 files.

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Store types, ssl.keystore.type's and ssl.truststore.type's values.
const (
	StoreTypePEM    = "PEM"
	StoreTypePKCS12 = "PKCS12"
	StoreTypeJKS    = "JKS"
)

// jksMagic starts every JKS (and JCEKS) file.
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// storeType is what a store is: its configured type, or what its content
// says when no type is configured (or JKS is, since Java reads PKCS12
// files under that type).
func storeType(configured string, data []byte, key string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(configured))
	sniffed := ""
	switch {
	case bytes.HasPrefix(data, jksMagic) || bytes.HasPrefix(data, []byte{0xce, 0xce, 0xce, 0xce}):
		sniffed = StoreTypeJKS
	case bytes.Contains(data, []byte("-----BEGIN")):
		sniffed = StoreTypePEM
	case len(data) > 0 && data[0] == 0x30: // an ASN.1 SEQUENCE: PKCS12's PFX
		sniffed = StoreTypePKCS12
	}
	switch t {
	case "":
		if sniffed == "" {
			return "", fmt.Errorf("security: %s.type is not set and the file is neither PEM nor PKCS12", key)
		}
		t = sniffed
	case StoreTypeJKS:
		if sniffed == StoreTypePKCS12 {
			t = StoreTypePKCS12
		}
	case StoreTypePEM, StoreTypePKCS12:
		if sniffed == StoreTypeJKS {
			t = StoreTypeJKS
		}
	default:
		return "", fmt.Errorf("security: %s.type %q is not supported (PKCS12 or PEM)", key, configured)
	}
	if t == StoreTypeJKS {
		return "", fmt.Errorf("security: %s is a JKS keystore, which sluice does not read; convert it with keytool -importkeystore -srckeystore <file> -destkeystore <file>.p12 -deststoretype PKCS12 and set %s.type=PKCS12", key, key)
	}
	return t, nil
}

// readStore reads a store file; data is nil when location is empty.
func readStore(location, key string) ([]byte, error) {
	if location == "" {
		return nil, nil
	}
	data, err := os.ReadFile(location)
	if err != nil {
		return nil, fmt.Errorf("security: %s.location: %w", key, err)
	}
	return data, nil
}

// loadKeystore returns the certificate chain and key of c's keystore;
// ok is false when c configures none.
func loadKeystore(c TLSConfig) (cert tls.Certificate, ok bool, err error) {
	const key = "ssl.keystore"
	if c.KeystoreCertificateChain != "" || c.KeystoreKey != "" {
		if c.KeystoreLocation != "" {
			return cert, false, errors.New("security: ssl.keystore.location cannot be set with ssl.keystore.certificate.chain and ssl.keystore.key")
		}
		if t := strings.ToUpper(c.KeystoreType); t != "" && t != StoreTypePEM {
			return cert, false, fmt.Errorf("security: ssl.keystore.certificate.chain and ssl.keystore.key need ssl.keystore.type=PEM, not %s", c.KeystoreType)
		}
		if c.KeystoreCertificateChain == "" || c.KeystoreKey == "" {
			return cert, false, errors.New("security: ssl.keystore.certificate.chain and ssl.keystore.key go together")
		}
		if c.KeystorePassword != "" {
			return cert, false, errors.New("security: ssl.keystore.password cannot be set for a PEM keystore; only ssl.key.password (of an encrypted key) may be")
		}
		cert, err = pemKeystore([]byte(c.KeystoreCertificateChain+"\n"+c.KeystoreKey), c.KeyPassword, "ssl.keystore.certificate.chain/ssl.keystore.key")
		return cert, err == nil, err
	}
	data, err := readStore(c.KeystoreLocation, key)
	if err != nil || data == nil {
		return cert, false, err
	}
	t, err := storeType(c.KeystoreType, data, key)
	if err != nil {
		return cert, false, err
	}
	switch t {
	case StoreTypePEM:
		if c.KeystorePassword != "" {
			return cert, false, errors.New("security: ssl.keystore.password cannot be set for a PEM keystore; only ssl.key.password (of an encrypted key) may be")
		}
		cert, err = pemKeystore(data, c.KeyPassword, c.KeystoreLocation)
	default:
		cert, err = pkcs12Keystore(data, c.KeystorePassword, c.KeyPassword, c.KeystoreLocation)
	}
	return cert, err == nil, err
}

// pemKeystore reads a private key (PKCS#8, encrypted with keyPassword or
// not; PKCS#1 and SEC 1 keys are taken too) and its certificate chain,
// leaf first.
func pemKeystore(data []byte, keyPassword, where string) (tls.Certificate, error) {
	var cert tls.Certificate
	var key crypto.PrivateKey
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			cert.Certificate = append(cert.Certificate, b.Bytes)
		case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if key != nil {
				return cert, fmt.Errorf("security: %s holds more than one private key", where)
			}
			k, err := parsePEMKey(b, keyPassword)
			if err != nil {
				return cert, fmt.Errorf("security: %s: %w", where, err)
			}
			key = k
		}
	}
	if key == nil {
		return cert, fmt.Errorf("security: %s holds no private key (a PEM keystore needs a PKCS#8 \"PRIVATE KEY\" or \"ENCRYPTED PRIVATE KEY\" block)", where)
	}
	if len(cert.Certificate) == 0 {
		return cert, fmt.Errorf("security: %s holds no certificate", where)
	}
	cert.PrivateKey = key
	return finishCertificate(cert, where)
}

func parsePEMKey(b *pem.Block, password string) (crypto.PrivateKey, error) {
	if _, encrypted := b.Headers["DEK-Info"]; encrypted {
		return nil, errors.New("the private key is encrypted the legacy OpenSSL way (Proc-Type/DEK-Info), which Kafka does not read either; convert it with openssl pkcs8 -topk8 -v2 aes-256-cbc")
	}
	switch b.Type {
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted and ssl.key.password is not set")
		}
		der, err := decryptPKCS8(b.Bytes, password)
		if err != nil {
			return nil, err
		}
		return x509.ParsePKCS8PrivateKey(der)
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	}
	return x509.ParsePKCS8PrivateKey(b.Bytes)
}

// pkcs12Keystore reads a PKCS12 keystore: one private key and its chain.
// Java tools write the store and its key with one password; a key
// password that differs is tried when the store password does not open
// the file.
func pkcs12Keystore(data []byte, storePassword, keyPassword, where string) (tls.Certificate, error) {
	key, leaf, chain, err := pkcs12.DecodeChain(data, storePassword)
	if errors.Is(err, pkcs12.ErrIncorrectPassword) && keyPassword != "" && keyPassword != storePassword {
		key, leaf, chain, err = pkcs12.DecodeChain(data, keyPassword)
	}
	if err != nil {
		if isPasswordError(err) {
			return tls.Certificate{}, fmt.Errorf("security: ssl.keystore.password does not open the PKCS12 keystore %s (%v)", where, err)
		}
		return tls.Certificate{}, fmt.Errorf("security: PKCS12 keystore %s: %w", where, err)
	}
	cert := tls.Certificate{PrivateKey: key, Certificate: [][]byte{leaf.Raw}}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return finishCertificate(cert, where)
}

func isPasswordError(err error) bool {
	return errors.Is(err, pkcs12.ErrIncorrectPassword) || errors.Is(err, pkcs12.ErrDecryption)
}

// finishCertificate checks that the key belongs to the first certificate
// and fills Leaf.
func finishCertificate(cert tls.Certificate, where string) (tls.Certificate, error) {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, fmt.Errorf("security: %s: %w", where, err)
	}
	cert.Leaf = leaf
	pub, ok := cert.PrivateKey.(interface{ Public() crypto.PublicKey })
	if !ok {
		return cert, fmt.Errorf("security: %s: unsupported private key type %T", where, cert.PrivateKey)
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !eq.Equal(leaf.PublicKey) {
		return cert, fmt.Errorf("security: %s: the private key does not belong to the first certificate (%s)", where, leaf.Subject)
	}
	return cert, nil
}

// loadTruststore returns the certificates c trusts; nil when c configures
// no truststore (the system's roots are used then, as Java uses its
// cacerts).
func loadTruststore(c TLSConfig) ([]*x509.Certificate, error) {
	const key = "ssl.truststore"
	if c.TruststoreCertificates != "" {
		if c.TruststoreLocation != "" {
			return nil, errors.New("security: ssl.truststore.location cannot be set with ssl.truststore.certificates")
		}
		if t := strings.ToUpper(c.TruststoreType); t != "" && t != StoreTypePEM {
			return nil, fmt.Errorf("security: ssl.truststore.certificates needs ssl.truststore.type=PEM, not %s", c.TruststoreType)
		}
		if c.TruststorePassword != "" {
			return nil, errors.New("security: ssl.truststore.password cannot be set for a PEM truststore")
		}
		return pemCertificates([]byte(c.TruststoreCertificates), "ssl.truststore.certificates")
	}
	data, err := readStore(c.TruststoreLocation, key)
	if err != nil || data == nil {
		return nil, err
	}
	t, err := storeType(c.TruststoreType, data, key)
	if err != nil {
		return nil, err
	}
	if t == StoreTypePEM {
		if c.TruststorePassword != "" {
			return nil, errors.New("security: ssl.truststore.password cannot be set for a PEM truststore")
		}
		return pemCertificates(data, c.TruststoreLocation)
	}
	certs, err := pkcs12.DecodeTrustStore(data, c.TruststorePassword)
	if err != nil && !isPasswordError(err) {
		// A keystore used as a truststore: Java trusts the
		// certificate of each key entry.
		if _, leaf, _, kerr := pkcs12.DecodeChain(data, c.TruststorePassword); kerr == nil {
			certs, err = []*x509.Certificate{leaf}, nil
		}
	}
	if err != nil {
		if isPasswordError(err) {
			return nil, fmt.Errorf("security: ssl.truststore.password does not open the PKCS12 truststore %s (%v)", c.TruststoreLocation, err)
		}
		return nil, fmt.Errorf("security: PKCS12 truststore %s holds no trusted-certificate entries as Java marks them (openssl pkcs12 -nokeys does not); import the CA with keytool -importcert -storetype PKCS12 -keystore <file> -alias ca -file ca.pem: %w", c.TruststoreLocation, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("security: PKCS12 truststore %s holds no certificate", c.TruststoreLocation)
	}
	return certs, nil
}

func pemCertificates(data []byte, where string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("security: %s: %w", where, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("security: %s holds no PEM certificate", where)
	}
	return certs, nil
}
