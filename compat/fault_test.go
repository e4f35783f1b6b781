package compat

import (
	"context"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fault-detected row proves that rows check what clients see, not only
// exit codes (issue 3, acceptance 3). It builds sluice with -tags
// compatfault, which compiles broker/fault_compatfault.go in: with
// SLUICE_FAULT=wrong-leader that build reports leader 7, a node that does
// not exist, for every partition in Metadata and DescribeTopicPartitions.
// kcat -L and librdkafka's metadata calls still exit 0 with that answer.
//
// Each victim row runs twice against the fault build: first with no fault,
// where it must pass (so the build differs from a normal one only by the
// fault), then with the fault, where it must fail, and fail on the leader.
// The row passes only if every victim did both. The broker the harness
// starts for this row is not used.

// faultLeaderWord is what a victim's first failure line must mention for the
// failure to count as caused by the wrong-leader fault.
const faultLeaderWord = "leader 7"

// faultVictims are the rows run against the fault build: each reads
// partition leaders and needs only a few seconds when the fault stops it.
func faultVictims() []row {
	return []row{kcatMetadataRow(), pythonConfluentRow()}
}

func faultDetectedRow() row {
	var tools []string
	for _, v := range faultVictims() {
		tools = append(tools, v.tools...)
	}
	return row{
		name:    "fault-detected",
		tools:   tools,
		timeout: 3 * time.Minute,
		run:     runFaultDetected,
	}
}

func runFaultDetected(ctx context.Context, env *rowEnv) error {
	bin := filepath.Join(env.dir, "sluice-compatfault")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "compatfault", "-o", bin, "./cmd/sluice")
	build.Dir = env.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -tags compatfault ./cmd/sluice: %v: %s", err, firstLine(string(out)))
	}

	for _, v := range faultVictims() {
		env.t.Setenv("SLUICE_FAULT", "")
		dir := filepath.Join(env.dir, v.name+"-nofault")
		if err := runVictim(ctx, env, v, bin, dir, false); err != nil {
			return fmt.Errorf("%s fails against the compatfault build with no fault set, so a failure with the fault proves nothing: %w", v.name, err)
		}

		env.t.Setenv("SLUICE_FAULT", "wrong-leader")
		dir = filepath.Join(env.dir, v.name+"-wrong-leader")
		err := runVictim(ctx, env, v, bin, dir, true)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s against a broker reporting a wrong leader: %w", v.name, ctx.Err())
		case err == nil:
			return fmt.Errorf("%s PASSED against a broker reporting leader %s for every partition: the row does not check leaders", v.name, strings.TrimPrefix(faultLeaderWord, "leader "))
		case !strings.Contains(firstLine(err.Error()), faultLeaderWord):
			return fmt.Errorf("%s failed against a broker reporting a wrong leader, but not on the leader (want %q in): %s", v.name, faultLeaderWord, firstLine(err.Error()))
		}
		// Printed so that the matrix shows what each victim caught.
		line := fmt.Sprintf("fault-detected: %s failed as it should: %s", v.name, firstLine(err.Error()))
		fmt.Println(line)
		env.t.Log(line)
	}
	return nil
}

// runVictim starts bin with the environment of the test process (so
// SLUICE_FAULT reaches it), runs r against it and checks that the broker
// logged injecting the fault exactly when fault is set. It returns r's
// error, or the harness's if the broker could not start, crashed or raced.
func runVictim(ctx context.Context, env *rowEnv, r row, bin, dir string, fault bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	b, err := startBroker(rctx, bin, dir, r.overrides)
	if err != nil {
		return fmt.Errorf("starting the compatfault broker: %w", err)
	}
	runErr := r.run(rctx, &rowEnv{t: env.t, broker: b, root: env.root, dir: dir})
	crashErr := b.crashed()
	stopErr := b.stop()
	// The log is complete once the broker has stopped.
	logData, err := os.ReadFile(b.logPath)
	if err != nil {
		return err
	}
	if injecting := strings.Contains(string(logData), "compatfault: injecting"); injecting != fault {
		return fmt.Errorf("compatfault broker injecting=%v, want %v (SLUICE_FAULT=%q); log %s",
			injecting, fault, os.Getenv("SLUICE_FAULT"), b.logPath)
	}
	if crashErr != nil {
		return crashErr
	}
	if raceErr := b.raceReport(); raceErr != nil {
		return raceErr
	}
	if runErr != nil {
		return runErr
	}
	return stopErr
}

// TestFaultCodeOnlyInTaggedBuild checks that the fault injection is compiled
// only with -tags compatfault: a normal build of the broker package has no
// file that reads SLUICE_FAULT, and the tagged build has one.
func TestFaultCodeOnlyInTaggedBuild(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "broker")
	mentions := func(ctxt build.Context) []string {
		t.Helper()
		pkg, err := ctxt.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("import %s: %v", dir, err)
		}
		var files []string
		for _, f := range pkg.GoFiles {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "SLUICE_FAULT") {
				files = append(files, f)
			}
		}
		return files
	}
	normal := build.Default
	normal.BuildTags = nil
	if files := mentions(normal); len(files) != 0 {
		t.Errorf("a normal build of broker/ compiles fault injection in: %v", files)
	}
	tagged := build.Default
	tagged.BuildTags = []string{"compatfault"}
	if files := mentions(tagged); len(files) != 1 {
		t.Errorf("a compatfault build of broker/ has fault files %v, want exactly one", files)
	}
}
