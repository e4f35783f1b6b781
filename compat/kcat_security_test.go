package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcat-sasl-ssl (issue 19, acceptance 2): kcat (librdkafka) over the
// SASL_SSL listener of security_test.go as alice with SCRAM-SHA-512,
// trusting the test CA from a PEM file: `kcat -P` keyed messages into a
// 3-partition topic alice may WRITE and READ (ACLs set by the admin),
// `kcat -C -e` reads every one back unaltered; then `kcat -L` with a wrong
// password fails with librdkafka's authentication error and reads no
// metadata.
//
// Debian's kcat links librdkafka 2.0.2, whose SCRAM client-final message
// repeats the client nonce before the server's combined nonce
// (confluentinc/librdkafka#4895, fixed in 2.6.1). Kafka 4's
// ScramSaslServer compares the nonce with equals (3.8.1 to 3.9 accepted
// it with endsWith), so Kafka 4.1 and 4.4 refuse that login, and so does
// sluice. The row runs Debian's kcat binary on librdkafka 2.15.1, the
// library compat/librdkafka/build.sh builds (scripts/test-all.sh's setup),
// through LD_LIBRARY_PATH; and checks that librdkafka 2.0.2's login is
// refused with the invalid-credentials error, as Kafka 4 refuses it.

const (
	kcatSecTopic    = "sec-kcat"
	kcatSecMessages = 500
)

func kcatSecurityRow() row {
	st := &secureStart{}
	return row{name: "kcat-sasl-ssl", tools: []string{"kcat"}, timeout: securityTimeout(2 * time.Minute), start: st.start, run: st.run(withKafkaReference(runKcatSecurity))}
}

// allowUser creates the ACLs of b for user, as the admin.
func allowUser(ctx context.Context, s *secureEnv, user string, b *kadm.ACLBuilder) error {
	cl, err := s.adminClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("creating ACLs for %s: %w", user, err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("creating ACL %s %s for %s: %w", r.Operation, r.Name, user, r.Err)
		}
	}
	return nil
}

// kcatSASL is kcat's -X options for user over SASL_SSL with SCRAM-SHA-512.
func kcatSASL(s *secureEnv, user, password string) []string {
	return []string{
		"-X", "security.protocol=SASL_SSL",
		"-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=" + user,
		"-X", "sasl.password=" + password,
		"-X", "ssl.ca.location=" + s.certs.TruststorePEM,
	}
}

// librdkafkaLibDir is where compat/librdkafka/build.sh leaves the built
// librdkafka.so.1 (its cache, or $SLUICE_LIBRDKAFKA_DIR).
func librdkafkaLibDir() string {
	dir := os.Getenv("SLUICE_LIBRDKAFKA_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "sluice", "librdkafka-2.15.1")
	}
	return filepath.Join(dir, "src", "src")
}

// kcatLibEnv is the environment the row's kcat runs in: LD_LIBRARY_PATH
// on librdkafka 2.15.1, or nil for the system's librdkafka. Rows run one
// at a time.
var kcatLibEnv []string

