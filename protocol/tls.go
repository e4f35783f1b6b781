package protocol

// TLS on SSL and SASL_SSL listeners (issue 19), as Kafka's
// SslTransportLayer does it:
//
//   - the handshake runs on the connection's own goroutine, never in the
//     accept loop, so a client that connects and stalls holds up no one
//     else. It must finish within connections.max.idle.ms (IdleTimeout),
//     or defaultHandshakeTimeout when that is unset; a handshake that
//     fails (a PLAINTEXT client on a TLS port, a client certificate
//     missing where ssl.client.auth=required, one the truststore does not
//     trust, a timeout) closes the connection with an Info line naming
//     the reason, and nothing is served on it;
//   - on an SSL listener the principal is the verified client
//     certificate's (CertPrincipal, by default User:<subject as RFC 2253
//     prints it>, Kafka's DefaultKafkaPrincipalBuilder), or
//     User:ANONYMOUS without one. A certificate sent but not verified
//     (tls.RequestClientCert) names nobody. On SASL_SSL the principal is
//     SASL's, whatever the certificate;
//   - everything after the handshake (reads and their deadlines, the
//     interrupt at shutdown, idle and slow-frame limits) works on the
//     tls.Conn as on the socket: deadlines are the socket's. Responses
//     go through a buffered writer, one flush per response, so a frame's
//     size prefix does not cost a TLS record of its own; record bytes
//     from segment files are copied (a tls.Conn is no syscall.Conn, so
//     sendfile cannot encrypt them), as Kafka's SslTransportLayer copies.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"time"
)

// defaultHandshakeTimeout bounds a TLS handshake on a server with no
// IdleTimeout.
const defaultHandshakeTimeout = 10 * time.Second

// tlsWriteBuffer is the size of a TLS connection's response buffer: one
// TLS record's worth of plaintext.
const tlsWriteBuffer = 16 << 10

func (c *conn) handshakeTimeout() time.Duration {
	if d := c.srv.IdleTimeout; d > 0 {
		return d
	}
	return defaultHandshakeTimeout
}

// startTLS runs the server side of the TLS handshake on c.nc and makes the
// tls.Conn the connection's wire. It reports false, having logged why, if
// the connection is to be closed.
func (c *conn) startTLS(ctx context.Context) bool {
	cfg := c.srv.TLS()
	if cfg == nil {
		c.log.Error("protocol: TLS listener has no TLS configuration, closing connection")
		return false
	}
	tc := tls.Server(c.nc, cfg)
	timeout := c.handshakeTimeout()
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		switch {
		case ctx.Err() != nil:
			c.log.Debug("protocol: closing connection for shutdown during its TLS handshake")
		case errors.Is(err, context.DeadlineExceeded):
			c.log.Info("protocol: TLS handshake not complete within connections.max.idle.ms, closing connection", "timeout", timeout)
		default:
			c.log.Info("protocol: TLS handshake failed, closing connection", "err", err)
		}
		return false
	}
	c.tls = tc
	c.wire = tc
	c.out = bufio.NewWriterSize(tc, tlsWriteBuffer)
	state := tc.ConnectionState()
	if c.srv.SASL == nil && len(state.VerifiedChains) > 0 && len(state.PeerCertificates) > 0 {
		cert := state.PeerCertificates[0]
		p := DefaultCertPrincipal(cert)
		if m := c.srv.CertPrincipal; m != nil {
			p = m(cert)
		}
		if p == (Principal{}) {
			// No ssl.principal.mapping.rules rule applies: Kafka's
			// SslPrincipalMapper fails the connection's principal,
			// and so the connection.
			c.log.Info("protocol: client certificate maps to no principal (no ssl.principal.mapping.rules rule applies), closing connection",
				"subject", CertSubjectName(cert))
			return false
		}
		c.info.SetPrincipal(p)
	}
	c.log.Debug("protocol: TLS handshake complete", "tls_version", tls.VersionName(state.Version),
		"cipher_suite", tls.CipherSuiteName(state.CipherSuite), "principal", c.info.Principal().String())
	return true
}

// writeResponse writes f to the client: straight to the socket, or through
// the TLS buffer, flushed.
func (c *conn) writeResponse(f *responseFrame) error {
	if c.out == nil {
		return f.writeTo(c.nc)
	}
	if err := f.writeTo(c.out); err != nil {
		return err
	}
	return c.out.Flush()
}

// closeWire closes the connection: a TLS one with its close_notify alert
// first (bounded by crypto/tls's own five-second write deadline), as
// Kafka's SslTransportLayer closes.
func (c *conn) closeWire() {
	if c.tls != nil {
		c.tls.Close()
	}
	c.nc.Close()
}
