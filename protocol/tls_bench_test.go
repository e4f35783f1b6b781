package protocol

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkSplicedFetch measures a Fetch answered from a segment file over
// loopback, plaintext (sendfile) and TLS (copied and encrypted): what
// sendfile saves, and what TLS costs a consumer. Each op is one Fetch of 1
// MiB of record bytes, read whole by a raw client.
func BenchmarkSplicedFetch(b *testing.B) {
	const n = 1 << 20
	content := make([]byte, n)
	for i := range content {
		content[i] = byte(i * 31)
	}
	path := filepath.Join(b.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ca := newTestCA(b)
	for _, withTLS := range []bool{false, true} {
		name := "plaintext"
		if withTLS {
			name = "TLS"
		}
		b.Run(name, func(b *testing.B) {
			r := testRouter(b)
			r.Register(1, 4, 13, spliceFetchHandler(f, n, 0, nil))
			_, addr := startServer(b, r, func(s *Server) {
				if withTLS {
					s.TLS = ca.serverTLS(b, tls.NoClientCert)
				}
			})
			c := dialRaw(b, addr)
			if withTLS {
				tc, err := tls.Dial("tcp", addr, ca.clientTLS())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { tc.Close() })
				c = &rawConn{t: b, nc: tc}
			}
			fetch := kmsg.NewPtrFetchRequest()
			fetch.Version = 13
			frame := withSize(requestFrame(fetch, 1, nil))
			b.SetBytes(n)
			b.ResetTimer()
			for range b.N {
				c.write(frame)
				if got := c.readFrame(); len(got) < n {
					b.Fatalf("%d-byte answer", len(got))
				}
			}
		})
	}
}
