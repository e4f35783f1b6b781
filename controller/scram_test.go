package controller

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha512"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func up(user string, mech int8, iters int32) ScramUpsertion {
	return ScramUpsertion{User: user, Mechanism: mech, Iterations: iters, Salt: []byte("salt-" + user), SaltedPassword: []byte("salted-" + user)}
}

// TestFSMScram: credentials are applied copy-on-write, a user whose last
// credential is removed leaves the image, and credentials survive a
// snapshot and restore.
func TestFSMScram(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(alterScramCmd{Records: []scramRecord{
		{User: "alice", Mechanism: ScramSHA256, Salt: []byte("s1"), StoredKey: []byte("k1"), ServerKey: []byte("v1"), Iterations: 4096},
		{User: "alice", Mechanism: ScramSHA512, Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192},
		{User: "bob", Mechanism: ScramSHA512, Salt: []byte("s3"), StoredKey: []byte("k3"), ServerKey: []byte("v3"), Iterations: 4096},
	}})
	before := tf.image()
	tf.mustApply(alterScramCmd{Records: []scramRecord{{User: "alice", Mechanism: ScramSHA256, Remove: true}}})
	if _, ok := tf.image().Scram.Lookup("alice", ScramSHA256); ok {
		t.Fatal("removed credential still there")
	}
	if c, ok := tf.image().Scram.Lookup("alice", ScramSHA512); !ok || c.Iterations != 8192 || string(c.StoredKey) != "k2" {
		t.Fatalf("alice SHA-512 = %+v %v", c, ok)
	}
	if _, ok := before.Scram.Lookup("alice", ScramSHA256); !ok {
		t.Fatal("a later command changed an earlier image")
	}
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	if tf.image().Scram != tf.seen[len(tf.seen)-2].Scram {
		t.Fatal("an unrelated command rebuilt the credentials")
	}
	if got := tf.image().Scram.Infos("alice"); !reflect.DeepEqual(got, []ScramCredentialInfo{{ScramSHA512, 8192}}) {
		t.Fatalf("infos = %+v", got)
	}

	want := tf.image()
	snap, err := tf.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !bytes.Contains(sink.Bytes(), []byte(`"scram":[{"user":"alice","mechanism":2,`)) {
		t.Fatalf("snapshot lacks the credentials: %s", sink.Bytes())
	}
	f := newFSM(nil)
	if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := f.current(); !sameImage(got, want) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, want)
	}

	tf.mustApply(alterScramCmd{Records: []scramRecord{{User: "alice", Mechanism: ScramSHA512, Remove: true}, {User: "bob", Mechanism: ScramSHA512, Remove: true}}})
	if tf.image().Scram != nil {
		t.Fatalf("credentials = %v, want nil", tf.image().Scram.Users())
	}
}

