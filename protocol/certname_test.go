package protocol

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// certNameCase is a subject and how Java's X500Principal.getName() prints
// it.
type certNameCase struct {
	name    string
	subject pkix.RDNSequence
	want    string
}

// certNameCases are the subjects TestCertSubjectName checks: every
// expected string was printed by JDK 25 (Temurin) from the same DER; JDK
// 17 prints the same but for the non-UTF-8 string types with bytes
// outside ASCII.
func certNameCases() []certNameCase {
	oid := func(s ...int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier(s) }
	cn, ou := oid(2, 5, 4, 3), oid(2, 5, 4, 11)
	dc, uid := oid(0, 9, 2342, 19200300, 100, 1, 25), oid(0, 9, 2342, 19200300, 100, 1, 1)
	email := oid(1, 2, 840, 113549, 1, 9, 1)
	ia5 := func(s string) asn1.RawValue { return asn1.RawValue{Tag: 22, Bytes: []byte(s)} }
	name := func(n pkix.Name) pkix.RDNSequence { return n.ToRDNSequence() }
	str := func(tag int, b []byte) asn1.RawValue { return asn1.RawValue{Tag: tag, Bytes: b} }
	return []certNameCase{
		{"ordinary, last RDN first", name(pkix.Name{Country: []string{"US"}, Organization: []string{"Acme, Inc."}, OrganizationalUnit: []string{"eng"}, CommonName: "alice"}),
			`CN=alice,OU=eng,O=Acme\, Inc.,C=US`},
		{"no RFC 2253 keyword: OID and DER in hex", name(pkix.Name{CommonName: "bob", SerialNumber: "123", ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: ia5("a@b.c")}}}),
			`1.2.840.113549.1.9.1=#16056140622e63,2.5.4.5=#1303313233,CN=bob`},
		{"escapes", name(pkix.Name{CommonName: " #a=b+c<d>e;f\"g\\h ", Locality: []string{"x,y"}}),
			`CN=\ \#a\=b\+c\<d\>e\;f\"g\\h\ ,L=x\,y`},
		{"leading and trailing spaces", name(pkix.Name{CommonName: "  two  "}), `CN=\ \ two\ \ `},
		{"carriage returns", name(pkix.Name{CommonName: "\rx\r"}), "CN=\\\rx\\\r"},
		{"multi-valued RDN", pkix.RDNSequence{{{Type: ou, Value: "b"}, {Type: cn, Value: "a"}}}, `CN=a+OU=b`},
		{"unicode", name(pkix.Name{CommonName: "Zoë Ünïcode", Province: []string{"Île-de-France"}}), `CN=Zoë Ünïcode,ST=Île-de-France`},
		{"domain components", pkix.RDNSequence{{{Type: dc, Value: ia5("com")}}, {{Type: dc, Value: ia5("example")}}, {{Type: cn, Value: "x"}}},
			`CN=x,DC=example,DC=com`},
		{"NUL", name(pkix.Name{CommonName: "a\x00b"}), `CN=a\00b`},
		{"a keyword's value that is no string", pkix.RDNSequence{{{Type: cn, Value: 5}}}, `CN=#020105`},
		{"street, postal code, uid", name(pkix.Name{StreetAddress: []string{"1 Main St"}, PostalCode: []string{"94000"}, ExtraNames: []pkix.AttributeTypeAndValue{{Type: uid, Value: "uid1"}}}),
			`UID=uid1,2.5.4.17=#13053934303030,STREET=1 Main St`},
		{"other characters as they are", name(pkix.Name{CommonName: "a_b@c*d!e%f&g'h(i)j"}), `CN=a_b@c*d!e%f&g'h(i)j`},
		{"BMPString", pkix.RDNSequence{{{Type: cn, Value: str(30, []byte{0, 'Z', 0, 'o', 0, 0xeb})}}}, "CN=Zoë"},
		{"BMPString of odd length", pkix.RDNSequence{{{Type: cn, Value: str(30, []byte{0, 'a', 0})}}}, "CN=a\uFFFD"},
		{"T61String", pkix.RDNSequence{{{Type: cn, Value: str(20, []byte{'Z', 'o', 0xeb})}}}, "CN=Zoë"},
		{"GeneralString", pkix.RDNSequence{{{Type: cn, Value: str(27, []byte{'Z', 'o', 0xeb})}}}, "CN=Zoë"},
		{"IA5String beyond ASCII", pkix.RDNSequence{{{Type: cn, Value: str(22, []byte{'a', 0xe9, 'b'})}}}, "CN=aéb"},
		{"PrintableString beyond ASCII", pkix.RDNSequence{{{Type: cn, Value: str(19, []byte{'a', 0xff, 'b'})}}}, "CN=aÿb"},
		{"malformed UTF8String", pkix.RDNSequence{{{Type: cn, Value: str(12, []byte{'a', 0xff, 'b'})}}}, "CN=a\uFFFDb"},
		{"UniversalString", pkix.RDNSequence{{{Type: cn, Value: str(28, []byte{0, 0, 0, 'Z', 0, 0, 0, 'o'})}}}, "CN=#1c080000005a0000006f"},
	}
}

// TestCertSubjectName checks subjects print as Java's
// X500Principal.getName() prints them.
func TestCertSubjectName(t *testing.T) {
	for _, tt := range certNameCases() {
		t.Run(tt.name, func(t *testing.T) {
			der, err := asn1.Marshal(tt.subject)
			if err != nil {
				t.Fatal(err)
			}
			cert := &x509.Certificate{RawSubject: der}
			if got := CertSubjectName(cert); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if p := DefaultCertPrincipal(cert); p.Type != "User" || p.Name != tt.want {
				t.Fatalf("DefaultCertPrincipal %v", p)
			}
		})
	}
}
