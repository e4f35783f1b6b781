package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// The py-confluent-group row runs python/group_check.py twice, as two
// processes: a confluent-kafka consumer in a group commits offsets in the
// middle of each partition and exits, and a new one in the same group
// resumes from them. Each run's RESULT line is checked here, and the
// group's committed offsets with franz-go after each.

const (
	pythonGroupTopic        = "compat-python-group"
	pythonGroupName         = "compat-python-group"
	pythonGroupPerPartition = 60
)

// pythonGroupCommits are the offsets the first run commits, one per
// partition.
var pythonGroupCommits = map[int32]int64{0: 7, 1: 30, 2: 55}

func pythonGroupRow() row {
	return row{
		name:    "py-confluent-group",
		tools:   []string{pythonInterpreter()},
		timeout: 2 * time.Minute,
		// The two runs join one after the other; Kafka's wait for more
		// members of a new group would only slow them down.
		overrides: []string{"group.initial.rebalance.delay.ms=0"},
		run:       runPythonGroup,
	}
}

// pythonGroupResult is the RESULT line of group_check.py.
type pythonGroupResult struct {
	Phase     string           `json:"phase"`
	Committed map[string]int64 `json:"committed"`
	Started   map[string]int64 `json:"started"`
	Records   int64            `json:"records"`
}

func runPythonGroup(ctx context.Context, env *rowEnv) error {
	if err := requireConfluentKafka(ctx); err != nil {
		return err
	}
	cl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()

	commits := make([]string, len(pythonGroupCommits))
	wantCommits := map[string]int64{}
	wantEnds := map[string]int64{}
	ends := map[int32]int64{}
	var remaining int64
	for p, o := range pythonGroupCommits {
		commits[p] = strconv.FormatInt(o, 10)
		wantCommits[strconv.Itoa(int(p))] = o
		wantEnds[strconv.Itoa(int(p))] = pythonGroupPerPartition
		ends[p] = pythonGroupPerPartition
		remaining += pythonGroupPerPartition - o
	}

	first, err := runGroupCheck(ctx, env, "commit", strings.Join(commits, ","))
	if err != nil {
		return err
	}
	if !maps.Equal(first.Committed, wantCommits) {
		return fmt.Errorf("group_check.py commit run reports committed %v, want %v", first.Committed, wantCommits)
	}
	if err := wantCommitted(ctx, adm, pythonGroupName, pythonGroupTopic, pythonGroupCommits); err != nil {
		return fmt.Errorf("after the commit run: %w", err)
	}

	second, err := runGroupCheck(ctx, env, "resume", strings.Join(commits, ","))
	if err != nil {
		return err
	}
	if !maps.Equal(second.Started, wantCommits) {
		return fmt.Errorf("group_check.py resume run started at %v, want the committed %v", second.Started, wantCommits)
	}
	if second.Records != remaining {
		return fmt.Errorf("group_check.py resume run read %d records, want %d", second.Records, remaining)
	}
	if !maps.Equal(second.Committed, wantEnds) {
		return fmt.Errorf("group_check.py resume run reports committed %v, want %v", second.Committed, wantEnds)
	}
	if err := wantCommitted(ctx, adm, pythonGroupName, pythonGroupTopic, ends); err != nil {
		return fmt.Errorf("after the resume run: %w", err)
	}
	return nil
}

// runGroupCheck runs one phase of group_check.py and returns its RESULT.
func runGroupCheck(ctx context.Context, env *rowEnv, phase, commits string) (pythonGroupResult, error) {
	var res pythonGroupResult
	what := "group_check.py --phase " + phase
	stdout, stderr, runErr := runPythonScript(ctx, env, "python-"+phase+".log", what, "group_check.py", "--phase", phase,
		"--bootstrap", env.broker.addr, "--topic", pythonGroupTopic, "--group", pythonGroupName,
		"--per-partition", strconv.Itoa(pythonGroupPerPartition), "--commit", commits)
	result, err := pythonResultLine(stdout, stderr, runErr, "confluent-kafka group "+phase+" run", what)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal([]byte(result), &res); err != nil {
		return res, fmt.Errorf("group_check.py RESULT line: %v: %q", err, result)
	}
	if res.Phase != phase {
		return res, fmt.Errorf("group_check.py --phase %s printed the RESULT of phase %q", phase, res.Phase)
	}
	return res, nil
}
