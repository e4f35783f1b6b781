package protocol

// SASL on SASL_PLAINTEXT and SASL_SSL listeners (issue 19), as Kafka's
// SaslServerAuthenticator and KafkaChannel run it. The mechanisms are not
// this package's (Server.SASL starts their exchanges); the framing,
// ordering, re-authentication and failure handling are.
//
// Before its first authentication a connection is served:
//
//   - ApiVersions, through the router as anywhere else, once: after an
//     answer without error the next request must be SaslHandshake (an
//     ApiVersions refused for its version or software name may be asked
//     again, as Kafka allows);
//   - SaslHandshake (key 17, v0-1), answered here with the enabled
//     mechanisms. A mechanism not enabled is answered
//     UNSUPPORTED_SASL_MECHANISM, after FailedAuthDelay, and the
//     connection closed;
//   - then the exchange's tokens: after SaslHandshake v0 the client sends
//     raw size-prefixed tokens with no Kafka header and gets raw
//     size-prefixed answers (Kafka's framing before KIP-152); after v1 it
//     sends SaslAuthenticate requests (key 36, v0-2) and gets
//     SaslAuthenticate answers, with session_lifetime_ms from v1. The
//     versions served are the ones the router registered for keys 17 and
//     36, so ApiVersions and this code never disagree; the router's
//     header parsing and response headers are used. Those keys' own
//     handlers (the broker's ILLEGAL_SASL_STATE answers) serve what
//     arrives outside an authentication, as Kafka's KafkaApis does; the
//     requests of an authentication never reach the router's Hook.
//
// Anything else before authentication closes the connection at once, as
// Kafka's "Unexpected Kafka request of type … during SASL handshake" does
// (a client without SASL configured on a SASL port sees its ApiVersions
// answered and its next request cut off). Every frame before
// authentication, and during a re-authentication, is bounded by Kafka's
// sasl.server.max.receive.size (saslMaxReceiveSize), checked on the size
// prefix before anything is allocated.
//
// A failed login (*AuthFailedError from the mechanism) is answered
// SASL_AUTHENTICATION_FAILED with its message (or, with raw tokens,
// nothing) after FailedAuthDelay, connection.failed.authentication.delay.ms,
// and the connection closed; a frame over the size limit is also held for
// the delay before the close. Any other error of an exchange closes the
// connection at once.
//
// Re-authentication (KIP-368): a session lasts min(ReauthMax, the
// credential's expiry − now) when either is set; SaslAuthenticate v1+
// tells the client, which re-authenticates on the same connection before
// then with SaslHandshake and SaslAuthenticate (franz-go and the Java
// client do it by themselves). A SaslHandshake on an authenticated
// connection starts a re-authentication if the session has an expiry and
// the last re-authentication began at least a second ago (Kafka's
// KafkaChannel.maybeBeginServerReauthentication); otherwise it goes to the
// router like any request. The mechanism and principal must not change: a
// different enabled mechanism is answered by the handshake but fails the
// first token, a different principal fails the last one, both with
// SASL_AUTHENTICATION_FAILED. A request other than a re-authentication on
// a connection whose session has expired closes it, as Kafka's
// SocketServer does; an idle expired connection is left to
// connections.max.idle.ms.
//
// Two differences from Kafka, both deliberate: a request other than
// SaslAuthenticate during a SaslAuthenticate exchange closes the
// connection without Kafka's ILLEGAL_SASL_STATE answer to it (which would
// need an error answer for every api key), and a re-authentication with a
// changed mechanism is answered SASL_AUTHENTICATION_FAILED with the
// reason where Kafka closes without an answer.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	saslHandshakeKey    int16 = 17
	saslAuthenticateKey int16 = 36

	// saslMaxReceiveSize is Kafka's sasl.server.max.receive.size
	// default: the largest frame taken from a connection that has not
	// authenticated.
	saslMaxReceiveSize = 524288

	// minReauthInterval is how soon after the last one a
	// re-authentication may begin (Kafka's KafkaChannel
	// MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS).
	minReauthInterval = time.Second
)

// saslSession is a SASL connection's authentication, owned by the
// connection's goroutine.
type saslSession struct {
	// authenticated is false before the first authentication and while
	// re-authenticating: frames are then bounded by saslMaxReceiveSize.
	authenticated bool
	// mechanism and principal are the last successful authentication's;
	// a re-authentication must not change them.
	mechanism string
	principal Principal
	// expiry is when the session ends, zero for never.
	expiry time.Time
	// reauthBegan is when the last re-authentication began, zero if none
	// has.
	reauthBegan time.Time
}

// maxRequestSize is the largest frame the connection takes now:
// socket.request.max.bytes, or sasl.server.max.receive.size while a SASL
// connection is not authenticated.
func (c *conn) maxRequestSize() int32 {
	m := c.srv.maxRequestSize()
	if c.sasl != nil && !c.sasl.authenticated {
		m = min(m, saslMaxReceiveSize)
	}
	return m
}

