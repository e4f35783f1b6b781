package security

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicedev/sluice/protocol"
)

// FuzzSASLExchange feeds hostile client messages to every mechanism: an
// exchange never panics, and every failure is a login failure
// (*protocol.AuthFailedError), never anything that would skip Kafka's
// failure answer.
func FuzzSASLExchange(f *testing.F) {
	exp := time.Now().Add(time.Hour).Unix()
	f.Add(uint8(0), []byte("\x00alice\x00alice-secret"), []byte{})
	f.Add(uint8(1), []byte("n,,n=alice,r=abcdef"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add(uint8(2), []byte("n,a=alice,n=alice,r=x,tokenauth=true"), []byte("c=biws,r=x,p="))
	f.Add(uint8(3), []byte("n,,\x01auth=Bearer "+unsecuredJWT(map[string]any{"sub": "alice", "exp": exp})+"\x01\x01"), []byte{1})
	f.Add(uint8(3), []byte("n,,\x01auth=Bearer a.b.\x01x=y\x01\x01"), []byte{1})
	var store func(user, mechanism string) (ScramCredential, bool)
	srv, err := NewSASL(SASLConfig{
		Mechanisms: []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer},
		PlainUsers: map[string]string{"alice": "alice-secret"},
		Scram:      func(u, m string) (ScramCredential, bool) { return store(u, m) },
	})
	if err != nil {
		f.Fatal(err)
	}
	creds := map[string]ScramCredential{}
	store = func(u, m string) (ScramCredential, bool) { c, ok := creds[u+m]; return c, ok }
	creds["alice"+MechanismScramSHA256] = ScramCredential{Salt: []byte("salt"), StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}
	creds["alice"+MechanismScramSHA512] = ScramCredential{Salt: []byte("salt"), StoredKey: make([]byte, 64), ServerKey: make([]byte, 64), Iterations: 4096}
	mechs := srv.Mechanisms()
	f.Fuzz(func(t *testing.T, m uint8, first, second []byte) {
		x, ok := srv.Start(mechs[int(m)%len(mechs)], &protocol.ConnInfo{})
		if !ok {
			t.Fatal("not started")
		}
		for _, in := range [][]byte{first, second} {
			_, done, err := x.Step(context.Background(), in)
			if err != nil {
				var af *protocol.AuthFailedError
				if !errors.As(err, &af) {
					t.Fatalf("failure %v (%T) is not an AuthFailedError", err, err)
				}
				return
			}
			if done {
				return
			}
		}
	})
}
