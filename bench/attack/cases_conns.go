package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsV0 is the framed bytes of an ApiVersions v0 request.
func apiVersionsV0() []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return encodeRequest(req, 1)
}

// connState is what became of one attacker connection.
type connState int

const (
	connAnswered connState = iota
	connClosed
	connSilent
	connDialFailed
)

// manyConnections opens 150 connections from 127.0.0.1, sends ApiVersions
// on each, and counts the answered, the closed and the silent ones.
func manyConnections(ctx context.Context, h *harness) outcome {
	const n = 150
	states := make([]connState, n)
	conns := make([]*wireConn, n)
	for i := range n {
		w, err := h.attackConn(ctx)
		if err != nil {
			states[i] = connDialFailed
			continue
		}
		conns[i] = w
		if err := w.write(apiVersionsV0()); err != nil {
			states[i] = connClosed
		}
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(5 * time.Second)
	for i, w := range conns {
		if w == nil || states[i] != connAnswered {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.c.SetReadDeadline(deadline)
			_, _, err := w.readFrame(1 << 20)
			switch {
			case err == nil:
			case errors.Is(err, os.ErrDeadlineExceeded):
				states[i] = connSilent
			default:
				states[i] = connClosed
			}
		}()
	}
	wg.Wait()
	_, sockets, _ := h.b.fds()
	for _, w := range conns {
		if w != nil {
			w.Close()
		}
	}
	count := map[connState]int{}
	for _, s := range states {
		count[s]++
	}
	return outcome{
		answer: fmt.Sprintf("%d of %d answered, %d closed, %d unanswered after 5 s, %d dials failed",
			count[connAnswered], n, count[connClosed], count[connSilent], count[connDialFailed]),
		notes: fmt.Sprintf("broker held %d sockets with all %d open (the bystanders' included)", sockets, n),
	}
}

// idleConnection sends one request and then nothing, and waits for the
// broker to close the connection: connections.max.idle.ms plus 15 s.
func idleConnection(ctx context.Context, h *harness) outcome {
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	if _, err := apiVersions(w); err != nil {
		return outcome{answer: "ApiVersions: " + describeErr(err)}
	}
	start := time.Now()
	wait := time.Duration(h.opts.idleMs)*time.Millisecond + 15*time.Second
	w.c.SetReadDeadline(start.Add(wait))
	var one [1]byte
	_, err = w.c.Read(one[:])
	idle := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return outcome{answer: fmt.Sprintf("still open after %s idle", idle), notes: fmt.Sprintf("connections.max.idle.ms=%d", h.opts.idleMs)}
	case err != nil:
		return outcome{answer: fmt.Sprintf("closed by the broker after %s idle", idle), notes: fmt.Sprintf("connections.max.idle.ms=%d", h.opts.idleMs)}
	default:
		return outcome{answer: "the broker sent unrequested bytes"}
	}
}

// slowLoris opens 2,000 connections from 40 loopback addresses (50 each,
// within max.connections.per.ip), each starting a request frame of 1,000
// bytes and then sending one byte of it every 5 s, for 30 s; then counts
// those the broker still holds.
func slowLoris(ctx context.Context, h *harness) outcome {
	const (
		perIP   = 50
		ips     = 40
		n       = perIP * ips
		hold    = 30 * time.Second
		dripGap = 5 * time.Second
	)
	conns := make([]net.Conn, n)
	dialFails := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	start := []byte{0, 0, 3, 0xe8, 0} // size 1000, then the first byte of the api key
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			src := fmt.Sprintf("127.0.0.%d", 10+i/perIP)
			d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
			c, err := d.DialContext(ctx, "tcp", h.b.addr)
			if err == nil {
				var k int
				k, err = c.Write(start)
				h.sent.Add(int64(k))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialFails++
				if c != nil {
					c.Close()
				}
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	writeFailed := make([]bool, n)
	end := time.Now().Add(hold)
	for time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(min(dripGap, time.Until(end)))
		for i, c := range conns {
			if c == nil || writeFailed[i] {
				continue
			}
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			k, err := c.Write([]byte{0})
			h.sent.Add(int64(k))
			writeFailed[i] = err != nil
		}
	}
	_, sockets, _ := h.b.fds()
	open, closed := 0, 0
	var one [1]byte
	for i, c := range conns {
		if c == nil {
			continue
		}
		if writeFailed[i] {
			closed++
			continue
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := c.Read(one[:]); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		} else {
			closed++
		}
	}
	return outcome{
		answer: fmt.Sprintf("after %s: %d open to the attacker, %d closed by the broker, %d dials failed", hold, open, closed, dialFails),
		notes:  fmt.Sprintf("broker held %d sockets (the bystanders' included); an open connection the broker never accepted waits in the listen backlog", sockets),
	}
}

