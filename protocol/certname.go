package protocol

// A client certificate's subject as Kafka names it. Kafka's default
// principal for a TLS client is User:<X500Principal.getName()>, Java's
// RFC 2253 form of the subject, and ssl.principal.mapping.rules and ACLs
// are written against that string, so sluice must print it exactly as
// Java does, not as Go's pkix.Name.String does:
//
//   - relative distinguished names last to first, joined by ",", the
//     attributes of a multi-valued one in their encoded order joined by
//     "+";
//   - only RFC 2253's keywords (CN, C, L, ST, O, OU, STREET, DC, UID);
//     every other attribute (emailAddress, serialNumber, ...) as its
//     dotted OID;
//   - a value that is not one of the string types, or of an attribute
//     without a keyword, as "#" and the lowercase hex of its DER encoding;
//   - a string value escapes , = + < > # ; " and \ with a backslash
//     wherever they are, a NUL as \00, and leading and trailing spaces
//     (and carriage returns); other characters are written as they are.

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CertSubjectName returns the subject of cert as Java's
// X500Principal.getName() prints it (RFC 2253): the name Kafka's default
// principal builder and ssl.principal.mapping.rules work on.
func CertSubjectName(cert *x509.Certificate) string {
	var seq rawRDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return cert.Subject.String() // x509 parsed it; unreachable in practice
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeRFC2253(&b, atv)
		}
	}
	return b.String()
}

// DefaultCertPrincipal is Kafka's principal for a verified client
// certificate without ssl.principal.mapping.rules: User:<subject>.
func DefaultCertPrincipal(cert *x509.Certificate) Principal {
	return Principal{Type: "User", Name: CertSubjectName(cert)}
}

// The subject's DER structure, with each value kept raw so it can be
// printed as Java prints it. encoding/asn1 decodes a slice type whose
// name ends in SET as a SET OF.
type (
	rawATV struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue
	}
	rawRDNSET      []rawATV
	rawRDNSequence []rawRDNSET
)

// rfc2253Keywords are the attribute types RFC 2253 names, by OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// derStringTags are the universal tags Java prints as strings in RFC 2253
// form: PrintableString, T61String, IA5String, GeneralString, UTF8String,
// BMPString.
var derStringTags = map[int]bool{19: true, 20: true, 22: true, 27: true, 12: true, 30: true}

// decodeDERString decodes a string value as JDK 25 does
// (DerValue.getAsString): UTF8String as UTF-8, BMPString as UTF-16, the
// others as ISO-8859-1, a malformed sequence as one U+FFFD. JDK 17 reads
// every type as UTF-8; the two differ only for bytes outside ASCII in the
// rarely used types other than UTF8String.
func decodeDERString(v asn1.RawValue) []rune {
	var out []rune
	switch v.Tag {
	case 12: // UTF8String
		for s := v.Bytes; len(s) > 0; {
			r, n := utf8.DecodeRune(s)
			out = append(out, r)
			s = s[n:]
		}
	case 30: // BMPString
		u := make([]uint16, 0, len(v.Bytes)/2)
		for i := 0; i+1 < len(v.Bytes); i += 2 {
			u = append(u, uint16(v.Bytes[i])<<8|uint16(v.Bytes[i+1]))
		}
		out = utf16.Decode(u)
		if len(v.Bytes)%2 == 1 {
			out = append(out, utf8.RuneError)
		}
	default:
		for _, b := range v.Bytes {
			out = append(out, rune(b))
		}
	}
	return out
}

func writeRFC2253(b *strings.Builder, atv rawATV) {
	keyword, known := rfc2253Keywords[atv.Type.String()]
	if !known {
		keyword = atv.Type.String()
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	v := atv.Value
	if !known || v.Class != asn1.ClassUniversal || !derStringTags[v.Tag] {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(v.FullBytes))
		return
	}
	val := decodeDERString(v)
	var esc []rune
	for _, r := range val {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			esc = append(esc, '\\', r)
		case r == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, r)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	for i, r := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}