// authenticate runs a SASL connection's first authentication: ApiVersions
// and SaslHandshake, then the exchange. It reports whether the connection
// authenticated; if not, it has logged why and the connection is to be
// closed.
func (c *conn) authenticate(ctx context.Context, br *bufio.Reader) bool {
	versionsAnswered := false
	for {
		frame, held, err := c.readRequest(ctx, br)
		if err != nil {
			c.authReadFailed(ctx, err)
			return false
		}
		c.lastActive.Store(time.Now().UnixNano())
		h, _, err := parseHeaderPrefix(frame)
		switch {
		case err != nil:
			c.srv.budget.release(held)
			c.log.Warn("protocol: malformed request before SASL authentication, closing connection", "err", err)
			return false
		case h.APIKey == apiVersionsKey && !versionsAnswered:
			versionsAnswered, err = c.serveApiVersionsBeforeAuth(ctx, frame)
			c.srv.budget.release(held)
			if err != nil {
				return false
			}
		case h.APIKey == saslHandshakeKey:
			req, err := c.decodeSASLRequest(h, frame)
			c.srv.budget.release(held)
			if err != nil {
				return false
			}
			return c.saslHandshake(ctx, br, h, req.(*kmsg.SASLHandshakeRequest), false)
		default:
			c.srv.budget.release(held)
			why := "a client without SASL configured, or with the wrong security.protocol?"
			if h.APIKey == apiVersionsKey {
				why = "ApiVersions was already answered; SaslHandshake must follow"
			}
			c.log.Warn("protocol: unexpected request during SASL handshake, closing connection",
				"api_key", h.APIKey, "api", kmsg.NameForKey(h.APIKey), "api_version", h.APIVersion, "client_id", h.clientID(), "hint", why)
			return false
		}
	}
}

// serveApiVersionsBeforeAuth answers ApiVersions through the router and
// reports whether it was answered without error, after which Kafka takes
// only SaslHandshake. A non-nil error means the connection is to be
// closed.
func (c *conn) serveApiVersionsBeforeAuth(ctx context.Context, frame []byte) (bool, error) {
	f, _, err := c.srv.Router.serve(ctx, &c.info, frame, nil)
	if err != nil {
		return false, err // Router.serve logged why
	}
	if f == nil {
		return false, nil
	}
	if err := c.writeResponse(f); err != nil {
		c.log.Debug("protocol: write failed, closing connection", "err", err)
		return false, err
	}
	// An ApiVersions answer is header v0 (the correlation id) and then,
	// at every version, the error code.
	b, _ := f.bytes()
	return len(b) >= 6 && binary.BigEndian.Uint16(b[4:]) == 0, nil
}

// decodeSASLRequest decodes frame, a SaslHandshake or SaslAuthenticate
// request whose header prefix is h, at a version the router registered
// for its key. It logs why it fails; the connection is then to be closed.
func (c *conn) decodeSASLRequest(h Header, frame []byte) (kmsg.Request, error) {
	req, err := func() (kmsg.Request, error) {
		rt, ok := c.srv.Router.lookup(h.APIKey)
		if !ok {
			return nil, fmt.Errorf("%w: %d", ErrUnknownKey, h.APIKey)
		}
		if h.APIVersion < rt.minVersion || h.APIVersion > rt.maxVersion {
			return nil, fmt.Errorf("%w: %d, registered %d to %d", ErrUnsupportedVersion, h.APIVersion, rt.minVersion, rt.maxVersion)
		}
		_, rest, err := ParseRequestHeader(frame)
		if err != nil {
			return nil, err
		}
		body := kmsg.RequestForKey(h.APIKey)
		body.SetVersion(h.APIVersion)
		if err := body.ReadFrom(rest); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformedBody, err)
		}
		return body, nil
	}()
	if err != nil {
		c.log.Warn("protocol: refusing SASL request, closing connection",
			"api_key", h.APIKey, "api_version", h.APIVersion, "client_id", h.clientID(), "err", err)
	}
	return req, err
}

// saslAnswer encodes resp as the answer to the request whose header is h.
func saslAnswer(h Header, resp kmsg.Response) *responseFrame {
	resp.SetVersion(h.APIVersion)
	return memFrame(AppendResponse(nil, h.CorrelationID, ResponseHeaderVersion(h.APIKey, h.APIVersion), resp))
}

