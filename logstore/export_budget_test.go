package logstore

// ZerosRecord is one well-formed keyed record (offset delta 0) whose value
// is valueLen zero bytes, for batches that compress very well and
// decompress to a chosen size (request_decompress_test.go).
func ZerosRecord(valueLen int) []byte {
	return withLength(rawRec{key: []byte("k"), value: make([]byte, valueLen)}.body())
}
