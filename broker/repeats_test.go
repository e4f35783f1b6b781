package broker

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRepeatedKeys(t *testing.T) {
	for _, tc := range []struct {
		keys   []string
		firsts []int32 // nil: no repeats
		next   []int32
	}{
		{nil, nil, nil},
		{[]string{"a"}, nil, nil},
		{[]string{"a", "b", "c"}, nil, nil},
		{[]string{"a", "a"}, []int32{0}, []int32{1, -1}},
		{[]string{"b", "a", "b", "c", "a", "b"}, []int32{0, 1, 3}, []int32{2, 4, 5, -1, -1, -1}},
	} {
		t.Run(fmt.Sprint(tc.keys), func(t *testing.T) {
			firsts, next := repeatedKeys(len(tc.keys), func(i, j int) int { return cmp.Compare(tc.keys[i], tc.keys[j]) })
			if !slices.Equal(firsts, tc.firsts) || !slices.Equal(next, tc.next) || (firsts == nil) != (tc.firsts == nil) {
				t.Fatalf("firsts %v next %v, want %v %v", firsts, next, tc.firsts, tc.next)
			}
			var got []int
			for i := range firstEntries(len(tc.keys), firsts) {
				got = append(got, i)
			}
			seen := map[string]bool{}
			var want []int
			for i, k := range tc.keys {
				if !seen[k] {
					seen[k] = true
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("firstEntries %v, want %v", got, want)
			}
		})
	}
}

func TestUniqueOffsetFetch(t *testing.T) {
	topic := func(name string, ps ...int32) kmsg.OffsetFetchRequestGroupTopic {
		return kmsg.OffsetFetchRequestGroupTopic{Topic: name, Partitions: ps}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic("a", 1, 0, 1), topic("b", 0)}},
		{Group: "h", Topics: nil},
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic("a", 2, 0)}},
		{Group: "h", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic("a", 0)}},
		{Group: "i", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic("c", 3, 3)}},
	}
	before := fmt.Sprint(req.Groups)
	got := uniqueOffsetFetch(req)
	if after := fmt.Sprint(req.Groups); after != before {
		t.Fatalf("the request changed: %s, was %s", after, before)
	}
	want := []string{"g: a[1 0 2] b[0]", "h: all", "i: c[3]"}
	var have []string
	for _, g := range got.Groups {
		s := g.Group + ":"
		if g.Topics == nil {
			s += " all"
		}
		for _, t := range g.Topics {
			s += fmt.Sprintf(" %s%v", t.Topic, t.Partitions)
		}
		have = append(have, s)
	}
	if !slices.Equal(have, want) {
		t.Fatalf("got %q, want %q", have, want)
	}

	// Nothing repeated: the request's own slices are used.
	plain := kmsg.NewPtrOffsetFetchRequest()
	plain.Version = 7
	plain.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "a", Partitions: []int32{0, 1}}}
	if got := uniqueOffsetFetch(plain); &got.Topics[0] != &plain.Topics[0] {
		t.Fatal("a request without repeats was copied")
	}
}

func TestWantedConfigs(t *testing.T) {
	entries := []configEntry{{Name: "retention.ms"}, {Name: "cleanup.policy"}, {Name: "segment.bytes"}}
	res := func(names ...string) kmsg.DescribeConfigsRequestResource {
		return kmsg.DescribeConfigsRequestResource{ResourceType: 2, ResourceName: "t", ConfigNames: names}
	}
	for _, tc := range []struct {
		name      string
		resources []kmsg.DescribeConfigsRequestResource
		want      []string // nil: every config
	}{
		{"one copy, all", []kmsg.DescribeConfigsRequestResource{res()}, nil},
		{"one copy, some", []kmsg.DescribeConfigsRequestResource{res("retention.ms", "nope")}, []string{"retention.ms"}},
		{"union", []kmsg.DescribeConfigsRequestResource{res("retention.ms"), res("segment.bytes", "retention.ms")}, []string{"retention.ms", "segment.bytes"}},
		{"a copy asks for all", []kmsg.DescribeConfigsRequestResource{res("retention.ms"), res()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, next := repeatedKeys(len(tc.resources), func(i, j int) int { return 0 })
			got := wantedConfigs(tc.resources, 0, next, entries)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("want %v, want every config", got)
				}
				return
			}
			var names []string
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Fatalf("want %v, want %v", names, tc.want)
			}
		})
	}
}
