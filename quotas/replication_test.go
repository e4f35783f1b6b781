package quotas

import (
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r Rate
	if r.Exceeded(t0) {
		t.Fatal("zero Rate is exceeded")
	}
	r.Record(1<<30, t0)
	if r.Exceeded(t0) {
		t.Fatal("zero Rate exceeded after a record")
	}
	r.SetRate(1000, t0)
	if r.Exceeded(t0) {
		t.Fatal("a new limit starts exceeded")
	}
	r.Record(3000, t0) // 1000 tokens - 3000 = -2000
	for _, tc := range []struct {
		name     string
		after    time.Duration
		exceeded bool
	}{
		{"right after", 0, true},
		{"one second later", time.Second, true},
		{"two seconds later", 2 * time.Second, false},
	} {
		if got := r.Exceeded(t0.Add(tc.after)); got != tc.exceeded {
			t.Errorf("%s: exceeded %v, want %v", tc.name, got, tc.exceeded)
		}
	}
	// The bucket never holds more than one second of tokens.
	late := t0.Add(time.Hour)
	r.Record(1500, late)
	if !r.Exceeded(late) {
		t.Error("an hour idle let 1500 bytes through a 1000 B/s bucket")
	}
	r.SetRate(Unlimited, late)
	if r.Exceeded(late) {
		t.Error("Unlimited is exceeded")
	}
}

func TestThrottledReplicas(t *testing.T) {
	tests := []struct {
		name              string
		value             string
		partition, broker int32
		want              bool
	}{
		{"empty", "", 0, 1, false},
		{"star", "*", 3, 7, true},
		{"listed", "0:1,1:2", 1, 2, true},
		{"other broker", "0:1,1:2", 1, 1, false},
		{"spaces", " 0:1 , 4:2 ", 4, 2, true},
		{"garbage", "x:y,0-1", 0, 1, false},
	}
	for _, tc := range tests {
		if got := ThrottledReplicas(tc.value, tc.partition, tc.broker); got != tc.want {
			t.Errorf("%s: ThrottledReplicas(%q, %d, %d) = %v, want %v", tc.name, tc.value, tc.partition, tc.broker, got, tc.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"": Unlimited, "1000": 1000, "-5": Unlimited, "9223372036854775807": Unlimited, "x": Unlimited} {
		if got := ParseRate(in); got != want {
			t.Errorf("ParseRate(%q) = %d, want %d", in, got, want)
		}
	}
}
