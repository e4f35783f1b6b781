package config

import (
	"strings"
	"testing"
)

// TestAuthorizerKeys: authorizer.class.name takes Kafka's StandardAuthorizer
// or the legacy AclAuthorizer and refuses any other class with a message
// that says why; super.users must hold TYPE:NAME principals.
func TestAuthorizerKeys(t *testing.T) {
	b := Default()
	if b.AuthorizerClassName != "" || b.SuperUsers != "" || b.AllowEveryoneIfNoACLFound {
		t.Fatalf("defaults %q %q %v", b.AuthorizerClassName, b.SuperUsers, b.AllowEveryoneIfNoACLFound)
	}
	for _, class := range []string{StandardAuthorizerClass, AclAuthorizerClass} {
		if err := b.Set("authorizer.class.name", class); err != nil || b.AuthorizerClassName != class {
			t.Fatalf("%s: %v", class, err)
		}
	}
	err := b.Set("authorizer.class.name", "com.example.MyAuthorizer")
	if err == nil || !strings.Contains(err.Error(), "sluice has no Java plugins") {
		t.Fatalf("a plugin class: %v", err)
	}
	if err := b.Set("super.users", "User:admin; User:ops"); err != nil || b.SuperUsers != "User:admin; User:ops" {
		t.Fatalf("super.users: %v %q", err, b.SuperUsers)
	}
	if err := b.Set("super.users", "User:admin;ops"); err == nil || !strings.Contains(err.Error(), "principalType:principalName but got ops") {
		t.Fatalf("a principal without a type: %v", err)
	}
	if err := b.Set("allow.everyone.if.no.acl.found", "true"); err != nil || !b.AllowEveryoneIfNoACLFound {
		t.Fatalf("allow.everyone.if.no.acl.found: %v", err)
	}
}
