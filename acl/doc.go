// Package acl owns authorization: Kafka's ACL bindings (resource type,
// LITERAL or PREFIXED pattern, principal, host, operation, ALLOW or DENY)
// and the decision Kafka 4.4's StandardAuthorizer makes from them.
//
// It holds no state of its own: the bindings live in the metadata log
// (controller/acls.go keeps them as an immutable *Set in each image) and
// the broker asks an Authorizer about each action with the image's Set.
//
// The decision (Authorizer.Authorize), as StandardAuthorizerData makes it:
//
//   - a principal named in super.users (semicolon-separated, e.g.
//     "User:admin;User:ops") is allowed everything;
//   - the ACLs that apply to a resource are those of its type whose
//     pattern matches its name: LITERAL with the same name, LITERAL "*"
//     (any name), PREFIXED with a name that starts the resource's;
//   - of those, an ACL matches the action when its principal is the
//     requester's or User:*, its host is the client's address, "*", or
//     (KIP-1276, Kafka 4.4) a CIDR range holding the address, and its
//     operation is the action's or ALL. An ALLOW ACL for READ, WRITE,
//     DELETE or ALTER also allows DESCRIBE, and one for ALTER_CONFIGS
//     allows DESCRIBE_CONFIGS; a DENY ACL denies only its own operation
//     (or all, for ALL);
//   - a matching DENY wins over any ALLOW; a matching ALLOW allows;
//   - when ACLs apply to the resource but none matches, the action is
//     denied; when none applies at all, allow.everyone.if.no.acl.found
//     decides (default false: denied).
//
// Hosts are compared as addresses where both sides parse as IPs, so an
// ACL for "::1" matches a client at 0:0:0:0:0:0:0:1; Kafka compares the
// ACL's text with Java's InetAddress.getHostAddress() text, which writes
// IPv6 addresses uncompressed, so there only the long form matches.
//
// Set indexes the ACLs by resource type, literal name and prefix length,
// so one decision costs a few map lookups whatever the number of ACLs,
// and a request that touches thousands of topics stays cheap.
package acl
