package console

// GET /api/topics/{topic}/partitions/{partition}/records: the records of
// one partition from an offset (offset=N), a timestamp (timestamp=ms, the
// first record at or after it, as ListOffsets answers) or the newest
// (from=newest), at most limit (default 50, at most 500). Keys, values and
// headers travel as base64 (JSON's []byte); the page decodes them as text,
// JSON or hex.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxValueBytes bounds the bytes of one key, value or header the API
// hands the page; longer ones are cut and marked truncated.
const maxValueBytes = 64 << 10

type recordHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

type recordView struct {
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"`
	Key       []byte         `json:"key"` // null for a null key
	Value     []byte         `json:"value"`
	Headers   []recordHeader `json:"headers"`
	ValueSize int            `json:"valueSize"`
	Truncated bool           `json:"truncated"`
	Epoch     int32          `json:"leaderEpoch"`
}

type recordsView struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	StartOffset int64        `json:"startOffset"`
	EndOffset   int64        `json:"endOffset"`
	From        int64        `json:"from"` // the offset read from
	Records     []recordView `json:"records"`
}

func (c *Console) records(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("topic")
	p64, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || p64 < 0 {
		return nil, badRequest("partition %q is not a partition number", r.PathValue("partition"))
	}
	part := int32(p64)
	q := r.URL.Query()
	limit := 50
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 500 {
			return nil, badRequest("limit must be a number from 1 to 500")
		}
	}
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	st, ok1 := starts.Lookup(topic, part)
	en, ok2 := ends.Lookup(topic, part)
	if !ok1 || !ok2 {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no partition %d of topic %q", part, topic)}
	}
	if st.Err != nil {
		return nil, kafkaRefusal(st.Err, "")
	}
	if en.Err != nil {
		return nil, kafkaRefusal(en.Err, "")
	}
	v := recordsView{Topic: topic, Partition: part, StartOffset: st.Offset, EndOffset: en.Offset, Records: []recordView{}}
	switch {
	case q.Get("timestamp") != "":
		ms, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err != nil {
			return nil, badRequest("timestamp must be milliseconds since the epoch")
		}
		after, err := adm.ListOffsetsAfterMilli(ctx, ms, topic)
		if err != nil {
			return nil, err
		}
		o, ok := after.Lookup(topic, part)
		if !ok || o.Err != nil || o.Offset < 0 {
			v.From = en.Offset // no record at or after it
		} else {
			v.From = o.Offset
		}
	case q.Get("from") == "newest":
		v.From = max(st.Offset, en.Offset-int64(limit))
	case q.Get("offset") != "":
		if v.From, err = strconv.ParseInt(q.Get("offset"), 10, 64); err != nil || v.From < 0 {
			return nil, badRequest("offset must be a number from 0")
		}
		v.From = max(v.From, st.Offset)
	default:
		v.From = st.Offset
	}
	if v.From >= en.Offset {
		return v, nil
	}
	addr, err := c.bootstrap()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("sluice-console"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(v.From)}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for len(v.Records) < limit {
		fs := cl.PollRecords(ctx, limit-len(v.Records))
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, ferr
		}
		last := int64(-1)
		fs.EachRecord(func(rec *kgo.Record) {
			last = rec.Offset
			if len(v.Records) < limit {
				v.Records = append(v.Records, view(rec))
			}
		})
		if last >= en.Offset-1 {
			break
		}
	}
	return v, nil
}

func view(rec *kgo.Record) recordView {
	rv := recordView{Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), ValueSize: len(rec.Value), Epoch: rec.LeaderEpoch,
		Headers: []recordHeader{}}
	cut := func(b []byte) []byte {
		if len(b) > maxValueBytes {
			rv.Truncated = true
			return b[:maxValueBytes]
		}
		return b
	}
	rv.Key, rv.Value = cut(rec.Key), cut(rec.Value)
	if rec.Value == nil {
		rv.Value = nil
	}
	for _, h := range rec.Headers {
		rv.Headers = append(rv.Headers, recordHeader{Key: h.Key, Value: cut(h.Value)})
	}
	return rv
}
