package broker_test

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/security"
	"github.com/sluicedev/sluice/sluicetest"
)

// SCRAM credential administration (issue 19): AlterUserScramCredentials
// and DescribeUserScramCredentials as kadm (and kafka-configs.sh) use
// them, credentials kept in the metadata log.

// describeSCRAMs renders what a broker describes as sorted lines
// "alice: SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512=iterations=8192"
// or "carol: RESOURCE_NOT_FOUND <message>".
func describeSCRAMs(t *testing.T, adm *kadm.Client, users ...string) []string {
	t.Helper()
	got, err := adm.DescribeUserSCRAMs(context.Background(), users...)
	if err != nil {
		t.Fatalf("DescribeUserSCRAMs: %v", err)
	}
	return renderSCRAMs(got)
}

func renderSCRAMs(got kadm.DescribedUserSCRAMs) []string {
	var lines []string
	for _, d := range got.Sorted() {
		if d.Err != nil {
			var ke *kerr.Error
			errors.As(d.Err, &ke)
			lines = append(lines, fmt.Sprintf("%s: %s %s", d.User, ke.Message, d.ErrMessage))
			continue
		}
		var cs []string
		for _, c := range d.CredInfos {
			cs = append(cs, c.String())
		}
		lines = append(lines, d.User+": "+strings.Join(cs, ","))
	}
	return lines
}

func alterSCRAMs(t *testing.T, adm *kadm.Client, del []kadm.DeleteSCRAM, ups []kadm.UpsertSCRAM) map[string]string {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(context.Background(), del, ups)
	if err != nil {
		t.Fatalf("AlterUserSCRAMs: %v", err)
	}
	out := map[string]string{}
	for _, r := range res.Sorted() {
		if r.Err == nil {
			out[r.User] = "ok"
			continue
		}
		var ke *kerr.Error
		errors.As(r.Err, &ke)
		out[r.User] = ke.Message + " " + r.ErrMessage
	}
	return out
}