// saslHandshake answers a SaslHandshake and runs the exchange it starts,
// reporting whether it succeeded. reauth is true for a re-authentication,
// whose mechanism must be the session's.
func (c *conn) saslHandshake(ctx context.Context, br *bufio.Reader, h Header, req *kmsg.SASLHandshakeRequest, reauth bool) bool {
	s := c.sasl
	mechanisms := c.srv.SASL.Mechanisms()
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = mechanisms
	var x SASLExchange
	var badMechanism string
	if reauth && req.Mechanism != s.mechanism && slices.Contains(mechanisms, req.Mechanism) {
		badMechanism = fmt.Sprintf("SASL mechanism %s cannot re-authenticate a session authenticated with %s", req.Mechanism, s.mechanism)
	} else {
		var ok bool
		if x, ok = c.srv.SASL.Start(req.Mechanism, &c.info); !ok {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			c.failAuth(ctx, saslAnswer(h, resp), "protocol: SASL mechanism not enabled, closing connection",
				"mechanism", req.Mechanism, "enabled", mechanisms)
			return false
		}
	}
	if err := c.writeResponse(saslAnswer(h, resp)); err != nil {
		c.log.Debug("protocol: write failed, closing connection", "err", err)
		return false
	}
	return c.saslExchange(ctx, br, req.Mechanism, x, h.APIVersion >= 1, reauth, badMechanism)
}

