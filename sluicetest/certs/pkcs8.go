package certs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/asn1"
)

// EncryptPKCS8 encrypts a PKCS#8 private key (DER) with password as
// `openssl pkcs8 -topk8 -v2 aes-256-cbc` does: PBES2 with PBKDF2
// (HMAC-SHA256) and AES-256-CBC, giving an EncryptedPrivateKeyInfo (DER)
// for an "ENCRYPTED PRIVATE KEY" PEM block.
func EncryptPKCS8(der []byte, password string) ([]byte, error) {
	salt := make([]byte, 16)
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	const iterations = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	pad := aes.BlockSize - len(der)%aes.BlockSize
	plain := append(append([]byte{}, der...), make([]byte, pad)...)
	for i := len(der); i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	encrypted := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(encrypted, plain)

	type pbkdf2Params struct {
		Salt       []byte
		Iterations int
		KeyLength  int `asn1:"optional"`
		PRF        pkix.AlgorithmIdentifier
	}
	kdf, err := asn1.Marshal(pbkdf2Params{Salt: salt, Iterations: iterations, KeyLength: 32,
		PRF: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}})
	if err != nil {
		return nil, err
	}
	ivDER, err := asn1.Marshal(iv)
	if err != nil {
		return nil, err
	}
	params, err := asn1.Marshal(struct {
		KDF, Enc pkix.AlgorithmIdentifier
	}{
		KDF: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, Parameters: asn1.RawValue{FullBytes: kdf}},
		Enc: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: asn1.RawValue{FullBytes: ivDER}},
	})
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(struct {
		Alg  pkix.AlgorithmIdentifier
		Data []byte
	}{
		Alg:  pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, Parameters: asn1.RawValue{FullBytes: params}},
		Data: encrypted,
	})
}
