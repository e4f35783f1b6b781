package metrics

// The HTTP listener: /metrics, /healthz, /readyz, started and stopped by
// its owner (the broker).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry holding the Go runtime and process
// collectors; the caller registers its own families on it.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Server is a running metrics listener.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds metrics.listener's address (host:port). The owner binds
// early, so a taken port fails the start, and calls Serve once the node
// serves.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listener: %w", err)
	}
	return ln, nil
}

// Serve serves reg on ln's /metrics, /healthz and /readyz until Close.
// ready reports whether the node is ready: nil when it is, else why not
// (the 503 body of /readyz). root, when not nil, serves every other path
// (the web console, package console); without it they are 404.
func Serve(ln net.Listener, reg *prometheus.Registry, ready func() error, logger *slog.Logger, root http.Handler) *Server {
	mux := http.NewServeMux()
	if root != nil {
		mux.Handle("/", root)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogError{logger}}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	s := &Server{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener stopped serving", "err", err)
		}
	}()
	return s
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener, waiting (within ctx) for scrapes in flight.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return err
}

// slogError adapts a logger to promhttp's error log.
type slogError struct{ l *slog.Logger }

func (e slogError) Println(v ...any) { e.l.Warn("metrics: " + fmt.Sprint(v...)) }