// scramLogin runs a franz-go SCRAM client against an exchange checking
// the credentials b would check on a SASL listener.
func scramLogin(t *testing.T, b *broker.Broker, mech sasl.Mechanism) error {
	t.Helper()
	srv, err := security.NewSASL(security.SASLConfig{Mechanisms: []string{mech.Name()}, Scram: b.ScramCredential})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, in, err := mech.Authenticate(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	x, _ := srv.Start(mech.Name(), &protocol.ConnInfo{})
	for {
		out, done, err := x.Step(ctx, in)
		if err != nil {
			return err
		}
		cdone, next, err := sess.Challenge(out)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		if done || cdone {
			if !done || !cdone {
				return fmt.Errorf("server done %v, client done %v", done, cdone)
			}
			return nil
		}
		in = next
	}
}

func TestUserScramCredentials(t *testing.T) {
	n := sluicetest.Start(t)
	adm := n.Admin()
	ok := map[string]string{"alice": "ok", "bob": "ok"}
	if got := alterSCRAMs(t, adm, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-256"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-512"},
	}); fmt.Sprint(got) != fmt.Sprint(ok) {
		t.Fatalf("create: %v", got)
	}
	if got := alterSCRAMs(t, adm, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 10000, Password: "alice-512"}}); got["alice"] != "ok" {
		t.Fatalf("second mechanism: %v", got)
	}
	want := []string{
		"alice: SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512=iterations=10000",
		"bob: SCRAM-SHA-512=iterations=8192",
	}
	if got := describeSCRAMs(t, adm); !slices.Equal(got, want) {
		t.Fatalf("all users: %v, want %v", got, want)
	}
	if got, want := describeSCRAMs(t, adm, "bob", "carol"), []string{
		"bob: SCRAM-SHA-512=iterations=8192",
		"carol: RESOURCE_NOT_FOUND Attempt to describe a user credential that does not exist: carol",
	}; !slices.Equal(got, want) {
		t.Fatalf("named users: %v, want %v", got, want)
	}

	// The stored credentials check a client's proof: the right password
	// logs in, a wrong one, another mechanism's password or an unknown
	// user fail alike.
	for _, tc := range []struct {
		mech sasl.Mechanism
		ok   bool
	}{
		{scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism(), true},
		{scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism(), true},
		{scram.Auth{User: "bob", Pass: "bob-512"}.AsSha512Mechanism(), true},
		{scram.Auth{User: "alice", Pass: "alice-512"}.AsSha256Mechanism(), false},
		{scram.Auth{User: "bob", Pass: "bob-512"}.AsSha256Mechanism(), false},
		{scram.Auth{User: "carol", Pass: "x"}.AsSha512Mechanism(), false},
	} {
		err := scramLogin(t, n.Broker, tc.mech)
		if (err == nil) != tc.ok {
			t.Errorf("%s login: %v, want ok=%v", tc.mech.Name(), err, tc.ok)
		}
	}

	// Kafka's per-user errors. The broker's own bounds, past kadm's
	// (which checks iterations only when it salts the password).
	salted := []byte("0123456789abcdef0123456789abcdef")
	if got := alterSCRAMs(t, adm, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, []kadm.UpsertSCRAM{
		{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 1000, Salt: []byte("s"), SaltedPassword: salted},
		{User: "erin", Mechanism: kadm.ScramSha256, Iterations: 20000, Salt: []byte("s"), SaltedPassword: salted},
		{User: "frank", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: []byte("s"), SaltedPassword: salted},
		{User: "frank", Mechanism: kadm.ScramSha512, Iterations: 4096, Salt: []byte("s"), SaltedPassword: salted},
	}); fmt.Sprint(got) != fmt.Sprint(map[string]string{
		"carol": "RESOURCE_NOT_FOUND Attempt to delete a user credential that does not exist",
		"dave":  "UNACCEPTABLE_CREDENTIAL Too few iterations",
		"erin":  "UNACCEPTABLE_CREDENTIAL Too many iterations",
		"frank": "DUPLICATE_RESOURCE A user credential cannot be altered twice in the same request",
	}) {
		t.Fatalf("refused alterations: %v", got)
	}
	// A mechanism kadm would not send.
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 3
	req.Deletions = append(req.Deletions, d)
	resp, err := req.RequestWith(context.Background(), n.Client())
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.UnsupportedSaslMechanism.Code || *resp.Results[0].ErrorMessage != "Unknown SCRAM mechanism" {
		t.Fatalf("unknown mechanism: %v %+v", err, resp)
	}

	if got := alterSCRAMs(t, adm, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "bob", Mechanism: kadm.ScramSha512}}, nil); fmt.Sprint(got) != fmt.Sprint(ok) {
		t.Fatalf("delete: %v", got)
	}
	if got, want := describeSCRAMs(t, adm), []string{"alice: SCRAM-SHA-512=iterations=10000"}; !slices.Equal(got, want) {
		t.Fatalf("after deletions: %v, want %v", got, want)
	}
	if err := scramLogin(t, n.Broker, scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism()); err == nil {
		t.Fatal("a deleted credential still logs in")
	}

	// Survives a restart (snapshot or log).
	n.Restart()
	if got, want := describeSCRAMs(t, n.Admin()), []string{"alice: SCRAM-SHA-512=iterations=10000"}; !slices.Equal(got, want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	if err := scramLogin(t, n.Broker, scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("login after restart: %v", err)
	}
}

