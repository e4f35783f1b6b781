package protocol

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTLSServesAClient checks a real client over TLS: the handshake, a
// request served, the connection's principal ANONYMOUS without a client
// certificate.
func TestTLSServesAClient(t *testing.T) {
	ca := newTestCA(t)
	var rec principals
	_, addr := startServer(t, authRouter(t, &rec, 1), func(s *Server) {
		s.TLS = ca.serverTLS(t, tls.VerifyClientCertIfGiven)
		s.SecurityProtocol = ProtocolSSL
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(ca.clientTLS()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("Metadata over TLS: %v", err)
	}
	if got := rec.all(); len(got) == 0 || got[0] != Anonymous {
		t.Fatalf("principals %v, want %v", got, Anonymous)
	}
}

// TestTLSClientCertificatePrincipal checks the principal of a client with
// a verified certificate: by default User: and the subject as Java's
// X500Principal.getName() prints it, last RDN first; with CertPrincipal,
// what it maps the certificate to.
func TestTLSClientCertificatePrincipal(t *testing.T) {
	ca := newTestCA(t)
	client := ca.issue(t, pkix.Name{Country: []string{"US"}, Organization: []string{"Acme, Inc."}, OrganizationalUnit: []string{"eng"}, CommonName: "alice"}, false)
	for _, tt := range []struct {
		name   string
		mapper func(*x509.Certificate) Principal
		want   Principal
	}{
		{"default", nil, Principal{Type: "User", Name: `CN=alice,OU=eng,O=Acme\, Inc.,C=US`}},
		{"mapped", func(c *x509.Certificate) Principal { return Principal{Type: "User", Name: c.Subject.CommonName} }, Principal{Type: "User", Name: "alice"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rec principals
			_, addr := startServer(t, authRouter(t, &rec, 1), func(s *Server) {
				s.TLS = ca.serverTLS(t, tls.RequireAndVerifyClientCert)
				s.CertPrincipal = tt.mapper
			})
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(ca.clientTLS(client)))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				t.Fatal(err)
			}
			if got := rec.all(); len(got) == 0 || got[0] != tt.want {
				t.Fatalf("principals %v, want %v", got, tt.want)
			}
		})
	}
	// A certificate no mapping rule applies to has no principal: the
	// connection is closed, nothing served, as Kafka's SslPrincipalMapper
	// fails it.
	t.Run("no rule applies", func(t *testing.T) {
		var rec principals
		_, addr := startServer(t, authRouter(t, &rec, 1), func(s *Server) {
			s.TLS = ca.serverTLS(t, tls.RequireAndVerifyClientCert)
			s.CertPrincipal = func(*x509.Certificate) Principal { return Principal{} }
		})
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(ca.clientTLS(client)), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil {
			t.Fatal("served a client whose certificate maps to no principal")
		}
		if got := rec.all(); len(got) != 0 {
			t.Fatalf("requests served as %v", got)
		}
	})
}

// TestTLSHandshakeFailuresCloseTheConnection checks what must never be
// served on a TLS listener: a PLAINTEXT client, a client without the
// certificate ssl.client.auth=required asks for, one whose certificate the
// truststore does not trust, a client that connects and says nothing.
// Each is closed with an Info line naming the reason, nothing is served,
// and a good client is served afterwards.
func TestTLSHandshakeFailuresCloseTheConnection(t *testing.T) {
	ca, stranger := newTestCA(t), newTestCA(t)
	good := ca.issue(t, pkix.Name{CommonName: "good"}, false)
	untrusted := stranger.issue(t, pkix.Name{CommonName: "untrusted"}, false)
	logs := &logRecords{}
	var rec principals
	srv, addr := startServer(t, authRouter(t, &rec, 1), func(s *Server) {
		s.TLS = ca.serverTLS(t, tls.RequireAndVerifyClientCert)
		s.IdleTimeout = 2 * time.Second // ample for a handshake on a loaded machine
		s.Logger = slog.New(logs)
	})

	t.Run("plaintext client", func(t *testing.T) {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		c.write(withSize(requestFrame(req, 1, kmsg.StringPtr("plain"))))
		c.expectClosed()
		eventually(t, "the close logged", func() bool {
			_, ok := logs.find("INFO", "TLS handshake failed", "does not look like a TLS handshake")
			return ok
		})
	})
	for _, tt := range []struct {
		name  string
		certs []tls.Certificate
		log   string
	}{
		{"no client certificate", nil, "certificate"},
		{"untrusted client certificate", []tls.Certificate{untrusted}, "certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := tls.Dial("tcp", addr, ca.clientTLS(tt.certs...))
			if err != nil {
				return // refused in the handshake itself (TLS 1.2): closed, nothing served
			}
			// TLS 1.3: the client's handshake ends before the server
			// has checked its certificate; the refusal arrives on the
			// first read.
			c := &rawConn{t: t, nc: nc}
			t.Cleanup(func() { nc.Close() })
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			nc.Write(withSize(requestFrame(req, 1, kmsg.StringPtr("nocert"))))
			c.expectClosed()
		})
	}
	t.Run("silent client", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.expectClosed()
		eventually(t, "the close logged", func() bool {
			_, ok := logs.find("INFO", "TLS handshake not complete")
			return ok
		})
	})
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("served %d requests to clients that failed the handshake", len(got))
	}
	if _, ok := logs.find("INFO", "TLS handshake failed", "certificate"); !ok {
		t.Errorf("no Info line for a refused client certificate")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(ca.clientTLS(good)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("good client after the failures: %v", err)
	}
	if got := rec.all(); len(got) != 1 || got[0].Name != "CN=good" {
		t.Fatalf("principals %v, want one User:CN=good", got)
	}
	eventually(t, "failed connections gone", func() bool { return srv.NumConnections() <= 1 })
}

