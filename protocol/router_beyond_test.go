package protocol

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawV6 is an InitProducerId body that kmsg's v5 type cannot be: at v6
// it keeps the bytes it is given, which a test compares with what it sent.
type rawV6 struct {
	kmsg.InitProducerIDRequest
	raw []byte
}

func (*rawV6) MaxVersion() int16 { return 6 }

func (v *rawV6) ReadFrom(src []byte) error {
	if v.Version < 6 {
		return v.InitProducerIDRequest.ReadFrom(src)
	}
	v.raw = append([]byte(nil), src...)
	return nil
}

func (v *rawV6) AppendTo(dst []byte) []byte {
	if v.Version < 6 {
		return v.InitProducerIDRequest.AppendTo(dst)
	}
	return append(dst, v.raw...)
}

// TestRegisterBeyondKmsg: a key registered above kmsg's max version is
// decoded by its own body type (the flexible request header's tags
// skipped first), ApiVersions lists it up to the advertised max only, and
// a version above the served max still closes the connection.
func TestRegisterBeyondKmsg(t *testing.T) {
	r := NewRouter(quietLogger(t))
	var got []byte
	var gotV5 *string
	r.RegisterBeyondKmsg(22, 0, 6, 5, func() kmsg.Request { return new(rawV6) }, func(_ context.Context, req *Request) (kmsg.Response, error) {
		body := req.Body.(*rawV6)
		got, gotV5 = body.raw, body.TransactionalID
		return kmsg.NewPtrInitProducerIDResponse(), nil
	})
	for _, k := range r.Versions() {
		if k.ApiKey == 22 && (k.MinVersion != 0 || k.MaxVersion != 5) {
			t.Fatalf("listed %d-%d, want 0-5", k.MinVersion, k.MaxVersion)
		}
	}

	sent := []byte{1, 2, 3, 0}
	v6 := &rawV6{InitProducerIDRequest: kmsg.NewInitProducerIDRequest(), raw: sent}
	v6.Version = 6
	h := Header{APIKey: 22, APIVersion: 6, CorrelationID: 9}
	frame := v6.AppendTo(AppendRequestHeader(nil, h, RequestHeaderV2))
	out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, frame)
	if err != nil || out == nil {
		t.Fatalf("v6: %x, %v", out, err)
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("v6 body %x, sent %x", got, sent)
	}

	v5 := kmsg.NewPtrInitProducerIDRequest()
	v5.Version, v5.TransactionalID = 5, kmsg.StringPtr("tx")
	if out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, requestFrame(v5, 10, nil)); err != nil || out == nil || gotV5 == nil || *gotV5 != "tx" {
		t.Fatalf("v5: %x, %v, id %v", out, err, gotV5)
	}

	h.APIVersion = 7
	if out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, AppendRequestHeader(nil, h, RequestHeaderV2)); err == nil {
		t.Fatalf("v7 answered %x, want the connection closed", out)
	}

	for _, tt := range []struct {
		name               string
		min, max, adverMax int16
		body               func() kmsg.Request
		want               string
	}{
		{"advertised above max", 0, 6, 7, func() kmsg.Request { return new(rawV6) }, "advertised max"},
		{"advertised below min", 2, 6, 1, func() kmsg.Request { return new(rawV6) }, "advertised max"},
		{"nil body", 0, 6, 5, nil, "nil handler or body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, tt.want) {
					t.Fatalf("panic %v, want one mentioning %q", p, tt.want)
				}
			}()
			NewRouter(quietLogger(t)).RegisterBeyondKmsg(22, tt.min, tt.max, tt.adverMax, tt.body, func(context.Context, *Request) (kmsg.Response, error) { return nil, nil })
		})
	}
}
