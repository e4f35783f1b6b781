package broker

import (
	"math"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/config"
)

// fetchReq builds a Fetch request of the given version from topic entries
// given as name (or id byte from v13) and partition:offset pairs.
func fetchReq(version int16, topics ...fetchReqTopic) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	for _, t := range topics {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = t.name
		rt.TopicID[0] = t.id
		for _, p := range t.partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p[0], int64(p[1])
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

type fetchReqTopic struct {
	name       string
	id         byte
	partitions [][2]int32 // partition, fetch offset
}

// planString renders a plan as "topic:partition@offset" entries, one
// group per answer topic.
func planString(plan []fetchTopic) [][]string {
	var out [][]string
	for _, t := range plan {
		var ps []string
		for _, p := range t.partitions {
			name := t.topic.Topic
			if name == "" {
				name = string('0' + rune(t.topic.TopicID[0]))
			}
			ps = append(ps, name+":"+strconv.Itoa(int(p.Partition))+"@"+strconv.FormatInt(p.FetchOffset, 10))
		}
		out = append(out, ps)
	}
	return out
}

func TestPlanFetch(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *kmsg.FetchRequest
		want [][]string
	}{
		{"distinct", fetchReq(12, fetchReqTopic{name: "a", partitions: [][2]int32{{0, 1}, {1, 2}}}),
			[][]string{{"a:0@1", "a:1@2"}}},
		{"repeat keeps first place, last offset", fetchReq(12, fetchReqTopic{name: "a", partitions: [][2]int32{{0, 1}, {1, 2}, {0, 5}}}),
			[][]string{{"a:0@5", "a:1@2"}}},
		{"repeated topic entry merges when adjacent", fetchReq(12,
			fetchReqTopic{name: "a", partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{name: "a", partitions: [][2]int32{{1, 1}, {0, 3}}}),
			[][]string{{"a:0@3", "a:1@1"}}},
		{"a topic of repeats only adds nothing", fetchReq(12,
			fetchReqTopic{name: "a", partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{name: "b", partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{name: "a", partitions: [][2]int32{{0, 2}}}),
			[][]string{{"a:0@2"}, {"b:0@1"}}},
		{"topics apart stay apart", fetchReq(12,
			fetchReqTopic{name: "a", partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{name: "b", partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{name: "a", partitions: [][2]int32{{1, 2}}}),
			[][]string{{"a:0@1"}, {"b:0@1"}, {"a:1@2"}}},
		{"partitions beyond the bitmap", fetchReq(12, fetchReqTopic{name: "a", partitions: [][2]int32{{100, 1}, {-1, 2}, {5, 3}}}),
			[][]string{{"a:100@1", "a:-1@2", "a:5@3"}}},
		{"repeat beyond the bitmap", fetchReq(12, fetchReqTopic{name: "a", partitions: [][2]int32{{1000, 1}, {5, 3}, {1000, 2}}}),
			[][]string{{"a:1000@2", "a:5@3"}}},
		{"by id from v13", fetchReq(13,
			fetchReqTopic{id: 1, partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{id: 2, partitions: [][2]int32{{0, 1}}},
			fetchReqTopic{id: 1, partitions: [][2]int32{{0, 4}}}),
			[][]string{{"1:0@4"}, {"2:0@1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planString(planFetch(tc.req))
			if len(got) != len(tc.want) {
				t.Fatalf("plan %v, want %v", got, tc.want)
			}
			for i := range got {
				if len(got[i]) != len(tc.want[i]) {
					t.Fatalf("plan %v, want %v", got, tc.want)
				}
				for j := range got[i] {
					if got[i][j] != tc.want[i][j] {
						t.Fatalf("plan %v, want %v", got, tc.want)
					}
				}
			}
		})
	}
}

func TestFetchBudget(t *testing.T) {
	const fetchMax = 55 << 20
	b := &Broker{cfg: &config.Broker{FetchMaxBytes: fetchMax}}
	onePartition := fetchReq(12, fetchReqTopic{name: "a", partitions: [][2]int32{{0, 0}}})
	for _, tc := range []struct {
		name     string
		maxBytes int32
		fetchMax int32
		req      *kmsg.FetchRequest
		want     int
	}{
		{"request below fetch.max.bytes", 1 << 20, fetchMax, onePartition, 1 << 20},
		{"request above fetch.max.bytes", math.MaxInt32, fetchMax, onePartition, fetchMax},
		{"no MaxBytes", 0, fetchMax, onePartition, fetchMax},
		{"room for the fields under 2 GiB", math.MaxInt32, math.MaxInt32, onePartition,
			math.MaxInt32 - fetchResponseMargin - fetchTopicOverhead - len("a") - fetchPartitionOverhead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.cfg.FetchMaxBytes = tc.fetchMax
			tc.req.MaxBytes = tc.maxBytes
			if got := b.fetchBudget(tc.req, planFetch(tc.req)); got != tc.want {
				t.Fatalf("budget %d, want %d", got, tc.want)
			}
		})
	}
}
