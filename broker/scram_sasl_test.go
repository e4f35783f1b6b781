package broker_test

// SCRAM users created with kadm log in over a SASL_PLAINTEXT listener
// (issue 19), end to end with franz-go clients: the credential is checked
// against the metadata image of the broker the client reached, failures
// answer Kafka's one message whatever the cause, and the credential
// survives a restart and ends with its deletion. OAUTHBEARER's default
// (unsecured) validator on the same listener answers as kgo's own
// TestOAuthAuth expects of Kafka.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/sluicetest"
)

var saslPlaintextListeners = []string{
	"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
	"sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER",
}

const scram512Refused = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"

// pingAs logs in on the node's SASL_PLAINTEXT listener with auth and
// pings: nil when the login worked.
func pingAs(t *testing.T, n *sluicetest.Node, auth kgo.Opt) error {
	t.Helper()
	cl := n.ClientOn("SASL_PLAINTEXT", auth, kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func wantRefused(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with %q", what, err, msg)
	}
}

func scram512(user, pass string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
}

func TestSCRAMOverSASLPlaintext(t *testing.T) {
	n := sluicetest.Start(t, saslPlaintextListeners...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	wantRefused(t, "before the user exists", pingAs(t, n, scram512("alice", "alice-secret")), scram512Refused)
	adm := n.Admin()
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}}); err != nil {
		t.Fatalf("create SCRAM user: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "scram"); err != nil {
		t.Fatal(err)
	}
	alice := scram512("alice", "alice-secret")
	produceConsume(t, n.ClientOn("SASL_PLAINTEXT", alice), "scram", 10, func(opts ...kgo.Opt) *kgo.Client {
		return n.ClientOn("SASL_PLAINTEXT", append([]kgo.Opt{alice}, opts...)...)
	})
	// A wrong password and an unknown user get the same answer.
	wantRefused(t, "wrong password", pingAs(t, n, scram512("alice", "wrong")), scram512Refused)
	wantRefused(t, "unknown user", pingAs(t, n, scram512("mallory", "alice-secret")), scram512Refused)

	// OAUTHBEARER with Kafka's default validator: an unsecured token
	// logs in until it expires.
	token := func(exp time.Time) kgo.Opt {
		enc := base64.RawURLEncoding.EncodeToString
		claims := fmt.Sprintf(`{"sub":"carol","exp":%d}`, exp.Unix())
		return kgo.SASL(oauth.Auth{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."}.AsMechanism())
	}
	if err := pingAs(t, n, token(time.Now().Add(time.Hour))); err != nil {
		t.Errorf("unsecured token: %v", err)
	}
	wantRefused(t, "expired token", pingAs(t, n, token(time.Now().Add(-time.Minute))), `{"status":"invalid_token"}`)

	n.Restart()
	if err := pingAs(t, n, alice); err != nil {
		t.Fatalf("login after restart: %v", err)
	}
	if _, err := n.Admin().AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatalf("delete SCRAM user: %v", err)
	}
	wantRefused(t, "after deletion", pingAs(t, n, alice), scram512Refused)
}

// TestSCRAMOverSASLPlaintextCluster: a user created through one broker
// logs in on every broker's SASL_PLAINTEXT listener once that broker has
// applied the credential.
func TestSCRAMOverSASLPlaintextCluster(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, saslPlaintextListeners...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Node(1).Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Password: "alice-secret"}}); err != nil {
		t.Fatalf("create SCRAM user: %v", err)
	}
	for id := 1; id <= 3; id++ {
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			return pingAs(t, c.Node(id), scram512("alice", "alice-secret"))
		})
		wantRefused(t, fmt.Sprintf("wrong password on broker %d", id), pingAs(t, c.Node(id), scram512("alice", "wrong")), scram512Refused)
	}
}

// TestUserScramCredentialsAuthorization: with an authorizer, altering
// credentials needs ALTER on the cluster and describing them DESCRIBE,
// each refusal answered as Kafka's getErrorResponse answers it.
func TestUserScramCredentialsAuthorization(t *testing.T) {
	n := sluicetest.Start(t, append(saslPlaintextListeners,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS")...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	super := n.Admin() // PLAINTEXT: User:ANONYMOUS
	if _, err := super.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Password: "bob-secret"}}); err != nil {
		t.Fatal(err)
	}
	bobCl := n.ClientOn("SASL_PLAINTEXT", scram512("bob", "bob-secret"))
	bob := kadm.NewClient(bobCl)

	// Every user named, sorted, once each, gets the refusal (kadm turns
	// it into the call's error).
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, name := range []string{"zed", "carol", "zed"} {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, 1
		req.Deletions = append(req.Deletions, d)
	}
	resp, err := req.RequestWith(ctx, bobCl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.Results {
		got = append(got, fmt.Sprintf("%s %d", r.User, r.ErrorCode))
	}
	if want := []string{"carol 31", "zed 31"}; !slices.Equal(got, want) {
		t.Errorf("alter without ALTER: %v, want %v", got, want)
	}
	if _, err := bob.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Password: "c"}}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("kadm alter without ALTER: %v", err)
	}
	if _, err := bob.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("describe without DESCRIBE: %v", err)
	}

	acl := kadm.NewACLs().Allow("User:bob").ResourcePatternType(kadm.ACLPatternLiteral).Clusters().Operations(kadm.OpAlter, kadm.OpDescribe)
	if rs, err := super.CreateACLs(ctx, acl); err != nil || rs[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, rs)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		res, err := bob.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Password: "c"}})
		if err != nil {
			return err
		}
		return res["carol"].Err
	})
	described, err := bob.DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 2 || described["carol"].Err != nil || described["bob"].Err != nil {
		t.Fatalf("describe with DESCRIBE: %v %+v", err, described)
	}
}
