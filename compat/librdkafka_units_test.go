package compat

import (
	"strings"
	"testing"
)

func TestCheckKcatMetadata(t *testing.T) {
	const addr = "127.0.0.1:9092"
	good := `{"originating_broker":{"id":1,"name":"127.0.0.1:9092/1"},"query":{"topic":"t"},"controllerid":1,` +
		`"brokers":[{"id":1,"name":"127.0.0.1:9092"}],"topics":[{"topic":"t","partitions":[` +
		`{"partition":0,"leader":1,"replicas":[{"id":1}],"isrs":[{"id":1}]},` +
		`{"partition":1,"leader":1,"replicas":[{"id":1}],"isrs":[{"id":1}]}]}]}`
	tests := []struct {
		name    string
		out     string
		wantErr string // substring; empty means no error
	}{
		{"good", good, ""},
		{"wrong leader", strings.Replace(good, `"partition":1,"leader":1`, `"partition":1,"leader":7`, 1), "partition 1: leader 7, want 1"},
		{"extra replica", strings.Replace(good, `"replicas":[{"id":1}]`, `"replicas":[{"id":1},{"id":2}]`, 1), "replicas [1 2], want [1]"},
		{"empty isr", strings.Replace(good, `"isrs":[{"id":1}]`, `"isrs":[]`, 1), "isr [], want [1]"},
		{"partition error", strings.Replace(good, `"partition":0,`, `"partition":0,"error":"Broker: Leader not available",`, 1), "Leader not available"},
		{"missing partition", strings.Replace(good, `,{"partition":1,"leader":1,"replicas":[{"id":1}],"isrs":[{"id":1}]}`, "", 1), "has 1 partitions, want 2"},
		{"other topic", strings.Replace(good, `"topic":"t","partitions"`, `"topic":"u","partitions"`, 1), "topic t not in the answer"},
		{"wrong broker address", strings.Replace(good, `"name":"127.0.0.1:9092"}]`, `"name":"localhost:9092"}]`, 1), "brokers"},
		{"wrong controller", strings.Replace(good, `"controllerid":1`, `"controllerid":-1`, 1), "controller id -1"},
		{"not json", "% ERROR: nothing", "not kcat's JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkKcatMetadata([]byte(tc.out), addr, "t", 2)
			checkErrContains(t, err, tc.wantErr)
		})
	}
}

func TestParseKcatOffsets(t *testing.T) {
	got, err := parseKcatOffsets([]byte(`{"t":{"topic":"t","0":{"partition":0,"offset":3},"2":{"partition":2,"offset":-1}}}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 3 || got[2] != -1 {
		t.Errorf("got %v, want map[0:3 2:-1]", got)
	}
	for name, tc := range map[string]struct{ out, wantErr string }{
		"error":         {`{"t":{"topic":"t","5":{"partition":5,"offset":1,"error":"Local: Unknown partition"}}}`, "partition 5: error"},
		"other topic":   {`{"u":{"topic":"u","0":{"partition":0,"offset":3}}}`, "topic t not in the answer"},
		"key mismatch":  {`{"t":{"topic":"t","1":{"partition":0,"offset":3}}}`, "holds partition 0"},
		"not json":      {`t [0] offset 3`, "not kcat's JSON"},
		"empty answer":  {``, "not kcat's JSON"},
		"bad partition": {`{"t":{"topic":"t","0":"x"}}`, "partition 0"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseKcatOffsets([]byte(tc.out), "t")
			checkErrContains(t, err, tc.wantErr)
		})
	}
}

func TestKcatMetaTimestamps(t *testing.T) {
	// The timestamp queries rely on these: rising within a partition,
	// records 4 and 5 sharing one, partitions apart.
	const base = 1_000_000
	for p := range int32(kcatMetaPartitions) {
		for i := 1; i < kcatMetaRecords; i++ {
			prev, cur := kcatMetaTimestamp(base, p, i-1), kcatMetaTimestamp(base, p, i)
			if i == 5 && cur != prev || i != 5 && cur <= prev {
				t.Errorf("partition %d: record %d at %d after record %d at %d", p, i, cur, i-1, prev)
			}
		}
	}
	if kcatMetaTimestamp(base, 1, 0) <= kcatMetaTimestamp(base, 0, kcatMetaRecords-1) {
		t.Error("partition 1 starts before partition 0 ends")
	}
}

// checkErrContains fails t unless err contains want, or, for an empty want,
// err is nil.
func checkErrContains(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}
