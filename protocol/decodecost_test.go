package protocol

import (
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The decode-cost test builds, for every request kmsg knows and every
// version of it, requests whose arrays are filled with the smallest
// elements there are (zero values: empty strings, null nullable fields,
// empty nested arrays), one array at a time, and measures how many bytes
// kmsg allocates to decode each byte of such a body. The table in
// decodecost.go must be at least what is measured.

// slicePath is a way down a request struct to one slice field: at each
// step, the field index, and then element 0 of that slice.
type slicePath []int

// slicePaths lists every slice field reachable from t (a struct type)
// through slices of structs, depth first.
func slicePaths(t reflect.Type, prefix slicePath, depth int) []slicePath {
	if depth > 6 {
		return nil
	}
	var out []slicePath
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() == reflect.Uint8 {
			continue
		}
		p := append(append(slicePath(nil), prefix...), i)
		out = append(out, p)
		if e := f.Type.Elem(); e.Kind() == reflect.Struct {
			out = append(out, slicePaths(e, p, depth+1)...)
		}
	}
	return out
}

// fillPath sets, in v (a struct value), every slice on the way down p to
// one zero element and the last one to n zero elements. With tagged, each
// of the n elements also carries one unknown tagged field (3 bytes on the
// wire at flexible versions), which kmsg keeps in a map of its own.
func fillPath(v reflect.Value, p slicePath, n int, tagged bool) {
	f := v.Field(p[0])
	if len(p) == 1 {
		f.Set(reflect.MakeSlice(f.Type(), n, n))
		if tagged && f.Type().Elem().Kind() == reflect.Struct {
			for i := range n {
				if ut := f.Index(i).FieldByName("UnknownTags"); ut.IsValid() {
					if tags, ok := ut.Addr().Interface().(*kmsg.Tags); ok {
						tags.Set(9, nil)
					}
				}
			}
		}
		return
	}
	f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	fillPath(f.Index(0), p[1:], n, tagged)
}

// measureDecode returns the bytes allocated per body byte when decoding a
// request of key at version whose array at p holds the smallest elements,
// the body's length, and false if the array is not on the wire at that
// version.
func measureDecode(key, version int16, p slicePath, tagged bool) (float64, int, bool) {
	build := func(n int) []byte {
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		fillPath(reflect.ValueOf(req).Elem(), p, n, tagged)
		return req.AppendTo(nil)
	}
	one, two := build(1), build(2)
	per := len(two) - len(one)
	if per <= 0 {
		return 0, 0, false
	}
	n := (1 << 13) / per
	body := build(n)
	var before, after runtime.MemStats
	dst := kmsg.RequestForKey(key)
	dst.SetVersion(version)
	runtime.ReadMemStats(&before)
	err := dst.ReadFrom(body)
	runtime.ReadMemStats(&after)
	if err != nil {
		return 0, 0, false
	}
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body)), len(body), true
}

// measureTopTags is measureDecode for a request whose own tagged-field
// section holds 16,384 distinct empty unknown tags; false at
// versions that are not flexible.
func measureTopTags(key, version int16) (float64, int, bool) {
	build := func(n int) []byte {
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if !req.IsFlexible() {
			return nil
		}
		ut := reflect.ValueOf(req).Elem().FieldByName("UnknownTags")
		if !ut.IsValid() {
			return nil
		}
		tags, ok := ut.Addr().Interface().(*kmsg.Tags)
		if !ok {
			return nil
		}
		for i := range n {
			tags.Set(uint32(1000+i), nil)
		}
		return req.AppendTo(nil)
	}
	if build(1) == nil {
		return 0, 0, false
	}
	body := build(1 << 14)
	var before, after runtime.MemStats
	dst := kmsg.RequestForKey(key)
	dst.SetVersion(version)
	runtime.ReadMemStats(&before)
	err := dst.ReadFrom(body)
	runtime.ReadMemStats(&after)
	if err != nil {
		return 0, 0, false
	}
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body)), len(body), true
}

// worstDecode is the largest measureDecode over every version of key and
// every array in it, and where it was found.
func worstDecode(key int16) (factor float64, where string) {
	req := kmsg.RequestForKey(key)
	paths := slicePaths(reflect.TypeOf(req).Elem(), nil, 0)
	for v := int16(0); v <= req.MaxVersion(); v++ {
		if f, n, ok := measureTopTags(key, v); ok && f > factor {
			factor, where = f, fmt.Sprintf("v%d top-level unknown tags (%d-byte body)", v, n)
		}
		for _, p := range paths {
			for _, tagged := range []bool{false, true} {
				f, n, ok := measureDecode(key, v, p, tagged)
				if ok && f > factor {
					factor, where = f, fmt.Sprintf("v%d %s (%d-byte body, unknown tags %v)", v, pathName(reflect.TypeOf(req).Elem(), p), n, tagged)
				}
			}
		}
	}
	return factor, where
}

func pathName(t reflect.Type, p slicePath) string {
	s := ""
	for _, i := range p {
		f := t.Field(i)
		s += "." + f.Name
		t = f.Type.Elem()
	}
	return s
}

