// Package protocol is sluice's Kafka wire layer: it turns bytes on a TCP
// connection into decoded kmsg requests, hands each to the handler
// registered for its api key, and turns the handler's kmsg response back
// into bytes. It knows nothing about partitions, groups or disks.
//
// # Wire format
//
// Every request and response is a frame: a big-endian int32 size, then that
// many bytes.
//
//	request frame                         response frame
//	+--------+----------------+------+    +--------+----------------+------+
//	| size   | request header | body |    | size   | resp. header   | body |
//	| int32  | v0 / v1 / v2   |      |    | int32  | v0 / v1        |      |
//	+--------+----------------+------+    +--------+----------------+------+
//
//	request header v0: api_key int16, api_version int16, correlation_id int32
//	request header v1: v0 + client_id nullable string (int16 length, -1 = null)
//	request header v2: v1 + tagged fields (uvarint count, then tag/size/bytes)
//	response header v0: correlation_id int32
//	response header v1: v0 + tagged fields (always empty here)
//
// A request uses header v2 exactly when its api key and version are flexible
// (KIP-482), v1 otherwise, and v0 only for ControlledShutdown v0; kmsg's
// IsFlexible is the source of truth. Responses mirror that with v1 and v0,
// except ApiVersions, which always answers with header v0 (KIP-511).
//
// # What closes a connection
//
// Kafka closes a connection rather than answer a request it cannot read, and
// so does sluice. Each of these closes only the offending connection, and
// is logged with the remote address and, where known, the api key, version
// and client id:
//
//   - a size prefix that is negative, smaller than the 8-byte minimum header,
//     or above MaxRequestSize (socket.request.max.bytes). The size is checked
//     before any allocation, and the frame buffer grows with the bytes that
//     actually arrive, so a claimed size costs nothing by itself;
//   - a truncated or malformed header;
//   - an api key with no registered handler;
//   - a version outside the registered range, unless an UNSUPPORTED_VERSION
//     answer can be encoded (always for ApiVersions via the KIP-511
//     fallback; for other keys when the response at that version has a
//     top-level error code on the wire);
//   - a body kmsg cannot decode. Bytes after a completely decoded body are
//     ignored, as by kmsg and Kafka;
//   - a handler returning an error;
//   - a panic while serving the connection (recovered and logged);
//   - a request whose decode charge exceeds the whole request memory
//     budget (see below), refused as soon as its api key is known;
//   - a new connection over max.connections.per.ip (closed at once) or, at
//     max.connections, a client's (closed after its first request header;
//     see connlimit.go);
//   - a new connection from an address over its connection_creation_rate
//     quota (KIP-612): not read, closed after its throttle time
//     (connquota.go). Over max.connection.creation.rate the acceptor
//     instead waits before accepting the next connection: excess connects
//     are delayed, not closed;
//   - nothing received for connections.max.idle.ms after the last answer,
//     or a frame not complete connections.max.idle.ms after its first
//     byte (a slow-loris client);
//   - on a TLS listener, a handshake that fails or does not finish within
//     connections.max.idle.ms (tls.go);
//   - on a SASL listener, before authentication: any request but
//     ApiVersions, SaslHandshake and SaslAuthenticate, a frame over
//     sasl.server.max.receive.size, an unsupported mechanism or a failed
//     login (both answered, after connection.failed.authentication.delay.ms);
//     after it, a request on a session past its end that does not
//     re-authenticate it (KIP-368; sasl.go).
//
// # Request memory
//
// Server.QueuedMaxRequestBytes (queued.max.request.bytes) bounds the
// memory held by requests between their first byte and their answer, for
// all connections together (budget.go). A frame's buffer is reserved as
// its bytes arrive; a complete frame is charged what kmsg may allocate to
// decode it, from a measured per-api-key factor or, for Produce, a walk of
// its arrays (decodecost.go). A connection that cannot reserve waits,
// reading nothing, until memory is released. So the bytes attributable to
// requests stay below the budget plus one frame, whatever clients send.
//
// # Bytes sent from files
//
// A handler may return a SplicedResponse whose byte fields hold
// placeholders for ranges of files (Fetch does, for record batches in
// segment files). The router encodes it as any response and cuts the
// encoding around the placeholders; the connection writes the memory parts
// with writev and the file ranges with sendfile(2) at explicit offsets, so
// record bytes go from the page cache to the socket without passing
// through the broker's memory (see splice.go).
//
// # Concurrency
//
// One goroutine per connection reads a request, serves it and writes the
// response before reading the next, as Kafka mutes a connection while a
// request is in flight. Handlers may block (a long-poll Fetch, a Produce
// waiting for acks=all) and get a context cancelled on Server.Shutdown.
package protocol