// saslExchange runs the exchange x of mechanism to its end: tokens in
// SaslAuthenticate requests (headers) or raw. A non-empty badMechanism
// fails the first token with it.
func (c *conn) saslExchange(ctx context.Context, br *bufio.Reader, mechanism string, x SASLExchange, headers, reauth bool, badMechanism string) bool {
	s := c.sasl
	for {
		var (
			h     Header
			token []byte
			held  int64
			err   error
		)
		if headers {
			var frame []byte
			if frame, held, err = c.readRequest(ctx, br); err != nil {
				c.authReadFailed(ctx, err)
				return false
			}
			h, _, _ = parseHeaderPrefix(frame) // at least a header prefix: readRequest checked the size
			if h.APIKey != saslAuthenticateKey {
				c.srv.budget.release(held)
				c.log.Warn("protocol: unexpected request during SASL authentication, closing connection",
					"api_key", h.APIKey, "api", kmsg.NameForKey(h.APIKey), "api_version", h.APIVersion, "client_id", h.clientID(), "mechanism", mechanism)
				return false
			}
			req, err := c.decodeSASLRequest(h, frame)
			if err != nil {
				c.srv.budget.release(held)
				return false
			}
			token = req.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes
		} else if token, held, err = c.readToken(ctx, br); err != nil {
			c.authReadFailed(ctx, err)
			return false
		}
		c.lastActive.Store(time.Now().UnixNano())

		var out []byte
		var done bool
		if badMechanism != "" {
			err = &AuthFailedError{Msg: badMechanism}
		} else {
			out, done, err = x.Step(ctx, token)
		}
		if err == nil && done && reauth && x.Principal() != s.principal {
			err = &AuthFailedError{Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s to %s", s.principal, x.Principal())}
		}
		c.srv.budget.release(held)
		var failed *AuthFailedError
		switch {
		case errors.As(err, &failed):
			var answer *responseFrame
			if headers {
				resp := kmsg.NewPtrSASLAuthenticateResponse()
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				resp.ErrorMessage = kmsg.StringPtr(failed.Msg)
				answer = saslAnswer(h, resp)
			}
			what := "protocol: SASL authentication failed, closing connection"
			if reauth {
				what = "protocol: SASL re-authentication failed, closing connection"
			}
			c.failAuth(ctx, answer, what, "mechanism", mechanism, "reason", failed.Msg)
			return false
		case err != nil:
			c.log.Info("protocol: SASL exchange failed, closing connection", "mechanism", mechanism, "err", err)
			return false
		}

		var lifetime time.Duration
		if done {
			lifetime = c.saslComplete(mechanism, x, reauth)
		}
		answer := memFrame(out)
		if headers {
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.SASLAuthBytes = out
			if resp.SASLAuthBytes == nil {
				resp.SASLAuthBytes = []byte{}
			}
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
			answer = saslAnswer(h, resp)
		}
		if err := c.writeResponse(answer); err != nil {
			c.log.Debug("protocol: write failed, closing connection", "err", err)
			return false
		}
		if done {
			return true
		}
	}
}

// saslComplete records a successful authentication of x: the principal,
// the mechanism and the session's end. It returns the session's lifetime,
// 0 for none.
func (c *conn) saslComplete(mechanism string, x SASLExchange, reauth bool) time.Duration {
	s := c.sasl
	now := time.Now()
	reauthMax, credentialExpiry := c.srv.ReauthMax, x.Expiry()
	var lifetime time.Duration
	s.expiry = time.Time{}
	if reauthMax > 0 || !credentialExpiry.IsZero() {
		switch {
		case credentialExpiry.IsZero():
			lifetime = reauthMax
		case reauthMax <= 0:
			lifetime = credentialExpiry.Sub(now)
		default:
			lifetime = min(reauthMax, credentialExpiry.Sub(now))
		}
		lifetime = max(lifetime, 0)
		s.expiry = now.Add(lifetime)
	}
	s.authenticated = true
	s.mechanism = mechanism
	s.principal = x.Principal()
	c.info.SetPrincipal(s.principal)
	what := "protocol: SASL authentication complete"
	if reauth {
		what = "protocol: SASL re-authentication complete"
	}
	c.log.Debug(what, "mechanism", mechanism, "principal", s.principal.String(), "session_lifetime", lifetime)
	return lifetime
}

// checkSession is called for every request of an authenticated SASL
// connection before it is served. A SaslHandshake that may begin a
// re-authentication begins it here; a request on an expired session
// closes the connection. handled reports that the request was dealt with
// here, ok whether the connection stays open.
func (c *conn) checkSession(ctx context.Context, br *bufio.Reader, frame []byte) (handled, ok bool) {
	s := c.sasl
	if s.expiry.IsZero() {
		return false, true // no session end, no re-authentication
	}
	now := time.Now()
	// The api key is the frame's first two bytes (readRequest checked
	// it holds a header prefix); the header is parsed, with its client id
	// string, only when it matters.
	key := int16(binary.BigEndian.Uint16(frame))
	if key == saslHandshakeKey && (s.reauthBegan.IsZero() || now.Sub(s.reauthBegan) >= minReauthInterval) {
		h, _, _ := parseHeaderPrefix(frame)
		s.reauthBegan = now
		s.authenticated = false
		req, err := c.decodeSASLRequest(h, frame)
		if err != nil {
			return true, false
		}
		c.log.Debug("protocol: SASL re-authentication begins", "mechanism", s.mechanism, "principal", s.principal.String())
		return true, c.saslHandshake(ctx, br, h, req.(*kmsg.SASLHandshakeRequest), true)
	}
	if !now.Before(s.expiry) {
		h, _, _ := parseHeaderPrefix(frame)
		c.log.Debug("protocol: SASL session expired without re-authentication, closing connection (KIP-368)",
			"principal", s.principal.String(), "api_key", h.APIKey, "client_id", h.clientID())
		return true, false
	}
	return false, true
}

// readToken reads one raw SASL token (after SaslHandshake v0): an int32
// size, 0 to saslMaxReceiveSize, and that many bytes, bounded in time as
// readRequest is.
func (c *conn) readToken(ctx context.Context, br *bufio.Reader) ([]byte, int64, error) {
	if !c.beginRead(c.idleDeadline()) {
		return nil, 0, errStopped
	}
	defer c.endRead()
	if _, err := br.Peek(1); err != nil {
		return nil, 0, err
	}
	c.setDeadline(c.idleDeadline())
	var prefix [4]byte
	if _, err := io.ReadFull(br, prefix[:]); err != nil {
		return nil, 0, slowFrame(err)
	}
	size, limit := int32(binary.BigEndian.Uint32(prefix[:])), c.maxRequestSize()
	switch {
	case size < 0:
		return nil, 0, &FrameSizeError{Size: size, Max: limit, err: ErrFrameTooSmall}
	case size > limit:
		return nil, 0, &FrameSizeError{Size: size, Max: limit, err: ErrFrameTooLarge}
	case size == 0:
		return []byte{}, 0, nil
	}
	return c.readBody(ctx, br, int(size))
}

// authReadFailed logs why reading a frame during authentication ended the
// connection. A frame over the limit is an authentication failure in
// Kafka (SaslServerAuthenticator's "invalid receive size"), so its close
// waits FailedAuthDelay.
func (c *conn) authReadFailed(ctx context.Context, err error) {
	var sizeErr *FrameSizeError
	if !errors.As(err, &sizeErr) {
		c.logReadError(ctx, err)
		return
	}
	c.log.Info("protocol: SASL authentication failed: frame size outside 0 to sasl.server.max.receive.size, closing connection",
		"claimed_size", sizeErr.Size, "max_size", sizeErr.Max)
	c.failedAuthDelay(ctx)
}

// failAuth logs a failed authentication, waits FailedAuthDelay and sends
// answer, if any; the connection is then to be closed.
func (c *conn) failAuth(ctx context.Context, answer *responseFrame, msg string, attrs ...any) {
	c.log.Info(msg, attrs...)
	c.failedAuthDelay(ctx)
	if answer != nil {
		if err := c.writeResponse(answer); err != nil {
			c.log.Debug("protocol: write failed", "err", err)
		}
	}
}

// failedAuthDelay waits connection.failed.authentication.delay.ms, or
// until ctx ends: what a client guessing passwords pays for each guess.
func (c *conn) failedAuthDelay(ctx context.Context) {
	d := c.srv.FailedAuthDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
