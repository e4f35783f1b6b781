package sluicetest

import (
	"testing"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// NewCerts makes a CA and server and client certificates in a temporary
// directory of t, as PEM files and PKCS12 keystores and truststores with
// the ssl.* config lines that use them (package sluicetest/certs).
func NewCerts(t testing.TB) *certs.Set { return certs.New(t) }