// TestDecodeFactorsCoverMeasured fails if decodeFactor for any api key is
// below what decoding the smallest elements of any of its arrays costs.
func TestDecodeFactorsCoverMeasured(t *testing.T) {
	var keys []int
	for k := int16(0); k < 200; k++ {
		if kmsg.RequestForKey(k) != nil {
			keys = append(keys, int(k))
		}
	}
	sort.Ints(keys)
	for _, k := range keys {
		key := int16(k)
		measured, where := worstDecode(key)
		table := decodeFactor(key)
		t.Logf("key %2d %-32s measured %6.2f table %3d  %s", key, kmsg.NameForKey(key), measured, table, where)
		if float64(table) < measured {
			t.Errorf("api key %d (%s): decodeFactor %d is below the measured %.2f bytes allocated per byte (%s)",
				key, kmsg.NameForKey(key), table, measured, where)
		}
	}
}

// TestWalkedDecodeCostsCoverMeasured: for every version of each request
// charged by a walk (decodeWalkers) and every array in it filled with the
// smallest elements (with and without an unknown tag each), what kmsg
// allocates to decode the body is below what the walk charges; and a
// Produce of records is charged little more than its size.
func TestWalkedDecodeCostsCoverMeasured(t *testing.T) {
	for key, walk := range decodeWalkers {
		req := kmsg.RequestForKey(key)
		typ := reflect.TypeOf(req).Elem()
		paths := slicePaths(typ, nil, 0)
		for v := int16(0); v <= req.MaxVersion(); v++ {
			for _, p := range paths {
				for _, tagged := range []bool{false, true} {
					build := func(n int) []byte {
						r := kmsg.RequestForKey(key)
						r.SetVersion(v)
						fillPath(reflect.ValueOf(r).Elem(), p, n, tagged)
						return r.AppendTo(nil)
					}
					body := build(1 << 13)
					var before, after runtime.MemStats
					dst := kmsg.RequestForKey(key)
					dst.SetVersion(v)
					runtime.ReadMemStats(&before)
					err := dst.ReadFrom(body)
					runtime.ReadMemStats(&after)
					if err != nil {
						continue // not on the wire at this version
					}
					allocated := int64(after.TotalAlloc - before.TotalAlloc)
					cost, err := walk(v, body)
					if err != nil {
						t.Fatalf("%s v%d %s: walk: %v", kmsg.NameForKey(key), v, pathName(typ, p), err)
					}
					if allocated > cost+requestOverhead {
						t.Errorf("%s v%d %s tagged=%v: kmsg allocated %d bytes for a %d-byte body, the walk charges %d",
							kmsg.NameForKey(key), v, pathName(typ, p), tagged, allocated, len(body), cost+requestOverhead)
					}
				}
			}
		}
	}

	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "records"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = make([]byte, 50<<20)
	tp.Partitions = append(tp.Partitions, pp)
	r.Topics = append(r.Topics, tp)
	frame := requestFrame(r, 1, nil)
	if charge := requestCharge(frame); charge > int64(len(frame))+8<<10 {
		t.Errorf("a Produce of one 50 MiB batch is charged %d bytes for a %d-byte frame", charge, len(frame))
	}
	// A truncated Produce is charged as the worst case.
	if charge := requestCharge(frame[:len(frame)/2]); charge < int64(len(frame)/2)*decodeFactor(produceKey) {
		t.Errorf("a truncated Produce is charged %d", charge)
	}
}

// TestLargeNaturalRequestsFitDefaultBudget: requests that are large for
// good reasons fit sluice's default queued.max.request.bytes (512 MiB):
// a Fetch and an OffsetCommit naming 100,000 partitions (1,000 topics of
// 100), a Metadata request naming 100,000 topics.
func TestLargeNaturalRequestsFitDefaultBudget(t *testing.T) {
	const defaultBudget = 512 << 20
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = fetch.MaxVersion()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = commit.MaxVersion()
	commit.Group = "group"
	for i := range 1000 {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = fmt.Sprintf("topic-%04d", i)
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = ft.Topic
		for p := range int32(100) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 1<<40, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Partition, cp.Offset = p, 1<<40
			ct.Partitions = append(ct.Partitions, cp)
		}
		fetch.Topics = append(fetch.Topics, ft)
		commit.Topics = append(commit.Topics, ct)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = meta.MaxVersion()
	for i := range 100000 {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(fmt.Sprintf("a-fairly-ordinary-topic-name-%06d", i))
		meta.Topics = append(meta.Topics, mt)
	}
	for _, req := range []kmsg.Request{fetch, commit, meta} {
		frame := requestFrame(req, 1, kmsg.StringPtr("client"))
		charge := requestCharge(frame)
		t.Logf("%s v%d: %d-byte frame charged %d MiB", kmsg.NameForKey(req.Key()), req.GetVersion(), len(frame), charge>>20)
		if charge > defaultBudget {
			t.Errorf("%s v%d of %d bytes is charged %d, more than the default budget", kmsg.NameForKey(req.Key()), req.GetVersion(), len(frame), charge)
		}
	}
}
