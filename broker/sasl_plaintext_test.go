package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/sluicetest"
)

// A client configured for SASL against a listener without SASL: Kafka
// (KafkaApis.handleSaslHandshakeRequest / handleSaslAuthenticateRequest)
// answers both SaslHandshake and SaslAuthenticate with ILLEGAL_SASL_STATE,
// at every version, and lists both keys in ApiVersions, so the client can
// report a useful error instead of a dropped connection.
func TestSaslOnPlaintextListener(t *testing.T) {
	n := sluicetest.Start(t)
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = v
		req.Mechanism = "PLAIN"
		resp, err := rawRequest(t, n.Addr(), req)
		if err != nil {
			t.Fatalf("SaslHandshake v%d: connection closed: %v", v, err)
		}
		hs := resp.(*kmsg.SASLHandshakeResponse)
		if hs.ErrorCode != kerr.IllegalSaslState.Code || len(hs.SupportedMechanisms) != 0 {
			t.Fatalf("SaslHandshake v%d: %v, mechanisms %v; want ILLEGAL_SASL_STATE and none", v, kerr.ErrorForCode(hs.ErrorCode), hs.SupportedMechanisms)
		}
	}
	for _, v := range []int16{0, 1, 2} {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = v
		req.SASLAuthBytes = []byte("\x00user\x00secret")
		resp, err := rawRequest(t, n.Addr(), req)
		if err != nil {
			t.Fatalf("SaslAuthenticate v%d: connection closed: %v", v, err)
		}
		au := resp.(*kmsg.SASLAuthenticateResponse)
		if au.ErrorCode != kerr.IllegalSaslState.Code || au.ErrorMessage == nil || *au.ErrorMessage == "" || len(au.SASLAuthBytes) != 0 {
			t.Fatalf("SaslAuthenticate v%d: %v, message %v, %d auth bytes; want ILLEGAL_SASL_STATE with a message", v, kerr.ErrorForCode(au.ErrorCode), au.ErrorMessage, len(au.SASLAuthBytes))
		}
	}
	keys := listedKeys(t, n.Addr())
	for _, k := range []int16{17, 36} {
		if !slices.Contains(keys, k) {
			t.Errorf("ApiVersions does not list %s (key %d): %v", kmsg.NameForKey(k), k, keys)
		}
	}
	// The connection stays usable after the refusal, as in Kafka: a
	// client may go on without SASL on the same connection.
	c := dialRawConn(t, n.Addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
	if _, resp := c.do(hs); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake: %+v", resp)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, resp := c.do(md); len(resp.(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatalf("Metadata after SaslHandshake on the same connection: %+v", resp)
	}
}

// franz-go configured with SASL/PLAIN against a listener without SASL
// fails with Kafka's error, ILLEGAL_SASL_STATE, not a dropped connection.
func TestSaslFranzGoClientOnPlaintextListener(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.SASL(plain.Auth{User: "u", Pass: "p"}.AsMechanism()), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if !errors.Is(err, kerr.IllegalSaslState) {
		t.Fatalf("metadata over SASL/PLAIN: %v, want ILLEGAL_SASL_STATE", err)
	}
	if strings.Contains(err.Error(), "EOF") {
		t.Fatalf("error mentions a closed connection: %v", err)
	}
}

// Kafka's controller listener answers SASL as its broker listener does
// (ControllerApis): so does the controller channel, on the raft port.
func TestSaslOnControllerChannel(t *testing.T) {
	c := sluicetest.StartCluster(t, 2)
	c.WaitForBrokers(2)
	var raftAddr string
	for _, o := range c.Node(1).Overrides {
		if voters, ok := strings.CutPrefix(o, "controller.quorum.voters="); ok {
			for _, v := range strings.Split(voters, ",") {
				if addr, ok := strings.CutPrefix(v, "1@"); ok {
					raftAddr = addr
				}
			}
		}
	}
	if raftAddr == "" {
		t.Fatalf("no controller listener for node 1 in %v", c.Node(1).Overrides)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := controller.DialController(ctx, nil, "tcp", raftAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rc := &rawConn{t: t, conn: conn, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("not-a-broker"))}

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "sluice-test", "1.0"
	_, resp := rc.do(av)
	var keys []int16
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	if !slices.Contains(keys, 17) || !slices.Contains(keys, 36) {
		t.Errorf("controller channel lists %v: no SaslHandshake (17) or SaslAuthenticate (36)", keys)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if _, resp := rc.do(hs); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake on the controller channel: %+v", resp)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	if _, resp := rc.do(au); resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate on the controller channel: %+v", resp)
	}
}
