package compat

import (
	"slices"
	"strings"
	"testing"
)

func TestParseGroupTables(t *testing.T) {
	out := `
GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID
g1              t1              2          1               12              11              -               -               -
g1              t1              0          1               10              9               -               -               -

Consumer group 'g1' has no active members.
`
	rows, err := parseGroupTables(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["PARTITION"] != "2" || rows[1]["LAG"] != "9" || rows[1]["CLIENT-ID"] != "-" {
		t.Fatalf("rows %v", rows)
	}

	// A row with a column missing is an error, not a shifted row.
	bad := strings.Replace(out, "12              11", "12", 1)
	if _, err := parseGroupTables(bad); err == nil || !strings.Contains(err.Error(), "line 3 has 8 columns") {
		t.Fatalf("short row: err %v", err)
	}
}

func TestPartitionBlock(t *testing.T) {
	for _, c := range []struct {
		ps   []int32
		want string
	}{
		{nil, "[]"},
		{[]int32{5}, "5-5"},
		{[]int32{0, 1, 2, 3}, "0-3"},
		{[]int32{0, 2, 3}, "[0 2 3]"},
	} {
		if got := partitionBlock(c.ps); got != c.want {
			t.Errorf("partitionBlock(%v) = %q, want %q", c.ps, got, c.want)
		}
	}
}

func TestParseAssignment(t *testing.T) {
	got, err := parseAssignment("t:7,9,8", "t")
	if err != nil || !slices.Equal(got, []int32{7, 8, 9}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := parseAssignment("-", "t"); err != nil || got != nil {
		t.Fatalf("none: got %v, %v", got, err)
	}
	for _, s := range []string{"u:1", "t:1,x", "t"} {
		if _, err := parseAssignment(s, "t"); err == nil {
			t.Errorf("parseAssignment(%q) succeeded", s)
		}
	}
}
