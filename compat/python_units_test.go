package compat

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPythonOutput(t *testing.T) {
	good := `RESULT {"broker_configs": 133, "librdkafka": "2.0.2", "per_partition": {"0": 500, "1": 500, "2": 500, "3": 500}, "records": 2000, "seconds": {"consume": 0.5}, "version": "1.7.0"}`
	exit1 := errors.New("exit status 1")
	tests := []struct {
		name           string
		stdout, stderr string
		runErr         error
		wantFirst      string // the first line of the error; empty means no error
	}{
		{"good", "progress\n" + good + "\n", "", nil, ""},
		{"fail line", "FAIL: metadata: t partition 0 leader 7, want 1\n", "%4|...|noise\n", exit1,
			"confluent-kafka: metadata: t partition 0 leader 7, want 1"},
		{"fail line wins over result", "FAIL: consume: 3 of 4\n" + good + "\n", "", nil, "confluent-kafka: consume: 3 of 4"},
		{"traceback", "", "Traceback (most recent call last):\n  File \"x\"\nTypeError: boom\n", exit1,
			"confluent_check.py: exit status 1: TypeError: boom"},
		{"no result", "", "", nil, "confluent_check.py exited 0 without a RESULT line"},
		{"bad result", "RESULT {\n", "", nil, "confluent_check.py RESULT line"},
		{"few records", strings.Replace(good, `"records": 2000`, `"records": 1999`, 1), "", nil,
			"confluent_check.py checked 1999 records, want 2000"},
		{"few partitions", strings.Replace(good, `, "3": 500}`, `}`, 1), "", nil, "confluent_check.py consumed"},
		{"no broker configs", strings.Replace(good, `"broker_configs": 133`, `"broker_configs": 0`, 1), "", nil,
			"confluent_check.py: describe_configs for the broker returned no entries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPythonOutput(tc.stdout, tc.stderr, tc.runErr)
			switch {
			case tc.wantFirst == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantFirst != "" && err == nil:
				t.Errorf("no error, want %q", tc.wantFirst)
			case tc.wantFirst != "" && !strings.HasPrefix(firstLine(err.Error()), tc.wantFirst):
				t.Errorf("first line %q, want it to start with %q", firstLine(err.Error()), tc.wantFirst)
			}
		})
	}
}
