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

// TestProduceDecodeCostCoversMeasured: for every Produce version and every
// array in it filled with the smallest elements (with and without an
// unknown tag each), and for one large record batch, what kmsg allocates
// to decode the body is below what produceDecodeCost charges for it, and
// a request of records is charged little more than its size.
func TestProduceDecodeCostCoversMeasured(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	paths := slicePaths(reflect.TypeOf(req).Elem(), nil, 0)
	for v := int16(3); v <= req.MaxVersion(); v++ {
		for _, p := range paths {
			for _, tagged := range []bool{false, true} {
				build := func(n int) []byte {
					r := kmsg.NewPtrProduceRequest()
					r.SetVersion(v)
					fillPath(reflect.ValueOf(r).Elem(), p, n, tagged)
					return r.AppendTo(nil)
				}
				body := build(1 << 14)
				var before, after runtime.MemStats
				dst := kmsg.NewPtrProduceRequest()
				dst.SetVersion(v)
				runtime.ReadMemStats(&before)
				err := dst.ReadFrom(body)
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatalf("v%d %s: decode: %v", v, pathName(reflect.TypeOf(req).Elem(), p), err)
				}
				allocated := int64(after.TotalAlloc - before.TotalAlloc)
				cost, err := produceDecodeCost(v, body)
				if err != nil {
					t.Fatalf("v%d %s: walk: %v", v, pathName(reflect.TypeOf(req).Elem(), p), err)
				}
				if allocated > cost+requestOverhead {
					t.Errorf("v%d %s tagged=%v: kmsg allocated %d bytes for a %d-byte body, the walk charges %d",
						v, pathName(reflect.TypeOf(req).Elem(), p), tagged, allocated, len(body), cost+requestOverhead)
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
