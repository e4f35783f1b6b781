package security

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// The rules of Kafka's documentation (ssl.principal.mapping.rules in the
// security chapter) and of its SslPrincipalMapper's behaviour, applied to
// RFC 2253 names.
func TestPrincipalMappingKafkaExamples(t *testing.T) {
	rules := strings.Join([]string{
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L`,
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`,
		`DEFAULT`,
	}, ",")
	m, err := ParsePrincipalMappingRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dn, want string }{
		// The documentation's two examples.
		{"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"},
		{"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"},
		// The third rule takes any CN, lower-cased.
		{"OU=x,cN=Duke.Two,O=y", "duke.two"},
		// Nothing matches but DEFAULT: the name as it is.
		{"OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
	} {
		got, err := m.Map(tc.dn)
		if err != nil || got != tc.want {
			t.Errorf("Map(%q) = %q, %v; want %q", tc.dn, got, err, tc.want)
		}
	}

	upper, err := ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := upper.Map("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"); err != nil || got != "ADMINUSER@ADMIN" {
		t.Errorf("upper-case rule: %q, %v", got, err)
	}
	// No DEFAULT and no match: no principal.
	if _, err := upper.Map("CN=x"); !errors.Is(err, ErrNoMappingRule) {
		t.Errorf("unmatched subject: %v, want ErrNoMappingRule", err)
	}
}

func TestPrincipalMappingRuleSyntax(t *testing.T) {
	for _, tc := range []struct{ rules, parsed string }{
		{"", "[DEFAULT]"}, // sluice's unset value: Kafka's default
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"},
		// Spaces inside a pattern or a replacement are kept.
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"},
		// Empty rules are skipped.
		{",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"},
		// Commas belong to a pattern or replacement until its '/'.
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`, `[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT]`},
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/x,/,DEFAULT`, `[RULE:,RULE:,/,RULE:,\//U, RULE:,/x,, DEFAULT]`},
		// Escaped slashes stay in the pattern.
		{`RULE:\/a\//b/`, `[RULE:\/a\//b]`},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got := m.String(); got != tc.parsed {
			t.Errorf("%q parsed as %s, want %s", tc.rules, got, tc.parsed)
		}
	}
	for _, bad := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/LU",
		"RULE:^CN=(?=x).*$/$1/", // a look-ahead: not RE2
		"RULE:^CN=(.*)$/$x/",    // '$' not before a group
	} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}

func TestPrincipalMappingReplacement(t *testing.T) {
	for _, tc := range []struct{ rules, dn, want string }{
		// An escaped comma in the subject, matched by an escaped
		// backslash in the pattern.
		{`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`, `CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`, `Tkac\, Adam`},
		// A group past the last is literal text; $12 with 1 group is
		// group 1 then '2'.
		{`RULE:^CN=(\w+)$/$1-$4-$12/`, "CN=bob", "bob-$4-bob2"},
		// \$ is a dollar sign, $0 the whole match, ${name} a named group.
		{`RULE:^CN=(?P<who>\w+)$/\$${who}:$0/`, "CN=eve", "$eve:CN=eve"},
		// The pattern must match the whole name, not a part of it.
		{`RULE:CN=(\w+)/$1/,DEFAULT`, "OU=a,CN=bob", "OU=a,CN=bob"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		if got, err := m.Map(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s on %q = %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
}

// DistinguishedName (protocol.CertSubjectName) writes subjects as Java
// 17's X509Certificate.getSubjectX500Principal().getName() printed them
// for the same certificates (checked once with a small Java program); Go's
// pkix.Name.String() differs on four of these five.
func TestDistinguishedNameMatchesJava(t *testing.T) {
	s := certs.New(t)
	for _, tc := range []struct {
		subject pkix.Name
		java    string
	}{
		{pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme, Inc."}, Country: []string{"US"}},
			`CN=alice,OU=eng,O=Acme\, Inc.,C=US`},
		{pkix.Name{CommonName: `a=b#c+d<e>f;g"h\i`, SerialNumber: "1234", PostalCode: []string{"12345"}},
			`2.5.4.5=#130431323334,CN=a\=b\#c\+d\<e\>f\;g\"h\\i,2.5.4.17=#13053132333435`},
		{pkix.Name{CommonName: "  two leading", Locality: []string{"trailing  "}, Province: []string{"#hash"}, StreetAddress: []string{"1 Main St"}},
			`CN=\ \ two leading,STREET=1 Main St,L=trailing\ \ ,ST=\#hash`},
		{pkix.Name{CommonName: "x", ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "x@example.com"},
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"},
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: "uid1"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 4}, Value: "Smith"},
		}}, `2.5.4.4=#1305536d697468,UID=uid1,DC=example,1.2.840.113549.1.9.1=#0c0d78406578616d706c652e636f6d,CN=x`},
		{pkix.Name{CommonName: "ünïcödé ✓"}, "CN=ünïcödé ✓"},
	} {
		id := s.MustIssue(t, "dn", tc.subject)
		got, err := DistinguishedName(id.Cert)
		if err != nil || got != tc.java {
			t.Errorf("DistinguishedName = %q, %v; Java prints %q", got, err, tc.java)
		}
	}
}
