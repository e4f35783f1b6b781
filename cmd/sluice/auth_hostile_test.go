package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest"
	"github.com/sluicedev/sluice/sluicetest/certs"
)

// TestHostileLogins is issue 19's negative acceptance on the binary: a
// broker with a SASL_SSL listener (SCRAM-SHA-512 and OAUTHBEARER) and an
// SSL listener that requires client certificates is attacked, many times
// over and several at once, with a wrong password, an unknown user, an
// expired token, a missing client certificate, a PLAINTEXT client on each
// TLS port, requests before authentication and an oversized
// unauthenticated frame. Each is refused as Kafka refuses it (SASL
// logins with SASL_AUTHENTICATION_FAILED, the rest by closing the
// connection with nothing served), while an authenticated producer keeps
// being served; afterwards the broker's resident memory and open file
// descriptors are back near where they started, and its log, at debug
// level, holds none of the passwords.
func TestHostileLogins(t *testing.T) {
	t.Parallel()
	cs := sluicetest.NewCerts(t)
	plainPort, saslPort, sslPort := freePort(t), freePort(t), freePort(t)
	plainAddr := fmt.Sprintf("127.0.0.1:%d", plainPort)
	saslAddr := fmt.Sprintf("127.0.0.1:%d", saslPort)
	sslAddr := fmt.Sprintf("127.0.0.1:%d", sslPort)
	args := []string{
		"--override", fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_SSL://%s,SSL://%s", plainAddr, saslAddr, sslAddr),
		"--override", "log.dirs=" + t.TempDir(),
		"--override", "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER",
		"--override", "listener.name.ssl.ssl.client.auth=required",
		// Debug, so that a secret logged at any level shows.
		"--log-level", "debug",
	}
	for _, l := range append(cs.ServerLines("listener.name.sasl_ssl."), cs.ServerLines("listener.name.ssl.")...) {
		args = append(args, "--override", l)
	}
	p := startProc(t, plainAddr, t.TempDir(), args...)
	// Only the hostile clients' errors are expected in its log.
	p.createTopic("hostile-logins", 1)

	adm := kadm.NewClient(p.client())
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*waitTimeout)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}})
	if err != nil {
		t.Fatalf("create alice: %v", err)
	}
	if err := res.Error(); err != nil {
		t.Fatalf("create alice: %v", err)
	}

	tlsConf := func() *tls.Config { return cs.ClientConfig(nil) }
	saslClient := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(saslAddr), kgo.DialTLSConfig(tlsConf()), kgo.SASL(m),
			kgo.RetryTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()

	// The bystander: alice producing over SASL_SSL, one record at a time.
	prod := saslClient(alice, kgo.DefaultProduceTopic("hostile-logins"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	defer prod.Close()
	waitFor(t, "alice's first record over SASL_SSL", func() error {
		return prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr()
	})
	var produced atomic.Int64
	var prodErr atomic.Pointer[error]
	bctx, stopBystander := context.WithCancel(ctx)
	var bwg sync.WaitGroup
	bwg.Add(1)
	go func() {
		defer bwg.Done()
		for bctx.Err() == nil {
			err := prod.ProduceSync(bctx, &kgo.Record{Value: []byte("x")}).FirstErr()
			switch {
			case err == nil:
				produced.Add(1)
			case bctx.Err() == nil:
				prodErr.CompareAndSwap(nil, &err)
			}
		}
	}()
	defer func() {
		stopBystander()
		bwg.Wait()
		if e := prodErr.Load(); e != nil {
			t.Errorf("alice's producer failed while the broker was attacked: %v", *e)
		}
		t.Logf("alice produced %d records during the attacks", produced.Load())
	}()

	// Settle, then take the baseline.
	time.Sleep(500 * time.Millisecond)
	rssBefore, fdsBefore := procStatus(t, p.pid(), "VmRSS"), openFDs(t, p.pid())

	pingFails := func(m sasl.Mechanism) error {
		cl := saslClient(m)
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.Ping(pctx)
	}
	unsecured := func(exp time.Time) sasl.Mechanism {
		enc := base64.RawURLEncoding.EncodeToString
		return oauth.Auth{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc(fmt.Appendf(nil, `{"sub":"alice","exp":%d}`, exp.Unix())) + "."}.AsMechanism()
	}
	apiVersions := framed(requestHeader(18, 0, false))
	metadataV1 := framed(append(requestHeader(3, 1, false), 0xff, 0xff, 0xff, 0xff)) // all topics
	attacks := []struct {
		name string
		try  func() error // nil: refused as it should be
	}{
		{"SCRAM wrong password", func() error {
			return wantSASLFailure(pingFails(scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism()), "")
		}},
		{"SCRAM unknown user", func() error {
			return wantSASLFailure(pingFails(scram.Auth{User: "mallory", Pass: "guess"}.AsSha512Mechanism()), "")
		}},
		{"OAUTHBEARER expired token", func() error {
			return wantSASLFailure(pingFails(unsecured(time.Now().Add(-time.Minute))), "invalid_token")
		}},
		{"SSL listener, no client certificate", func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(tlsConf()), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				return err
			}
			defer cl.Close()
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := cl.Ping(pctx); err == nil {
				return errors.New("served without a client certificate")
			}
			return nil
		}},
		{"PLAINTEXT client on the SSL port", func() error { return closedUnanswered(sendAndAwaitClose(sslAddr, apiVersions)) }},
		{"PLAINTEXT client on the SASL_SSL port", func() error { return closedUnanswered(sendAndAwaitClose(saslAddr, apiVersions)) }},
		{"Metadata before authentication", func() error {
			return closedUnanswered(sendOverTLSAndAwaitClose(saslAddr, tlsConf(), metadataV1))
		}},
		{"oversized frame before authentication", func() error {
			return closedUnanswered(sendOverTLSAndAwaitClose(saslAddr, tlsConf(), withPrefix(100<<20, []byte("not a hundred megabytes"))))
		}},
	}
	const rounds, parallel = 25, 4
	for _, a := range attacks {
		from := produced.Load()
		var failed atomic.Int64
		var firstErr atomic.Pointer[error]
		var wg sync.WaitGroup
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					if err := a.try(); err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, &err)
					}
				}
			}()
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%s: %d of %d attempts not refused as Kafka refuses them, first: %v", a.name, n, rounds*parallel, *firstErr.Load())
		}
		waitFor(t, "alice's producer after "+a.name, func() error {
			if produced.Load() <= from {
				return fmt.Errorf("still at %d acknowledged records", from)
			}
			return nil
		})
		t.Logf("%s: %d attempts refused; VmRSS %d KiB, %d open fds", a.name, rounds*parallel, procStatus(t, p.pid(), "VmRSS")>>10, openFDs(t, p.pid()))
	}

	// The attackers' connections are all closed: the broker's descriptors
	// come back to the baseline (alice's connections and the log files).
	waitFor(t, "the broker's open descriptors back to the baseline", func() error {
		if n := openFDs(t, p.pid()); n > fdsBefore+8 {
			return fmt.Errorf("%d open, %d before the attacks", n, fdsBefore)
		}
		return nil
	})
	// Secrets never reach the log, at any level: not the store password
	// of the keystore and truststore, not a user's password, right or
	// wrong.
	log := p.stdout.String() + p.stderr.String()
	for _, secret := range []string{certs.StorePassword, "alice-secret", "guess"} {
		if strings.Contains(log, secret) {
			t.Errorf("the broker's log (%d bytes at debug level) holds the secret %q", len(log), secret)
		}
	}
	rssAfter := procStatus(t, p.pid(), "VmRSS")
	t.Logf("after %d attempts: VmRSS %d -> %d KiB, open fds %d -> %d, %d lines of debug log without a secret", len(attacks)*rounds*parallel, rssBefore>>10, rssAfter>>10, fdsBefore, openFDs(t, p.pid()), strings.Count(log, "\n"))
	if rssAfter-rssBefore > 64<<20 {
		t.Errorf("broker RSS grew by %d MiB over the attacks", (rssAfter-rssBefore)>>20)
	}
}

