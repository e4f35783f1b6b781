package protocol

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// startSASL serves authRouter on a SASL listener authenticating with a
// fakeSASL.
func startSASL(t *testing.T, handshakeMax int16, configure func(*Server)) (*Server, string, *fakeSASL, *principals) {
	t.Helper()
	sasl, rec := newFakeSASL(), &principals{}
	srv, addr := startServer(t, authRouter(t, rec, handshakeMax), func(s *Server) {
		s.SASL = sasl
		s.SecurityProtocol = ProtocolSASLPlaintext
		if configure != nil {
			configure(s)
		}
	})
	return srv, addr, sasl, rec
}

func saslClient(t *testing.T, addr string, auth plain.Auth, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(auth.AsMechanism()), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSASLPlainClient checks a real client authenticates, with
// SaslHandshake v1 and SaslAuthenticate, or with SaslHandshake v0 and raw
// tokens when the router registered v0 only, and is then served as the
// user it authenticated as, over SASL_PLAINTEXT and SASL_SSL.
func TestSASLPlainClient(t *testing.T) {
	ca := newTestCA(t)
	for _, tt := range []struct {
		name         string
		handshakeMax int16
		tls          bool
	}{
		{"SaslAuthenticate", 1, false},
		{"raw tokens", 0, false},
		{"SASL_SSL", 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []kgo.Opt
			_, addr, _, rec := startSASL(t, tt.handshakeMax, func(s *Server) {
				if tt.tls {
					s.TLS = ca.serverTLS(t, tls.NoClientCert)
					s.SecurityProtocol = ProtocolSASLSSL
				}
			})
			if tt.tls {
				opts = append(opts, kgo.DialTLSConfig(ca.clientTLS()))
			}
			cl := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				t.Fatal(err)
			}
			want := Principal{Type: "User", Name: "alice"}
			if got := rec.all(); len(got) == 0 || got[0] != want {
				t.Fatalf("principals %v, want %v", got, want)
			}
		})
	}
}

// TestSASLWrongPassword checks a failed login: SASL_AUTHENTICATION_FAILED
// (58) with the mechanism's message, no sooner than
// connection.failed.authentication.delay.ms, then the connection closed;
// a real client gets the error, not a retry.
func TestSASLWrongPassword(t *testing.T) {
	const delay = 200 * time.Millisecond
	_, addr, _, rec := startSASL(t, 1, func(s *Server) { s.FailedAuthDelay = delay })

	c := dialRaw(t, addr)
	c.apiVersions(3, 1)
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: error %d", hs.ErrorCode)
	}
	sent := time.Now()
	resp := c.authenticate(2, plainToken("alice", "wrong"))
	if waited := time.Since(sent); waited < delay {
		t.Errorf("answered after %v, before the failed authentication delay %v", waited, delay)
	}
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("SaslAuthenticate: error %d %v, want 58 with the mechanism's message", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed()

	cl := saslClient(t, addr, plain.Auth{User: "alice", Pass: "wrong"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("client error %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("served %d requests without authentication", len(got))
	}
}

// TestSASLRequestBeforeAuthentication checks that before authentication
// only ApiVersions and the SASL requests are served: a Metadata request
// (first, after ApiVersions, after SaslHandshake v1) closes the
// connection unanswered, as do a second ApiVersions and a SaslAuthenticate
// out of turn (after v0 it is a raw token the mechanism cannot read).
func TestSASLRequestBeforeAuthentication(t *testing.T) {
	_, addr, _, rec := startSASL(t, 1, nil)
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	for _, tt := range []struct {
		name   string
		before func(c *rawConn)
		send   kmsg.Request
	}{
		{"first request", func(*rawConn) {}, metadata},
		{"after ApiVersions", func(c *rawConn) { c.apiVersions(3, 1) }, metadata},
		{"after SaslHandshake", func(c *rawConn) { c.apiVersions(3, 1); c.handshake(1, "PLAIN") }, metadata},
		{"second ApiVersions", func(c *rawConn) { c.apiVersions(3, 1) }, kmsg.NewPtrApiVersionsRequest()},
		{"SaslAuthenticate without a handshake", func(*rawConn) {}, kmsg.NewPtrSASLAuthenticateRequest()},
		{"SaslAuthenticate after SaslHandshake v0", func(c *rawConn) { c.handshake(0, "PLAIN") }, kmsg.NewPtrSASLAuthenticateRequest()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			tt.before(c)
			c.write(withSize(requestFrame(tt.send, 9, kmsg.StringPtr("raw"))))
			c.expectClosed()
		})
	}
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("served %d Metadata requests before authentication", len(got))
	}

	// A client without SASL configured is told no more than that.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil {
		t.Fatal("a client without SASL was served Metadata")
	}
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("served %d Metadata requests before authentication", len(got))
	}
}