// TestTLSIdleConnectionClosed checks connections.max.idle.ms reaches a
// TLS connection that finished its handshake and went quiet, as it does a
// plaintext one: the read deadline is the socket's.
func TestTLSIdleConnectionClosed(t *testing.T) {
	ca := newTestCA(t)
	srv, addr := startServer(t, testRouter(t), func(s *Server) {
		s.TLS = ca.serverTLS(t, tls.NoClientCert)
		s.IdleTimeout = 1500 * time.Millisecond // the handshake must fit in it too
	})
	nc, err := tls.Dial("tcp", addr, ca.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawConn{t: t, nc: nc}
	c.apiVersions(3, 1)
	c.expectClosed()
	eventually(t, "the connection gone", func() bool { return srv.NumConnections() == 0 })
}

// TestTLSSplicedFetch checks a Fetch whose record bytes come from a file
// reaches a TLS client byte for byte: sendfile cannot encrypt, so the
// ranges are copied, in pieces.
func TestTLSSplicedFetch(t *testing.T) {
	content := make([]byte, 700<<10)
	for i := range content {
		content[i] = byte(i * 13)
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n1, n2 = 600 << 10, 100 << 10
	mem := []byte("in memory")
	ca := newTestCA(t)
	r := testRouter(t)
	r.Register(1, 4, 13, spliceFetchHandler(f, n1, n2, mem))
	_, addr := startServer(t, r, func(s *Server) { s.TLS = ca.serverTLS(t, tls.NoClientCert) })
	nc, err := tls.Dial("tcp", addr, ca.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawConn{t: t, nc: nc}
	for _, v := range []int16{11, 13} {
		fetch := kmsg.NewPtrFetchRequest()
		fetch.Version = v
		parts := c.request(fetch, int32(v)).(*kmsg.FetchResponse).Topics[0].Partitions
		want := [][]byte{content[:n1], mem, content[n1 : n1+n2], {}}
		for i, p := range parts {
			if !bytes.Equal(p.RecordBatches, want[i]) {
				t.Fatalf("v%d partition %d: %d bytes, want %d", v, i, len(p.RecordBatches), len(want[i]))
			}
		}
	}
}

// TestTLSShutdownClosesConnections checks Shutdown reaches connections in
// their handshake and idle TLS connections.
func TestTLSShutdownClosesConnections(t *testing.T) {
	ca := newTestCA(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Router: testRouter(t), Logger: quietLogger(t), TLS: ca.serverTLS(t, tls.NoClientCert)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	addr := ln.Addr().String()
	silent := dialRaw(t, addr)
	nc, err := tls.Dial("tcp", addr, ca.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	idle := &rawConn{t: t, nc: nc}
	idle.apiVersions(3, 1)
	eventually(t, "two connections", func() bool { return srv.NumConnections() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
	silent.expectClosed()
	idle.expectClosed()
	if n := srv.NumConnections(); n != 0 {
		t.Fatalf("%d connections after Shutdown", n)
	}
}
