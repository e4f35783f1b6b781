package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLength is Kafka's limit: 249 leaves room for a partition
// suffix and the ".deleted" / ".log" names derived from the topic name in a
// 255-byte file name.
const maxTopicNameLength = 249

// metadataTopicName is KRaft's metadata log topic. sluice keeps its raft
// log in the directory such a partition would use (__cluster_metadata-0), so
// a user topic of this name would collide with it on disk.
const metadataTopicName = "__cluster_metadata"

// internalTopics are the topics Kafka itself creates and marks internal;
// clients hide them unless asked and refuse to produce to them directly.
var internalTopics = map[string]bool{
	"__consumer_offsets":  true,
	"__transaction_state": true,
	"__share_group_state": true,
}

// IsInternalTopic reports whether name is one of Kafka's internal topics.
func IsInternalTopic(name string) bool { return internalTopics[name] }

// ValidateTopicName checks Kafka's rules for a topic name (Kafka's
// Topic.validate), returning an INVALID_TOPIC_EXCEPTION with Kafka's
// wording. Brokers check names with it where Kafka's brokers do, without
// asking the controller: a Metadata request's topics (an illegal name is
// never auto-created, and the client learns so instead of waiting for a
// topic that never comes) and config resources.
func ValidateTopicName(name string) error { return validateTopicName(name) }

// validateTopicName is ValidateTopicName, the name the controller's own
// checks use.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: Topic name is illegal, it can't be empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: Topic name cannot be \".\" or \"..\"", kerr.InvalidTopicException)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: Topic name is illegal, it can't be longer than %d characters, topic name: %s",
			kerr.InvalidTopicException, maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicChar(name[i]) {
			return fmt.Errorf("%w: Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
				kerr.InvalidTopicException, name)
		}
	}
	return nil
}

func legalTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// collisionKey maps a topic name to the form under which it collides with
// others: Kafka's metric names replace '.' with '_', so "a.b" and "a_b" would
// report into the same metrics and may not coexist.
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// collidingTopic returns the existing topic whose name differs from name
// only by '.' versus '_', or "" if there is none.
func collidingTopic(img *Image, name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	key := collisionKey(name)
	for existing := range img.Topics {
		if existing != name && collisionKey(existing) == key {
			return existing
		}
	}
	return ""
}

// metadataTopicID is the id KRaft reserves for __cluster_metadata
// (Uuid.METADATA_TOPIC_ID); it is never handed to a user topic.
var metadataTopicID = [16]byte{15: 1}

// newUUID returns a random id the way Kafka's Uuid.randomUuid does: a
// version-4 UUID that is not the zero id, not a reserved id, and whose
// base64 text does not start with '-', which command-line tools would read
// as a flag.
func newUUID() [16]byte {
	for {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("controller: crypto/rand: %v", err))
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // IETF variant
		if id == ([16]byte{}) || id == metadataTopicID || strings.HasPrefix(uuidString(id), "-") {
			continue
		}
		return id
	}
}

// uuidString renders an id as Kafka does: 22 characters of unpadded
// base64url.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// NewClusterID returns a fresh cluster id in Kafka's format, as
// kafka-storage.sh random-uuid prints it.
func NewClusterID() string { return uuidString(newUUID()) }