// TestSASLRawTokens checks SaslHandshake v0's framing by hand: raw
// size-prefixed tokens, no Kafka header, a raw answer (empty for PLAIN),
// then Kafka requests served as the user.
func TestSASLRawTokens(t *testing.T) {
	_, addr, _, rec := startSASL(t, 1, nil)
	c := dialRaw(t, addr)
	if hs := c.handshake(0, "PLAIN"); hs.ErrorCode != 0 || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN,PLAIN-TOO" {
		t.Fatalf("SaslHandshake v0: error %d, mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	c.write(withSize(plainToken("bob", "bob-secret")))
	if answer := c.readToken(); len(answer) != 0 {
		t.Fatalf("raw answer of %d bytes, want an empty token", len(answer))
	}
	c.metadata(5)
	if got := rec.all(); len(got) != 1 || got[0].Name != "bob" {
		t.Fatalf("principals %v, want User:bob", got)
	}

	// A raw token too short to be a Kafka header is still a token.
	c = dialRaw(t, addr)
	c.handshake(0, "PLAIN")
	c.write(withSize([]byte{0, 'x'}))
	c.expectClosed() // malformed for the mechanism: closed without an answer

	// A failed login has no answer in this framing: the connection is
	// closed.
	c = dialRaw(t, addr)
	c.handshake(0, "PLAIN")
	c.write(withSize(plainToken("bob", "wrong")))
	c.expectClosed()
	if got := rec.all(); len(got) != 1 {
		t.Fatalf("served %d requests, want bob's one", len(got))
	}
}

// TestSASLUnsupportedMechanism checks a mechanism that is not enabled:
// UNSUPPORTED_SASL_MECHANISM (33) with the enabled ones, then the
// connection closed.
func TestSASLUnsupportedMechanism(t *testing.T) {
	_, addr, _, _ := startSASL(t, 1, nil)
	for _, v := range []int16{0, 1} {
		c := dialRaw(t, addr)
		hs := c.handshake(v, "SCRAM-SHA-512")
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN,PLAIN-TOO" {
			t.Fatalf("v%d: error %d, mechanisms %v; want 33 with PLAIN,PLAIN-TOO", v, hs.ErrorCode, hs.SupportedMechanisms)
		}
		c.expectClosed()
	}
}

// TestSASLOversizedFrameBeforeAuthentication checks a frame larger than
// sasl.server.max.receive.size (524288) from a connection that has not
// authenticated is refused on its size prefix, nothing read or allocated
// for it, whether it claims to be a request or a raw token, while a frame
// of exactly the limit is taken.
func TestSASLOversizedFrameBeforeAuthentication(t *testing.T) {
	srv, addr, _, _ := startSASL(t, 1, func(s *Server) { s.QueuedMaxRequestBytes = 64 << 20 })
	t.Run("request", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.write(binary.BigEndian.AppendUint32(nil, 524289))
		c.expectClosed()
	})
	t.Run("raw token", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(0, "PLAIN")
		c.write(binary.BigEndian.AppendUint32(nil, 100<<20))
		c.expectClosed()
	})
	t.Run("at the limit", func(t *testing.T) {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
		frame := requestFrame(req, 4, kmsg.StringPtr("raw"))
		frame = append(frame, make([]byte, 524288-len(frame))...) // trailing bytes are ignored
		c.write(withSize(frame))
		corr, _ := decodeResponse(t, c.readFrame(), 18, 3, 3)
		if corr != 4 {
			t.Fatalf("correlation id %d", corr)
		}
	})
	eventually(t, "no request memory held", func() bool { return srv.RequestMemoryInUse() == 0 })
}

