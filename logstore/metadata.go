package logstore

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
)

const partitionMetadataFile = "partition.metadata"

// formatTopicID renders a topic id as Kafka's Uuid.toString does:
// URL-safe base64 without padding (22 characters).
func formatTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func parseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// partitionMetadata renders partition.metadata exactly as Kafka's
// PartitionMetadataFile writes it: two "key: value" lines, the second
// without a trailing newline.
func partitionMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + formatTopicID(id))
}

// readPartitionMetadata returns the topic id stored in dir, ok=false if the
// file does not exist. Either line ending is accepted.
func readPartitionMetadata(fsys FS, dir string) (id [16]byte, ok bool, err error) {
	data, err := readWholeFile(fsys, filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		if isNotExist(err) {
			return id, false, nil
		}
		return id, false, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, found := strings.Cut(string(line), ":")
		if !found {
			continue
		}
		switch strings.TrimSpace(k) {
		case "version":
			if strings.TrimSpace(v) != "0" {
				return id, false, fmt.Errorf("partition.metadata: unsupported version %q", v)
			}
		case "topic_id":
			id, err = parseTopicID(strings.TrimSpace(v))
			return id, err == nil, err
		}
	}
	return id, false, fmt.Errorf("partition.metadata in %s has no topic_id", dir)
}
