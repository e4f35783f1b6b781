package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connsTopic is workload 9's topic: benchPartitions partitions at RF 3.
const connsTopic = "bench-conns"

// connsDialers is how many idle connections workload 9 opens at a time.
const connsDialers = 64

// conns is workload 9 (issue 22): -conns-idle client connections, opened
// round robin over the nodes, each a raw TCP connection (TLS under
// sasl_ssl) that sends one ApiVersions request, reads the answer and then
// sends nothing — a client pool at rest — and beside them -conns-active
// franz-go clients that each produce one record a second (acks=all, no
// linger) to a topic of benchPartitions partitions, each on a schedule of
// its own spread over the second, for -conns-time after one untimed
// record. Every record is timed from its intended send time, as in
// workload 2. The RSS figure is the largest node's VmRSS at the end of
// that time, with every connection still open; the notes give each
// node's before the idle connections opened and say how many idle
// connections were still open at the end (both systems close a
// connection idle for connections.max.idle.ms, 10 minutes by default,
// longer than the workload).
func (r *runner) conns(ctx context.Context) error {
	s := r.cfg.stress
	if err := createTopic(ctx, r.c, connsTopic, benchPartitions, benchRF, 2*time.Minute); err != nil {
		return err
	}
	before, _, err := r.nodeMemory()
	if err != nil {
		return err
	}

	start := time.Now()
	idle, err := r.openIdle(ctx, s.connsIdle)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	r.logf("%d idle connections open in %s", len(idle), time.Since(start).Round(time.Millisecond))

	var rss []int64
	var largest int64
	samples, err := r.produceEverySecond(ctx, s.connsActive, s.connsTime, func() (err error) {
		rss, largest, err = r.nodeMemory()
		return err
	})
	if err != nil {
		return err
	}
	open := stillOpen(idle)
	if len(samples) == 0 {
		return errors.New("no record acknowledged")
	}
	slices.Sort(samples)
	r.set("conns_rss_mib", float64(largest)/(1<<20))
	r.set("conns_p99", ms(percentile(samples, 0.99)))
	r.res.note("%s workload 9: RSS per node %s before the idle connections, %s with them and the active clients; %d of %d idle connections still open at the end; %d records, p50 %.1f ms",
		r.name(), mibList(before), mibList(rss), open, len(idle), len(samples), ms(percentile(samples, 0.5)))
	if open < len(idle) {
		return fmt.Errorf("%d of %d idle connections were closed by the brokers", len(idle)-open, len(idle))
	}
	return nil
}

// nodeMemory returns each node's VmRSS, in the order of the nodes, and
// the largest.
func (r *runner) nodeMemory() ([]int64, int64, error) {
	var each []int64
	var largest int64
	for _, n := range r.c.nodes {
		if n.proc == nil || !n.proc.alive() {
			continue
		}
		rss, _, err := n.proc.memory()
		if err != nil {
			return nil, 0, fmt.Errorf("node %d: %w", n.id, err)
		}
		each = append(each, rss)
		largest = max(largest, rss)
	}
	return each, largest, nil
}

// openIdle opens n connections round robin over the running nodes, each
// having sent ApiVersions and read the answer, connsDialers at a time. It
// returns the connections it opened, all of them unless it fails.
func (r *runner) openIdle(ctx context.Context, n int) ([]net.Conn, error) {
	var tlsConfig *tls.Config
	if r.sec.secured() {
		tlsConfig = r.sec.certs.ClientConfig(nil)
	}
	addrs := r.c.addrs()
	conns := make([]net.Conn, n)
	errs := make(chan error, 1)
	sem := make(chan struct{}, connsDialers)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil || len(errs) > 0 {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := apiVersionsConn(ctx, addrs[i%len(addrs)], tlsConfig, int32(i))
			if err != nil {
				select {
				case errs <- fmt.Errorf("idle connection %d to %s: %w", i+1, addrs[i%len(addrs)], err):
				default:
				}
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	conns = slices.DeleteFunc(conns, func(c net.Conn) bool { return c == nil })
	select {
	case err := <-errs:
		return conns, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return conns, err
	}
	return conns, nil
}

// apiVersionsConn dials addr (over TLS with tlsConfig, when set), sends
// one ApiVersions v3 request and reads its answer, as a client does first
// on every connection, and returns the connection.
func apiVersionsConn(ctx context.Context, addr string, tlsConfig *tls.Config, correlationID int32) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		c = tls.Client(c, tlsConfig)
	}
	if err := exchangeAPIVersions(c, correlationID); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// exchangeAPIVersions sends ApiVersions v3 on c and checks the answer.
func exchangeAPIVersions(c net.Conn, correlationID int32) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "sluice-bench-idle"
	req.ClientSoftwareVersion = "1"
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench-idle")).AppendRequest(nil, req, correlationID)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return fmt.Errorf("ApiVersions answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	// ApiVersions answers with response header v0 at every version: the
	// correlation id alone.
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return fmt.Errorf("ApiVersions answer for correlation id %d, want %d", got, correlationID)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(body[4:]); err != nil {
		return fmt.Errorf("ApiVersions answer: %w", err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// stillOpen counts the connections the broker has not closed: a read
// that finds nothing to read times out, one of a closed connection ends.
func stillOpen(conns []net.Conn) int {
	open := 0
	var one [1]byte
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.Read(one[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	return open
}

// produceEverySecond runs clients franz-go producers for d, each sending
// one record a second (acks=all, no linger) to connsTopic on a schedule
// offset by its share of the second, after one untimed record each, and
// returns every record's time from its intended send to its
// acknowledgement. atEnd runs once the last record is acknowledged,
// before the clients close.
func (r *runner) produceEverySecond(ctx context.Context, clients int, d time.Duration, atEnd func() error) ([]time.Duration, error) {
	cls := make([]*kgo.Client, 0, clients)
	defer func() {
		for _, cl := range cls {
			cl.Close()
		}
	}()
	for range clients {
		cl, err := r.client(
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DefaultProduceTopic(connsTopic),
			kgo.ProducerLinger(0),
		)
		if err != nil {
			return nil, err
		}
		cls = append(cls, cl)
	}
	// The first record of each client connects it: untimed.
	warm := time.Now()
	var failed errCount
	var wg sync.WaitGroup
	sem := make(chan struct{}, connsDialers)
	for _, cl := range cls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			failed.add(cl.ProduceSync(ctx, &kgo.Record{Value: r.values.value()}).FirstErr())
		})
	}
	wg.Wait()
	if err := failed.err(); err != nil {
		return nil, fmt.Errorf("first records: %w", err)
	}
	r.logf("%d producing clients connected in %s", clients, time.Since(warm).Round(time.Millisecond))

	var mu sync.Mutex
	var samples []time.Duration
	start := time.Now()
	seconds := max(int(d/time.Second), 1)
	for i, cl := range cls {
		offset := time.Duration(i) * time.Second / time.Duration(clients)
		wg.Go(func() {
			for k := range seconds {
				intended := start.Add(offset + time.Duration(k)*time.Second)
				if sleep(ctx, time.Until(intended)) != nil {
					return
				}
				cl.Produce(ctx, &kgo.Record{Value: r.values.value()}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.add(err)
						return
					}
					took := time.Since(intended)
					mu.Lock()
					samples = append(samples, took)
					mu.Unlock()
				})
			}
		})
	}
	wg.Wait()
	for _, cl := range cls {
		if err := cl.Flush(ctx); err != nil {
			return nil, err
		}
	}
	if err := failed.err(); err != nil {
		return nil, err
	}
	return samples, atEnd()
}
