package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The py-confluent row runs python/confluent_check.py: confluent-kafka for
// Python (librdkafka underneath) creating, describing, producing to,
// consuming from, listing offsets of and deleting a topic. The script checks
// every answer and prints "FAIL: ..." for the first wrong one; on success
// its last line is "RESULT {json}", which this row checks in turn, so that a
// script that exits 0 having checked nothing does not pass.

const (
	pythonTopic      = "compat-python"
	pythonPartitions = 4
	pythonRecords    = 2000
)

// pythonInterpreter is the python3 that has Debian's python3-confluent-kafka:
// the system one, not whatever python3 comes first on PATH (a pyenv or venv
// python does not see Debian's dist-packages). SLUICE_COMPAT_PYTHON
// overrides it.
func pythonInterpreter() string {
	if p := os.Getenv("SLUICE_COMPAT_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

func pythonConfluentRow() row {
	return row{
		name:    "py-confluent",
		tools:   []string{pythonInterpreter()},
		timeout: 2 * time.Minute,
		run:     runPythonConfluent,
	}
}

// pythonResult is the RESULT line of confluent_check.py.
type pythonResult struct {
	Version       string             `json:"version"`
	Librdkafka    string             `json:"librdkafka"`
	Records       int                `json:"records"`
	PerPartition  map[string]int     `json:"per_partition"`
	BrokerConfigs int                `json:"broker_configs"`
	Seconds       map[string]float64 `json:"seconds"`
}

func runPythonConfluent(ctx context.Context, env *rowEnv) error {
	if err := requireConfluentKafka(ctx); err != nil {
		return err
	}
	stdout, stderr, runErr := runPythonScript(ctx, env, "python.log", "confluent_check.py", "confluent_check.py",
		"--bootstrap", env.broker.addr,
		"--broker-id", strconv.Itoa(kcatBrokerID),
		"--topic", pythonTopic,
		"--partitions", strconv.Itoa(pythonPartitions),
		"--records", strconv.Itoa(pythonRecords))
	return checkPythonOutput(stdout, stderr, runErr)
}

// requireConfluentKafka returns an error naming the package to install
// when pythonInterpreter cannot import confluent_kafka: a missing module is
// a setup failure, said plainly rather than as a traceback.
func requireConfluentKafka(ctx context.Context) error {
	python := pythonInterpreter()
	probe := exec.CommandContext(ctx, python, "-c", "import confluent_kafka")
	if out, err := probe.CombinedOutput(); err != nil {
		return fmt.Errorf("%s cannot import confluent_kafka (apt-get install python3-confluent-kafka): %v: %s",
			python, err, lastLine(string(out)))
	}
	return nil
}

// runPythonScript runs compat/python/script with args under
// pythonInterpreter, writes its stdout and stderr to logName in the row's
// directory, logs how it went under the name what, and returns its output
// and the run's error.
func runPythonScript(ctx context.Context, env *rowEnv, logName, what, script string, args ...string) (stdout, stderr string, runErr error) {
	env.t.Helper()
	path := filepath.Join(env.root, "compat", "python", script)
	cmd := exec.CommandContext(ctx, pythonInterpreter(), append([]string{path}, args...)...)
	// The scripts import checks.py from their directory; leave no
	// __pycache__ there.
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	runErr = cmd.Run()
	logPath := filepath.Join(env.dir, logName)
	_ = os.WriteFile(logPath, append(append(out.Bytes(), "--- stderr\n"...), errOut.Bytes()...), 0o644)
	env.t.Logf("%s: %.1fs (%s); last line: %s", what, time.Since(start).Seconds(), logPath, lastLine(out.String()))
	return out.String(), errOut.String(), runErr
}

// pythonResultLine returns the JSON of a check script's RESULT line, or
// its first FAIL line (reported as failWho's), its failure to run (as
// what's) or the lack of a RESULT line as an error.
func pythonResultLine(stdout, stderr string, runErr error, failWho, what string) (string, error) {
	var result string
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "FAIL: "); ok {
			return "", fmt.Errorf("%s: %s\n%s", failWho, rest, lastLines(stderr, 10))
		}
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			result = rest
		}
	}
	if runErr != nil {
		return "", fmt.Errorf("%s: %v: %s\n%s", what, runErr, lastLine(stderr), lastLines(stderr, 20))
	}
	if result == "" {
		return "", errors.New(what + " exited 0 without a RESULT line")
	}
	return result, nil
}

// checkPythonOutput turns the script's output into the row's verdict: its
// first FAIL line, else the last line of a traceback, else the RESULT line
// checked against what was asked for.
func checkPythonOutput(stdout, stderr string, runErr error) error {
	result, err := pythonResultLine(stdout, stderr, runErr, "confluent-kafka", "confluent_check.py")
	if err != nil {
		return err
	}
	var res pythonResult
	if err := json.Unmarshal([]byte(result), &res); err != nil {
		return fmt.Errorf("confluent_check.py RESULT line: %v: %q", err, result)
	}
	if res.Records != pythonRecords {
		return fmt.Errorf("confluent_check.py checked %d records, want %d", res.Records, pythonRecords)
	}
	total := 0
	for _, n := range res.PerPartition {
		total += n
	}
	if len(res.PerPartition) != pythonPartitions || total != pythonRecords {
		return fmt.Errorf("confluent_check.py consumed %v (%d records), want %d records over %d partitions",
			res.PerPartition, total, pythonRecords, pythonPartitions)
	}
	if res.BrokerConfigs == 0 {
		return errors.New("confluent_check.py: describe_configs for the broker returned no entries")
	}
	return nil
}

// lastLine returns the last non-empty line of s: where Python puts the
// exception of a traceback.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