func TestAlterUserScramCredentials(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	res := c.AlterUserScramCredentials(ctx, nil, []ScramUpsertion{up("alice", ScramSHA512, 8192), up("bob", ScramSHA256, 4096)})
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.User, r.Err)
		}
	}
	cred, ok := c.Image().Scram.Lookup("alice", ScramSHA512)
	if !ok || cred.Iterations != 8192 || string(cred.Salt) != "salt-alice" {
		t.Fatalf("alice = %+v %v", cred, ok)
	}
	// StoredKey and ServerKey as RFC 5802 derives them; the salted
	// password is not kept.
	mac := hmac.New(sha512.New, []byte("salted-alice"))
	mac.Write([]byte("Server Key"))
	if !bytes.Equal(cred.ServerKey, mac.Sum(nil)) {
		t.Fatal("ServerKey is not HMAC(SaltedPassword, \"Server Key\")")
	}
	mac = hmac.New(sha512.New, []byte("salted-alice"))
	mac.Write([]byte("Client Key"))
	stored := sha512.Sum512(mac.Sum(nil))
	if !bytes.Equal(cred.StoredKey, stored[:]) {
		t.Fatal("StoredKey is not H(HMAC(SaltedPassword, \"Client Key\"))")
	}

	for _, tc := range []struct {
		name string
		dels []ScramDeletion
		ups  []ScramUpsertion
		want map[string]error // nil error for success
		msgs map[string]string
	}{
		{name: "too few", ups: []ScramUpsertion{up("carol", ScramSHA256, 4095)}, want: map[string]error{"carol": kerr.UnacceptableCredential}, msgs: map[string]string{"carol": "Too few iterations"}},
		{name: "too many", ups: []ScramUpsertion{up("carol", ScramSHA256, 16385)}, want: map[string]error{"carol": kerr.UnacceptableCredential}, msgs: map[string]string{"carol": "Too many iterations"}},
		{name: "empty user", ups: []ScramUpsertion{up("", ScramSHA256, 4096)}, want: map[string]error{"": kerr.UnacceptableCredential}, msgs: map[string]string{"": "Username must not be empty"}},
		{name: "unknown mechanism", ups: []ScramUpsertion{up("carol", 3, 4096)}, want: map[string]error{"carol": kerr.UnsupportedSaslMechanism}, msgs: map[string]string{"carol": "Unknown SCRAM mechanism"}},
		{name: "delete missing", dels: []ScramDeletion{{"alice", ScramSHA256}}, want: map[string]error{"alice": kerr.ResourceNotFound}, msgs: map[string]string{"alice": "Attempt to delete a user credential that does not exist"}},
		{name: "delete unknown mechanism", dels: []ScramDeletion{{"alice", 0}}, want: map[string]error{"alice": kerr.UnsupportedSaslMechanism}},
		{name: "twice", ups: []ScramUpsertion{up("dave", ScramSHA256, 4096), up("dave", ScramSHA512, 4096), up("erin", ScramSHA256, 4096)},
			want: map[string]error{"dave": kerr.DuplicateResource, "erin": nil}, msgs: map[string]string{"dave": "A user credential cannot be altered twice in the same request"}},
		{name: "delete and upsert", dels: []ScramDeletion{{"bob", ScramSHA256}}, ups: []ScramUpsertion{up("bob", ScramSHA512, 4096)}, want: map[string]error{"bob": kerr.DuplicateResource}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Image().Scram
			res := c.AlterUserScramCredentials(ctx, tc.dels, tc.ups)
			if len(res) != len(tc.want) {
				t.Fatalf("results = %+v", res)
			}
			for _, r := range res {
				want, ok := tc.want[r.User]
				if !ok {
					t.Fatalf("result for %q", r.User)
				}
				if want == nil {
					if r.Err != nil {
						t.Fatalf("%s: %v", r.User, r.Err)
					}
					continue
				}
				wantKafkaErr(t, r.Err, want.(*kerr.Error))
				if msg, ok := tc.msgs[r.User]; ok && r.Err.Error() != want.Error()+": "+msg {
					t.Fatalf("%s: %q, want message %q", r.User, r.Err, msg)
				}
			}
			for user, want := range tc.want {
				if want != nil && !slices.Equal(c.Image().Scram.Infos(user), before.Infos(user)) {
					t.Fatalf("refused change to %s applied", user)
				}
			}
		})
	}
	if _, ok := c.Image().Scram.Lookup("dave", ScramSHA256); ok {
		t.Fatal("a duplicated user's first upsertion was applied")
	}
	if _, ok := c.Image().Scram.Lookup("erin", ScramSHA256); !ok {
		t.Fatal("the valid user beside a duplicate was not applied")
	}
	res = c.AlterUserScramCredentials(ctx, []ScramDeletion{{"alice", ScramSHA512}}, []ScramUpsertion{up("bob", ScramSHA512, 10000)})
	if len(res) != 2 || res[0].User != "alice" || res[0].Err != nil || res[1].User != "bob" || res[1].Err != nil {
		t.Fatalf("results = %+v (deletions first)", res)
	}
	if got := c.Image().Scram.Infos("bob"); !reflect.DeepEqual(got, []ScramCredentialInfo{{ScramSHA256, 4096}, {ScramSHA512, 10000}}) {
		t.Fatalf("bob = %+v", got)
	}
	if got := c.Image().Scram.Users(); !slices.Equal(got, []string{"bob", "erin"}) {
		t.Fatalf("users = %v", got)
	}
}

func TestScramReopenFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	alter := func(dels []ScramDeletion, ups ...ScramUpsertion) {
		t.Helper()
		for _, r := range c.AlterUserScramCredentials(ctx, dels, ups) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	alter(nil, up("before", ScramSHA256, 4096), up("gone", ScramSHA256, 4096))
	if err := c.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	alter([]ScramDeletion{{"gone", ScramSHA256}}, up("after", ScramSHA512, 5000))
	want := c.Image().Scram
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, _ := openTest(t, cfg)
	if got := c2.Image().Scram; !reflect.DeepEqual(got, want) || !slices.Equal(got.Users(), []string{"after", "before"}) {
		t.Fatalf("after reopen: %v, want %v", got.Users(), want.Users())
	}
}

func TestJavaHashMapOrder(t *testing.T) {
	// By bucket of the spread String.hashCode in a 16-slot table ("q"
	// = 113 and "a" = 97 share bucket 1, "b" = 98 is bucket 2), then by
	// insertion.
	if got := JavaHashMapOrder([]string{"q", "b", "a"}); !slices.Equal(got, []string{"q", "a", "b"}) {
		t.Fatalf("order = %v", got)
	}
}