// TestSASLReauthenticationClient checks KIP-368 with a real client: with
// connections.max.reauth.ms of 2s, franz-go re-authenticates on its
// connection before each session ends and keeps being served across
// several sessions.
func TestSASLReauthenticationClient(t *testing.T) {
	_, addr, sasl, rec := startSASL(t, 1, func(s *Server) { s.ReauthMax = 2 * time.Second })
	cl := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for sasl.mostStarts() < 4 { // the authentication and three re-authentications
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("after %d authentications: %v", sasl.mostStarts(), err)
		}
		time.Sleep(20 * time.Millisecond) // a client's pace, not a wait for a condition
	}
	for _, p := range rec.all() {
		if p.Name != "alice" {
			t.Fatalf("served as %v", p)
		}
	}
}

// TestSASLSessionExpiry checks a session that ends without
// re-authentication: SaslAuthenticate v1+ tells its lifetime, and the
// next request after it closes the connection unanswered.
func TestSASLSessionExpiry(t *testing.T) {
	const reauthMax = 300 * time.Millisecond
	_, addr, _, rec := startSASL(t, 1, func(s *Server) { s.ReauthMax = reauthMax })
	c := dialRaw(t, addr)
	lifetime := c.login("alice", "alice-secret")
	if lifetime <= 0 || lifetime > reauthMax.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want up to %d", lifetime, reauthMax.Milliseconds())
	}
	time.Sleep(time.Duration(lifetime)*time.Millisecond + 50*time.Millisecond) // let the session end
	served := len(rec.all())
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.write(withSize(requestFrame(req, 3, kmsg.StringPtr("raw"))))
	c.expectClosed()
	if n := len(rec.all()); n != served {
		t.Fatalf("served a request on an expired session")
	}

	// A credential's own expiry bounds the session too.
	_, addr, sasl, _ := startSASL(t, 1, nil)
	sasl.expiry = time.Now().Add(time.Hour)
	c = dialRaw(t, addr)
	if lifetime := c.login("bob", "bob-secret"); lifetime <= 0 || lifetime > time.Hour.Milliseconds() {
		t.Fatalf("session lifetime %d ms for a credential expiring in an hour", lifetime)
	}
}

// TestSASLReauthentication checks re-authentication by hand: the same
// user again keeps the connection served; another user, or another
// mechanism, fails it with SASL_AUTHENTICATION_FAILED and closes it.
func TestSASLReauthentication(t *testing.T) {
	_, addr, _, rec := startSASL(t, 1, func(s *Server) { s.ReauthMax = time.Hour })

	c := dialRaw(t, addr)
	c.login("alice", "alice-secret")
	c.metadata(1)
	if lifetime := c.login("alice", "alice-secret"); lifetime <= 0 {
		t.Fatalf("re-authentication gave lifetime %d", lifetime)
	}
	c.metadata(2)

	t.Run("principal change", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.login("alice", "alice-secret")
		if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: %d", hs.ErrorCode)
		}
		resp := c.authenticate(2, plainToken("bob", "bob-secret"))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "User:alice to User:bob") {
			t.Fatalf("re-authentication as another user: error %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		c.expectClosed()
	})
	t.Run("mechanism change", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.login("alice", "alice-secret")
		if hs := c.handshake(1, "PLAIN-TOO"); hs.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: %d", hs.ErrorCode)
		}
		resp := c.authenticate(2, plainToken("alice", "alice-secret"))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication with another mechanism: error %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		c.expectClosed()
	})
	for _, p := range rec.all() {
		if p.Name != "alice" {
			t.Fatalf("served as %v", p)
		}
	}
}

// TestSASLHandshakeWithoutSession checks a SaslHandshake on an
// authenticated connection whose session never expires: no
// re-authentication, the router's handler answers it (the broker's
// ILLEGAL_SASL_STATE), and the connection goes on.
func TestSASLHandshakeWithoutSession(t *testing.T) {
	_, addr, _, _ := startSASL(t, 1, nil)
	c := dialRaw(t, addr)
	if lifetime := c.login("alice", "alice-secret"); lifetime != 0 {
		t.Fatalf("session lifetime %d without connections.max.reauth.ms", lifetime)
	}
	if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake after authentication: error %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
	}
	c.metadata(3)
}
