package config

// metrics.listener: the HTTP listener of sluice's Prometheus metrics and
// health probes (sluice's own key; the metrics package serves it).

import (
	"net"
	"strconv"
)

// validMetricsListener checks metrics.listener: empty (off) or host:port
// with a numeric port in [0, 65535]; an empty host binds every interface.
func validMetricsListener(v string) string {
	if v == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return "must be host:port, e.g. 127.0.0.1:9404 (empty: off)"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "the port must be a number from 0 to 65535, e.g. 127.0.0.1:9404 (empty: off)"
	}
	return ""
}
