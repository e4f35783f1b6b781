package console

// The handler: static assets, the API's routes and the Kafka clients
// behind them.

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed static
var staticFS embed.FS

// Options are what the console needs from its node.
type Options struct {
	// Bootstrap is the address of a Kafka listener of this node speaking
	// PLAINTEXT; a wildcard host (0.0.0.0, ::) is dialled on loopback.
	// Empty: the node has no PLAINTEXT listener and the API answers 503.
	Bootstrap string
	// NodeID is this node's node.id.
	NodeID int32
	// Gatherer is the node's Prometheus registry (the live charts).
	Gatherer prometheus.Gatherer
	// Ready reports the node's readiness as /readyz does: nil when ready.
	Ready func() error
	// ReadOnly is console.read.only: every change is refused.
	ReadOnly bool
}

// Console serves the pages and the API; Close releases its client.
type Console struct {
	opts Options
	mux  *http.ServeMux

	mu  sync.Mutex
	cl  *kgo.Client // nil until first used
	adm *kadm.Client
}

// New returns the console of a node; it connects to the cluster on the
// first API request, so a node still starting serves the pages at once.
func New(opts Options) *Console {
	c := &Console{opts: opts, mux: http.NewServeMux()}
	sub, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /", http.FileServerFS(sub))
	c.mux.HandleFunc("GET /api/info", c.handleInfo)
	c.mux.HandleFunc("GET /api/cluster", c.api(c.cluster))
	c.mux.HandleFunc("GET /api/topics", c.api(c.topics))
	c.mux.HandleFunc("POST /api/topics", c.change(c.createTopic))
	c.mux.HandleFunc("GET /api/topics/{topic}", c.api(c.topic))
	c.mux.HandleFunc("DELETE /api/topics/{topic}", c.change(c.deleteTopic))
	c.mux.HandleFunc("GET /api/topics/{topic}/partitions/{partition}/records", c.api(c.records))
	c.mux.HandleFunc("GET /api/groups", c.api(c.groups))
	c.mux.HandleFunc("GET /api/groups/{group}", c.api(c.group))
	c.mux.HandleFunc("POST /api/groups/{group}/reset", c.change(c.resetGroup))
	c.mux.HandleFunc("GET /api/metrics", c.handleMetrics)
	return c
}

// ServeHTTP serves the pages and the API.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// Close closes the console's Kafka client.
func (c *Console) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		c.cl.Close()
		c.cl, c.adm = nil, nil
	}
}

// errNoListener: the node has no listener the console can speak to.
var errNoListener = errors.New("console: this node has no PLAINTEXT Kafka listener for the console to connect to")

// bootstrap is the address the console dials.
func (c *Console) bootstrap() (string, error) {
	if c.opts.Bootstrap == "" {
		return "", errNoListener
	}
	host, port, err := net.SplitHostPort(c.opts.Bootstrap)
	if err != nil {
		return "", fmt.Errorf("console: bootstrap %q: %w", c.opts.Bootstrap, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port), nil
}

// admin returns the console's clients, connecting on first use.
func (c *Console) admin() (*kgo.Client, *kadm.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		return c.cl, c.adm, nil
	}
	addr, err := c.bootstrap()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("sluice-console"),
		kgo.RequestTimeoutOverhead(5*time.Second), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("console: %w", err)
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	return c.cl, c.adm, nil
}

// httpError is an error with the status the API answers it with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// apiFunc answers one API request with a value encoded as JSON.
type apiFunc func(ctx context.Context, r *http.Request) (any, error)

// api adapts f: a 10 s budget, JSON out, errors as {"error": ...}.
func (c *Console) api(f apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		v, err := f(ctx, r)
		if err != nil {
			code := http.StatusBadGateway // the cluster did not answer
			var he *httpError
			switch {
			case errors.As(err, &he):
				code = he.code
			case errors.Is(err, errNoListener):
				code = http.StatusServiceUnavailable
			}
			writeJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// change adapts f for a request that changes the cluster: refused in
// read-only mode and from another origin.
func (c *Console) change(f apiFunc) http.HandlerFunc {
	inner := c.api(f)
	return func(w http.ResponseWriter, r *http.Request) {
		if c.opts.ReadOnly {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "the console is read-only (console.read.only=true)"})
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin change refused"})
				return
			}
		}
		inner(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON request body of at most 64 KiB into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	return nil
}

// info is what every page shows in its header.
type info struct {
	NodeID    int32  `json:"nodeId"`
	ReadOnly  bool   `json:"readOnly"`
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
}

func (c *Console) handleInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, info{NodeID: c.opts.NodeID, ReadOnly: c.opts.ReadOnly, Version: version(), GoVersion: runtime.Version()})
}

// version is the binary's module version and VCS revision, as far as the
// build recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
