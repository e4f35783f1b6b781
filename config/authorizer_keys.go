package config

import (
	"fmt"
	"slices"
	"strings"
)

// The authorizer class names that turn on sluice's built-in authorizer:
// Kafka's StandardAuthorizer, whose semantics it has, and the legacy
// ZooKeeper-era AclAuthorizer, whose ACL semantics are the same, so a
// config file written for either works unchanged.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	AclAuthorizerClass      = "kafka.security.authorizer.AclAuthorizer"
)

// validAuthorizer accepts an empty authorizer.class.name (no authorizer)
// or one of the class names sluice's authorizer stands for.
func validAuthorizer(v string) string {
	if v == "" || slices.Contains([]string{StandardAuthorizerClass, AclAuthorizerClass}, v) {
		return ""
	}
	return fmt.Sprintf("%q cannot be loaded: sluice has no Java plugins; its built-in authorizer (Kafka's StandardAuthorizer semantics) is turned on by %s or %s", v, StandardAuthorizerClass, AclAuthorizerClass)
}

// validSuperUsers checks super.users as StandardAuthorizer reads it:
// semicolon-separated principals, each TYPE:NAME.
func validSuperUsers(v string) string {
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" && !strings.Contains(p, ":") {
			return fmt.Sprintf("expected a string in format principalType:principalName but got %s", p)
		}
	}
	return ""
}
