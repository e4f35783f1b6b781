// Package security owns how sluice establishes who a client or a peer is:
// TLS configuration built from Kafka's ssl.* keys (PEM and PKCS12
// keystores, truststores, client authentication, reload when the files
// change, ssl.principal.mapping.rules), and the server side of the SASL
// mechanisms Kafka brokers offer (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
// OAUTHBEARER) as protocol.SASLServer implementations.
//
// It knows nothing of listeners, requests or metadata: the broker builds
// its inputs from the config and the metadata image, and protocol runs the
// exchanges on connections.
package security