func runKcatSecurity(ctx context.Context, env *rowEnv, s *secureEnv) error {
	lib := librdkafkaLibDir()
	if _, err := os.Stat(filepath.Join(lib, "librdkafka.so.1")); err != nil {
		return fmt.Errorf("librdkafka 2.15.1 is not built in %s (a missing tool fails the row): run compat/librdkafka/build.sh", lib)
	}
	kcatLibEnv = append(os.Environ(), "LD_LIBRARY_PATH="+lib)
	defer func() { kcatLibEnv = nil }()
	if err := createSecureUser(ctx, s, secUser, secUserPassword); err != nil {
		return err
	}
	if err := createSecureTopic(ctx, s, kcatSecTopic, 3); err != nil {
		return err
	}
	if err := allowUser(ctx, s, secUser, kadm.NewACLs().Topics(kcatSecTopic).
		Allow("User:"+secUser).Operations(kadm.OpWrite, kadm.OpRead)); err != nil {
		return err
	}

	var input bytes.Buffer
	want := map[string]string{}
	for i := range kcatSecMessages {
		k, v := fmt.Sprintf("k%03d", i%37), fmt.Sprintf("secret-value-%05d", i)
		want[v] = k
		input.WriteString(k + ":" + v + "\n")
	}
	args := append([]string{"-P", "-b", s.addr, "-t", kcatSecTopic, "-K", ":"}, kcatSASL(s, secUser, secUserPassword)...)
	out, err := runKcat(ctx, env, "kcat-produce.log", &input, args...)
	if err != nil {
		return fmt.Errorf("kcat -P over SASL_SSL as %s: %w", secUser, err)
	}
	if bad := kcatErrorLine(out); bad != "" {
		return fmt.Errorf("kcat -P over SASL_SSL as %s: %s", secUser, bad)
	}

	args = append([]string{"-C", "-b", s.addr, "-t", kcatSecTopic, "-o", "beginning", "-e", "-q", "-f", `%p %o %k %s\n`},
		kcatSASL(s, secUser, secUserPassword)...)
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Env = kcatLibEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	_ = os.WriteFile(filepath.Join(env.dir, "kcat-consume.log"), append(out, stderr.Bytes()...), 0o644)
	if err != nil {
		return fmt.Errorf("kcat -C over SASL_SSL as %s: %v: %s", secUser, err, firstLine(stderr.String()))
	}
	if bad := kcatErrorLine(stderr.Bytes()); bad != "" {
		return fmt.Errorf("kcat -C over SASL_SSL as %s: %s", secUser, bad)
	}
	got := 0
	keyPart := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			return fmt.Errorf("kcat -C: malformed line %q", line)
		}
		k, ok := want[f[3]]
		if !ok || k != f[2] {
			return fmt.Errorf("kcat -C: unexpected or repeated record %q", line)
		}
		if p, ok := keyPart[k]; ok && p != f[0] {
			return fmt.Errorf("kcat -C: key %s in partitions %s and %s", k, p, f[0])
		}
		keyPart[k] = f[0]
		delete(want, f[3])
		got++
	}
	if len(want) != 0 {
		return fmt.Errorf("kcat -C read %d of %d records back", got, kcatSecMessages)
	}
	env.t.Logf("kcat over SASL_SSL/SCRAM-SHA-512: %d records produced and read back", got)

	// A wrong password: an authentication error, no metadata.
	args = append([]string{"-L", "-b", s.addr, "-t", kcatSecTopic, "-m", "4"}, kcatSASL(s, secUser, "not-"+secUserPassword)...)
	out, err = runKcat(ctx, env, "kcat-wrong-password.log", nil, args...)
	if err == nil {
		return fmt.Errorf("kcat -L with a wrong password exited 0:\n%s", out)
	}
	const authErr = "SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	if !strings.Contains(string(out), authErr) {
		return fmt.Errorf("kcat -L with a wrong password: want %q, got: %s", authErr, lastLines(string(out), 5))
	}
	if strings.Contains(string(out), "topic \""+kcatSecTopic+"\"") {
		return fmt.Errorf("kcat -L with a wrong password printed the topic's metadata:\n%s", out)
	}

	// Debian's librdkafka 2.0.2 and its repeated nonce: refused, as
	// Kafka 4 refuses it, even with the right password.
	kcatLibEnv = nil
	args = append([]string{"-L", "-b", s.addr, "-t", kcatSecTopic, "-m", "4"}, kcatSASL(s, secUser, secUserPassword)...)
	out, err = runKcat(ctx, env, "kcat-librdkafka-2.0.2.log", nil, args...)
	if err == nil || !strings.Contains(string(out), authErr) {
		return fmt.Errorf("kcat -L on the system's librdkafka (2.0.2 on Debian 12), whose SCRAM nonce Kafka 4 refuses: want %q, got %v: %s", authErr, err, lastLines(string(out), 5))
	}
	return nil
}

// runKcat runs kcat with args and stdin (may be nil), keeps its combined
// output in the row's directory under logName and returns it.
func runKcat(ctx context.Context, env *rowEnv, logName string, stdin *bytes.Buffer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Env = kcatLibEnv
	if stdin != nil {
		cmd.Stdin = stdin
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(env.dir, logName), out, 0o644)
	env.t.Logf("kcat %s: %.1fs, exit %v (%s)", args[0], time.Since(start).Seconds(), err, logName)
	if err != nil {
		return out, fmt.Errorf("%v: %s", err, firstLine(string(out)))
	}
	return out, nil
}