// partitionFlood asks for three topics of 10,000 partitions each in one
// CreateTopics, then counts the broker's open files, then deletes them.
func partitionFlood(ctx context.Context, h *harness) outcome {
	names := []string{"attack-flood-a", "attack-flood-b", "attack-flood-c"}
	req := kmsg.NewPtrCreateTopicsRequest()
	pickVersion(h.versions, req, 7)
	req.TimeoutMillis = 120000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = name
		t.NumPartitions = 10000
		t.ReplicationFactor = 1
		req.Topics = append(req.Topics, t)
	}
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	start := time.Now()
	resp, err := w.roundTrip(req, 150*time.Second)
	took := time.Since(start).Round(100 * time.Millisecond)
	var answer string
	if err != nil {
		answer = describeErr(err)
	} else {
		var parts []string
		for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
			parts = append(parts, errName(t.ErrorCode))
		}
		answer = strings.Join(parts, ", ")
	}
	answer += fmt.Sprintf(" (in %s)", took)
	notes := ""
	if h.b.alive() {
		open, _, limit := h.b.fds()
		notes = fmt.Sprintf("broker open files after: %d of %d", open, limit)
		notes += "; cleanup: " + h.deleteTopics(ctx, names)
		if h.b.alive() {
			open, _, _ = h.b.fds()
			notes += fmt.Sprintf(" (open files then: %d)", open)
		}
	}
	return outcome{answer: answer, notes: notes}
}

// deleteTopics deletes topics with the harness's own connection.
func (h *harness) deleteTopics(ctx context.Context, names []string) string {
	w, err := h.setupConn(ctx)
	if err != nil {
		return "dial: " + describeErr(err)
	}
	defer w.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	pickVersion(h.versions, req, 5)
	req.TimeoutMillis = 60000
	req.TopicNames = names
	for _, name := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	resp, err := w.roundTrip(req, 90*time.Second)
	if err != nil {
		return "DeleteTopics: " + describeErr(err)
	}
	var parts []string
	for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		parts = append(parts, errName(t.ErrorCode))
	}
	return "DeleteTopics " + strings.Join(parts, ", ")
}

// interBrokerAPIs sends, each on a new connection to the client port, the
// requests only brokers and controllers exchange, naming the node itself
// with broker epoch -1.
func interBrokerAPIs(ctx context.Context, h *harness) outcome {
	const topic = "attack-alter"
	if err := h.createTopic(ctx, topic, 1, nil); err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	sw, err := h.setupConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	md, err := h.metadata(ctx, sw, topic)
	sw.Close()
	if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 || len(md.Brokers) == 0 {
		return outcome{answer: fmt.Sprintf("setup failed: metadata of %s: %v", topic, err)}
	}
	node := md.Brokers[0].NodeID
	mt, mp := md.Topics[0], md.Topics[0].Partitions[0]

	alter := kmsg.NewPtrAlterPartitionRequest()
	alter.BrokerID, alter.BrokerEpoch = node, -1
	at := kmsg.NewAlterPartitionRequestTopic()
	at.Topic, at.TopicID = topic, mt.TopicID
	ap := kmsg.NewAlterPartitionRequestTopicPartition()
	ap.Partition, ap.LeaderEpoch, ap.NewISR = 0, mp.LeaderEpoch, []int32{node}
	ebr := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
	ebr.BrokerID, ebr.BrokerEpoch = node, -1
	ap.NewEpochISR = append(ap.NewEpochISR, ebr)
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)

	alloc := kmsg.NewPtrAllocateProducerIDsRequest()
	alloc.BrokerID, alloc.BrokerEpoch = node, -1

	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = node, -1

	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.BrokerID, cs.BrokerEpoch = node, -1

	var parts []string
	for _, req := range []kmsg.Request{alter, alloc, hb, cs} {
		v := pickVersion(h.versions, req, 3)
		_, listed := h.versions[req.Key()]
		name := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", req), "*kmsg."), "Request")
		ans := func() string {
			w, err := h.attackConn(ctx)
			if err != nil {
				return "dial: " + describeErr(err)
			}
			defer w.Close()
			resp, err := w.roundTrip(req, 15*time.Second)
			if err != nil {
				return describeErr(err)
			}
			return "answered " + responseCodes(resp)
		}()
		adv := "listed in ApiVersions"
		if !listed {
			adv = "not listed"
		}
		parts = append(parts, fmt.Sprintf("%s v%d (%s): %s", name, v, adv, ans))
	}
	return outcome{answer: strings.Join(parts, "; "), notes: fmt.Sprintf("node %d, broker epoch -1", node)}
}

// responseCodes summarises the error codes of an inter-broker answer.
func responseCodes(resp kmsg.Response) string {
	switch r := resp.(type) {
	case *kmsg.AlterPartitionResponse:
		s := errName(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				s += fmt.Sprintf(", partition %d: %s", p.Partition, errName(p.ErrorCode))
			}
		}
		return s
	case *kmsg.AllocateProducerIDsResponse:
		if r.ErrorCode == 0 {
			return fmt.Sprintf("NONE, ids %d–%d", r.ProducerIDStart, r.ProducerIDStart+int64(r.ProducerIDLen)-1)
		}
		return errName(r.ErrorCode)
	case *kmsg.BrokerHeartbeatResponse:
		return fmt.Sprintf("%s (fenced=%v, shouldShutDown=%v)", errName(r.ErrorCode), r.IsFenced, r.ShouldShutdown)
	case *kmsg.ControlledShutdownResponse:
		return errName(r.ErrorCode)
	default:
		return fmt.Sprintf("%T", resp)
	}
}
