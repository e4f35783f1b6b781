package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// py-sasl-ssl (issue 19, acceptance 2): confluent-kafka for Python over the
// SASL_SSL listener of security_test.go as alice with SCRAM-SHA-512
// (compat/python/sasl_check.py): an idempotent Producer writes keyed
// records to a topic alice may WRITE and READ, a Consumer in a group she
// may READ reads every one back and commits, and a wrong password brings
// librdkafka's _AUTHENTICATION error with Kafka's invalid-credentials
// message and no metadata. The committed offsets are checked as the admin.
//
// It runs the newest confluent-kafka wheel (the py-confluent-wheel row's
// venv, librdkafka 2.16.0): Debian's python3-confluent-kafka links
// librdkafka 2.0.2, whose SCRAM nonce Kafka 4 refuses (see
// kcat_security_test.go).

const (
	pySecTopic   = "sec-python"
	pySecGroup   = "sec-python-group"
	pySecRecords = 1000
)

func pythonSecurityRow() row {
	st := &secureStart{}
	return row{name: "py-sasl-ssl", tools: []string{wheelPython()}, timeout: securityTimeout(2 * time.Minute), start: st.start, run: st.run(withKafkaReference(runPythonSecurity))}
}

// pySecResult is sasl_check.py's RESULT line.
type pySecResult struct {
	Version    string             `json:"version"`
	Librdkafka string             `json:"librdkafka"`
	Produced   int                `json:"produced"`
	Consumed   int                `json:"consumed"`
	AuthError  string             `json:"auth_error"`
	Seconds    map[string]float64 `json:"seconds"`
}

func runPythonSecurity(ctx context.Context, env *rowEnv, s *secureEnv) error {
	python := wheelPython()
	if out, err := exec.CommandContext(ctx, python, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		return fmt.Errorf("%s cannot import confluent_kafka (scripts/test-all.sh makes the venv): %v: %s", python, err, lastLine(string(out)))
	}
	if err := createSecureUser(ctx, s, secUser, secUserPassword); err != nil {
		return err
	}
	if err := createSecureTopic(ctx, s, pySecTopic, 3); err != nil {
		return err
	}
	if err := allowUser(ctx, s, secUser, kadm.NewACLs().Topics(pySecTopic).
		Allow("User:"+secUser).Operations(kadm.OpWrite, kadm.OpRead)); err != nil {
		return err
	}
	if err := allowUser(ctx, s, secUser, kadm.NewACLs().Groups(pySecGroup).
		Allow("User:"+secUser).Operations(kadm.OpRead)); err != nil {
		return err
	}

	cmd := exec.CommandContext(ctx, python, filepath.Join(env.root, "compat", "python", "sasl_check.py"),
		"--bootstrap", s.addr, "--ca", s.certs.TruststorePEM, "--user", secUser, "--password", secUserPassword,
		"--topic", pySecTopic, "--group", pySecGroup, "--records", fmt.Sprint(pySecRecords))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	logPath := filepath.Join(env.dir, "python.log")
	_ = os.WriteFile(logPath, append(append(stdout.Bytes(), "--- stderr\n"...), stderr.Bytes()...), 0o644)
	env.t.Logf("sasl_check.py: %.1fs (%s); last line: %s", time.Since(start).Seconds(), logPath, lastLine(stdout.String()))
	line, err := pythonResultLine(stdout.String(), stderr.String(), runErr, "confluent-kafka", "sasl_check.py")
	if err != nil {
		return err
	}
	var res pySecResult
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return fmt.Errorf("sasl_check.py's RESULT line: %v: %s", err, line)
	}
	if res.Produced != pySecRecords || res.Consumed != pySecRecords || !strings.Contains(res.AuthError, "invalid credentials") {
		return fmt.Errorf("sasl_check.py: %+v, want %d records produced and consumed and an invalid-credentials error", res, pySecRecords)
	}
	env.t.Logf("confluent-kafka %s (librdkafka %s): %+v", res.Version, res.Librdkafka, res)

	// The group's commit, as the admin sees it: every partition at its end.
	cl, err := s.adminClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, pySecTopic)
	if err != nil {
		return err
	}
	committed, err := adm.FetchOffsets(ctx, pySecGroup)
	if err != nil {
		return fmt.Errorf("fetching %s's offsets as the admin: %w", pySecGroup, err)
	}
	total := int64(0)
	var bad []string
	ends.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		c, ok := committed.Lookup(o.Topic, o.Partition)
		if !ok || c.Err != nil || c.At != o.Offset {
			bad = append(bad, fmt.Sprintf("partition %d: committed %+v, end %d", o.Partition, c, o.Offset))
		}
	})
	if len(bad) > 0 || total != pySecRecords {
		return fmt.Errorf("group %s after sasl_check.py: %s (end offsets sum to %d, want %d)", pySecGroup, strings.Join(bad, "; "), total, pySecRecords)
	}
	return nil
}
