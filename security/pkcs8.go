package security

// Encrypted PKCS#8 private keys (RFC 5208's EncryptedPrivateKeyInfo with
// RFC 8018's PBES2), as Kafka reads them from a PEM keystore with
// ssl.key.password. Go's x509 package reads only unencrypted PKCS#8, so
// the PBES2 layer is undone here with the standard library's PBKDF2 and
// ciphers; the ASN.1 is read by encoding/asn1. What openssl pkcs8 -topk8
// -v2 <cipher> and Java's tools write is covered: PBKDF2 with HMAC-SHA1,
// -SHA224, -SHA256, -SHA384 or -SHA512, and AES-128/192/256-CBC or
// DES-EDE3-CBC. PKCS#5 v1.5 and PKCS#12 PBE schemes are refused by name.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}

	pbkdf2PRFs = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New,
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	// pbes2Ciphers maps an encryption scheme to its key length and block
	// cipher.
	pbes2Ciphers = map[string]struct {
		keyLen int
		block  func([]byte) (cipher.Block, error)
	}{
		"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher},
		"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher},
		"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher},
		"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
	}
)

// errKeyPassword is a password that does not decrypt a key.
var errKeyPassword = errors.New("ssl.key.password does not decrypt the private key")

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo (DER) inside an
// EncryptedPrivateKeyInfo.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("the encrypted private key is not a PKCS#8 EncryptedPrivateKeyInfo: %v", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("the private key is encrypted with %v, not PBES2; re-encrypt it with openssl pkcs8 -topk8 -v2 aes-256-cbc", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("the encrypted private key's PBES2 parameters: %v", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("the encrypted private key derives its key with %v, not PBKDF2", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("the encrypted private key's PBKDF2 parameters: %v", err)
	}
	prf := sha1.New // RFC 8018's default
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("the encrypted private key uses PBKDF2 with %v, which sluice does not know", kdf.PRF.Algorithm)
		}
	}
	scheme, ok := pbes2Ciphers[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("the private key is encrypted with %v; AES-CBC and DES-EDE3-CBC are read", params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != scheme.keyLen {
		return nil, fmt.Errorf("the encrypted private key's PBKDF2 key length %d does not fit its cipher", kdf.KeyLength)
	}
	if kdf.Iterations <= 0 || kdf.Iterations > 10_000_000 {
		return nil, fmt.Errorf("the encrypted private key's PBKDF2 iteration count %d is out of range", kdf.Iterations)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("the encrypted private key's IV: %v", err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, scheme.keyLen)
	if err != nil {
		return nil, err
	}
	block, err := scheme.block(key)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(iv) != bs || len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, errors.New("the encrypted private key is malformed (IV or data length)")
	}
	plain := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.Data)
	// A wrong password shows as bad padding, or, rarely, as padding
	// that happens to be valid around garbage: the DER check below
	// catches that.
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > bs || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errKeyPassword
	}
	plain = plain[:len(plain)-pad]
	var raw asn1.RawValue
	if rest, err := asn1.Unmarshal(plain, &raw); err != nil || len(rest) != 0 || raw.Tag != asn1.TagSequence {
		return nil, errKeyPassword
	}
	return plain, nil
}
