package protocol

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds returns valid request streams (size-prefixed frames) for the
// seed corpus: the requests every client sends first.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	add := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		f := withSize(requestFrame(req, int32(len(seeds)), kmsg.StringPtr("fuzz")))
		seeds = append(seeds, f)
		return f
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0.0"
	for _, v := range []int16{0, 3, 4, 5} {
		add(av, v)
	}
	future := AppendRequestHeader(nil, Header{APIKey: 18, APIVersion: 127, CorrelationID: 1}, RequestHeaderV2)
	seeds = append(seeds, withSize(future))

	md := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, topic)
	for _, v := range []int16{1, 9, 12, 13} {
		add(md, v)
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte("not really a record batch, but bytes")
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	add(pr, 3)
	p9 := add(pr, 9)
	pr.Acks = 0
	p0 := add(pr, 7)

	// A pipelined stream, and one whose second frame is cut short.
	seeds = append(seeds, append(append([]byte{}, p9...), p0...))
	seeds = append(seeds, append(append([]byte{}, p9...), p0[:len(p0)/2]...))
	return seeds
}

// FuzzServe feeds arbitrary bytes through what a connection does with them:
// frame parsing, header, body decode and routing. It must never panic, and
// every response it produces must decode as a client would decode it.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	r := NewRouter(slog.New(slog.DiscardHandler))
	r.Register(3, 0, 12, metadataHandler)
	r.Register(0, 3, 9, produceHandler)
	r.Register(10, 0, 2, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	conn := &ConnInfo{ID: 1}
	f.Fuzz(func(t *testing.T, stream []byte) {
		in := bytes.NewReader(stream)
		for {
			frame, err := ReadFrame(in, 1<<20)
			if err != nil {
				var sizeErr *FrameSizeError
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &sizeErr) {
					t.Fatalf("unexpected read error %v", err)
				}
				return
			}
			out, err := r.Serve(context.Background(), conn, frame)
			if err != nil {
				return // the connection would be closed
			}
			if out == nil {
				continue
			}
			checkFuzzResponse(t, r, frame, out)
		}
	})
}

// checkFuzzResponse decodes out as the client that sent frame would.
func checkFuzzResponse(t *testing.T, r *Router, frame, out []byte) {
	h, _, err := parseHeaderPrefix(frame)
	if err != nil {
		t.Fatalf("answered a frame whose header does not parse: %v", err)
	}
	rt, ok := r.lookup(h.APIKey)
	if !ok {
		t.Fatalf("answered unregistered key %d", h.APIKey)
	}
	respVersion := h.APIVersion
	if h.APIKey == apiVersionsKey && (h.APIVersion < rt.minVersion || h.APIVersion > rt.maxVersion) {
		respVersion = 0
	}
	corr, _ := decodeResponse(t, out, h.APIKey, h.APIVersion, respVersion)
	if corr != h.CorrelationID {
		t.Fatalf("correlation id %d, want %d", corr, h.CorrelationID)
	}
}