// TestDescribeUserScramCredentialsRaw: the answer as Kafka's
// ScramImage.describe orders it (its HashMap's iteration: "bob" before
// "alice"), a user named twice answered once with DUPLICATE_RESOURCE, and
// no user named with every user.
func TestDescribeUserScramCredentialsRaw(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	ctx := context.Background()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Results) != 0 {
		t.Fatalf("all users: %v %+v, want an empty list", err, resp)
	}
	for _, name := range []string{"alice", "bob", "alice"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = name
		req.Users = append(req.Users, u)
	}
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.Results {
		got = append(got, fmt.Sprintf("%s %d %s %d", r.User, r.ErrorCode, *r.ErrorMessage, len(r.CredentialInfos)))
	}
	want := []string{
		fmt.Sprintf("bob %d Attempt to describe a user credential that does not exist: bob 0", kerr.ResourceNotFound.Code),
		fmt.Sprintf("alice %d Cannot describe SCRAM credentials for the same user twice in a single request: alice 0", kerr.DuplicateResource.Code),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("named users:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestClusterUserScramCredentials: a credential created through a broker
// that is not the controller (forwarded) is described by every broker and
// checks logins on every broker, and survives every node's restart.
func TestClusterUserScramCredentials(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	ctrl := c.Controller()
	other := 1
	if ctrl == 1 {
		other = 2
	}
	// kgo sends admin requests to the controller; this one goes to the
	// other broker itself, which forwards it.
	ctx := context.Background()
	cl := c.Node(other).Client()
	salt := []byte("0123456789abcdefghijklmn")
	salted, err := pbkdf2.Key(sha512.New, "alice-secret", salt, 8192, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "alice", 2, 8192, salt, salted
	req.Upsertions = append(req.Upsertions, u)
	resp, err := req.RequestWith(ctx, cl.Broker(other))
	if err != nil || len(resp.Results) != 1 || resp.Results[0].User != "alice" || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create through broker %d: %v %+v", other, err, resp)
	}
	want := []string{"alice: SCRAM-SHA-512=iterations=8192"}
	// The broker that was asked answers once its own image has it: a
	// login right after the answer works there.
	if err := scramLogin(t, c.Node(other).Broker, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("login on broker %d right after: %v", other, err)
	}
	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	dresp, err := dreq.RequestWith(ctx, cl.Broker(other))
	if err != nil || len(dresp.Results) != 1 || len(dresp.Results[0].CredentialInfos) != 1 || dresp.Results[0].CredentialInfos[0].Iterations != 8192 {
		t.Fatalf("describe on broker %d right after: %v %+v", other, err, dresp)
	}
	waitAll := func(what string) {
		t.Helper()
		for id := 1; id <= 3; id++ {
			adm := c.Node(id).Admin()
			sluicetest.WaitFor(t, 10*time.Second, func() error {
				got, err := adm.DescribeUserSCRAMs(context.Background())
				if err != nil {
					return err
				}
				if r := renderSCRAMs(got); !slices.Equal(r, want) {
					return fmt.Errorf("%s: broker %d describes %v", what, id, r)
				}
				return nil
			})
			if err := scramLogin(t, c.Node(id).Broker, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
				t.Fatalf("%s: login on broker %d: %v", what, id, err)
			}
		}
	}
	waitAll("after the creation")

	// A refusal from the controller comes back through the forwarding
	// broker unchanged.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 1
	req.Deletions = append(req.Deletions, d)
	resp, err = req.RequestWith(ctx, cl.Broker(other))
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code || *resp.Results[0].ErrorMessage != "Attempt to delete a user credential that does not exist" {
		t.Fatalf("forwarded refusal: %v %+v", err, resp)
	}

	for id := 1; id <= 3; id++ {
		c.Restart(id)
		c.WaitForBrokers(3)
	}
	waitAll("after every node restarted")

	if got := alterSCRAMs(t, c.Node(other).Admin(), []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil); got["alice"] != "ok" {
		t.Fatalf("delete: %v", got)
	}
	for id := 1; id <= 3; id++ {
		adm := c.Node(id).Admin()
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			got, err := adm.DescribeUserSCRAMs(context.Background())
			if err != nil {
				return err
			}
			if len(got) != 0 {
				return fmt.Errorf("broker %d still describes %v", id, renderSCRAMs(got))
			}
			return nil
		})
	}
}