// wantSASLFailure checks a client's error is a failed SASL login
// (SASL_AUTHENTICATION_FAILED) whose message contains want.
func wantSASLFailure(err error, want string) error {
	switch {
	case err == nil:
		return errors.New("logged in")
	case !errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("got %v, want SASL_AUTHENTICATION_FAILED", err)
	case !strings.Contains(err.Error(), want):
		return fmt.Errorf("got %v, want a message containing %q", err, want)
	}
	return nil
}

// closedUnanswered turns sendAndAwaitClose's report into an error.
func closedUnanswered(report string) error {
	if report != "" {
		return errors.New(report)
	}
	return nil
}

// sendOverTLSAndAwaitClose is sendAndAwaitClose over a TLS connection:
// it completes the handshake, writes b and waits for the broker to close
// the connection, returning "" when it closed without answering.
func sendOverTLSAndAwaitClose(addr string, conf *tls.Config, b []byte) string {
	d := &net.Dialer{Timeout: waitTimeout}
	c, err := tls.DialWithDialer(d, "tcp", addr, conf)
	if err != nil {
		return fmt.Sprintf("TLS dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		return "" // already closed
	}
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	buf := make([]byte, 4096)
	var n int
	for {
		m, err := c.Read(buf)
		n += m
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				return "the broker did not close the connection"
			case n > 0:
				return fmt.Sprintf("broker answered with %d bytes before closing", n)
			}
			return ""
		}
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}
