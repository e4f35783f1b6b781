package broker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/sluicetest"
)

// Connection creation quotas (issue 18, KIP-612), as a client sees them:
// an address over its connection_creation_rate has its excess
// connections closed without an answer, max.connection.creation.rate
// delays connections without refusing them, and the clients already
// connected are served throughout.

// connectAndAsk opens n connections to addr at once (the kernel completes
// them before the broker accepts them), sends ApiVersions on each and
// returns how many were answered; the others must have been closed
// without an answer.
func connectAndAsk(t *testing.T, addr string, n int) (answered int) {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns[i] = nc
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood")).AppendRequest(nil, req, 1)
	for _, nc := range conns {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		nc.Write(frame) // a connection closed already shows at the read
	}
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := protocol.ReadFrame(nc, 1<<20)
		var ne net.Error
		switch {
		case err == nil:
			answered++
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("connection %d neither answered nor closed", i)
		default:
			t.Logf("connection %d: %v", i, err)
		}
	}
	return answered
}

// keepProducing produces to topic from cl until stop is closed and
// returns how many records were acknowledged; any error fails the test.
func keepProducing(t *testing.T, cl *kgo.Client, topic string, stop <-chan struct{}) func() int64 {
	var acked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr()
			cancel()
			if err != nil {
				t.Errorf("produce during the flood: %v", err)
				return
			}
			acked.Add(1)
		}
	}()
	return func() int64 { wg.Wait(); return acked.Load() }
}

// consumeCount reads n records of topic from the start with cl.
func consumeCount(t *testing.T, cl *kgo.Client, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += int64(fs.NumRecords())
	}
}

// TestIPConnectionCreationRateQuota: with connection_creation_rate=20 on
// the ip entity 127.0.0.1 (AlterClientQuotas), a burst of connection
// attempts from 127.0.0.1 gets at most what the rate allows answered —
// 20/s over the 10 s Kafka measures a first burst against, plus the time
// the burst took — and the rest are closed by the broker without an
// answer. A franz-go client connected before keeps producing, and its
// records are all consumed afterwards.
func TestIPConnectionCreationRateQuota(t *testing.T) {
	const rate, attempts, topic = 20, 600, "conn-quota"
	n := sluicetest.Start(t)
	adm := n.Admin()
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	producer := n.Client()
	consumer := n.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	// Every connection the clients need is open before the quota is set.
	if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeCount(t, consumer, 1)

	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{
		Entity: qEntity("ip", "127.0.0.1"),
		Ops:    []kadm.AlterClientQuotaOp{qSet("connection_creation_rate", rate)},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %v", err, res)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if v, ok := n.Broker.ClientQuotasInForce().ResolveIP("127.0.0.1"); !ok || v != rate {
			return errors.New("connection_creation_rate of 127.0.0.1 not in force yet")
		}
		return nil
	})

	stop := make(chan struct{})
	produced := keepProducing(t, producer, topic, stop)
	start := time.Now()
	answered := connectAndAsk(t, n.Addr(), attempts)
	elapsed := time.Since(start).Seconds()
	close(stop)
	acked := produced()
	t.Logf("%d of %d attempts answered in %.1fs; %d records produced meanwhile", answered, attempts, elapsed, acked)

	if answered < rate*10 {
		t.Errorf("%d answered, want at least the first burst of %d", answered, rate*10)
	}
	if bound := int(rate * (10 + elapsed + 1)); answered > bound {
		t.Errorf("%d answered in %.1fs, want at most %d", answered, elapsed, bound)
	}
	if st := n.Broker.ConnQuotaStats(); int(st.IPThrottled) != attempts-answered {
		t.Errorf("%d connections throttled, want %d: every attempt not answered", st.IPThrottled, attempts-answered)
	}
	consumeCount(t, consumer, acked)
}

// TestMaxConnectionCreationRateDelays: max.connection.creation.rate,
// or the listener's own listener.name.plaintext.max.connection.creation.rate,
// set as a cluster-wide dynamic config delays the connections of a burst
// beyond the rate, it refuses none; a client connected before keeps
// producing.
func TestMaxConnectionCreationRateDelays(t *testing.T) {
	for _, key := range []string{"max.connection.creation.rate", "listener.name.plaintext.max.connection.creation.rate"} {
		t.Run(key, func(t *testing.T) {
			const attempts, topic = 20, "conn-rate"
			// Two samples of a second: a first burst of 5 connections passes.
			n := sluicetest.Start(t, "quota.window.num=2")
			adm := n.Admin()
			if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			producer := n.Client()
			if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			rs, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Name: key, Value: kmsg.StringPtr("5")}})
			if err != nil || rs[0].Err != nil {
				t.Fatalf("AlterBrokerConfigs: %v %v", err, rs)
			}

			stop := make(chan struct{})
			produced := keepProducing(t, producer, topic, stop)
			answered := connectAndAsk(t, n.Addr(), attempts)
			close(stop)
			acked := produced()
			if answered != attempts {
				t.Errorf("%d of %d attempts answered, want all (delayed, not refused)", answered, attempts)
			}
			if st := n.Broker.ConnQuotaStats(); st.AcceptDelays == 0 || st.IPThrottled != 0 {
				t.Errorf("stats %+v, want accepts delayed and none throttled", st)
			}
			t.Logf("%d attempts answered; %d records produced meanwhile", answered, acked)
		})
	}
}
