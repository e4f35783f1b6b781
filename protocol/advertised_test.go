package protocol

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRegisterAdvertisedFrom: a key registered with an advertised minimum
// below its served range is listed from that minimum, is refused below the
// served range like any unsupported version (no answer, the connection
// closed), and is served inside it.
func TestRegisterAdvertisedFrom(t *testing.T) {
	r := NewRouter(quietLogger(t))
	r.RegisterAdvertisedFrom(0, 0, 3, 13, produceHandler)

	listed := false
	for _, k := range r.Versions() {
		if k.ApiKey == 0 {
			listed = true
			if k.MinVersion != 0 || k.MaxVersion != 13 {
				t.Errorf("Versions lists Produce %d..%d, want 0..13", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !listed {
		t.Fatal("Versions does not list Produce")
	}

	for v := int16(0); v <= 13; v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 1
		req.SetVersion(v)
		out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, requestFrame(req, 1, nil))
		switch {
		case v < 3 && (!errors.Is(err, ErrUnsupportedVersion) || out != nil):
			t.Errorf("Produce v%d: got %x, %v; want no answer and %v", v, out, err, ErrUnsupportedVersion)
		case v >= 3 && (err != nil || out == nil):
			t.Errorf("Produce v%d: got %x, %v; want an answer", v, out, err)
		}
	}
}

func TestRegisterAdvertisedFromPanics(t *testing.T) {
	nop := func(context.Context, *Request) (kmsg.Response, error) { return nil, nil }
	for _, tt := range []struct {
		name          string
		advertisedMin int16
	}{
		{"above the served min", 4},
		{"negative", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRouter(quietLogger(t))
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, "advertised min version") {
					t.Fatalf("panic %v, want one about the advertised min version", p)
				}
			}()
			r.RegisterAdvertisedFrom(0, tt.advertisedMin, 3, 13, nop)
		})
	}
}
