package console_test

// The console's JSON API against a real node, as the pages call it: topics
// created, described and deleted, records read back from an offset and a
// timestamp, a group's lag and an offset reset, and the refusals
// (read-only, another origin, a group with members, console.enable=false).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// call sends method path (under http://addr/api/) with body as JSON and
// decodes the answer into out; it returns the status.
func call(t *testing.T, addr, method, path string, body, out any, hdr ...string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+addr+"/api/"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return resp.StatusCode
}

type record struct {
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
	Headers   []struct {
		Key   string `json:"key"`
		Value []byte `json:"value"`
	} `json:"headers"`
}

type records struct {
	From      int64    `json:"from"`
	EndOffset int64    `json:"endOffset"`
	Records   []record `json:"records"`
}

// TestConsoleAPI drives the API of a single node's console.
func TestConsoleAPI(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0")
	addr := n.Broker.MetricsAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The page itself is served, embedded.
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "app.js") {
		t.Fatalf("GET /: %d %.200s", resp.StatusCode, page)
	}

	var cluster struct {
		ClusterID string `json:"clusterId"`
		Brokers   []struct {
			ID    int32  `json:"id"`
			State string `json:"state"`
		} `json:"brokers"`
		Voters []struct{ ID int32 } `json:"voters"`
		Ready  bool                 `json:"ready"`
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if code := call(t, addr, "GET", "cluster", nil, &cluster); code != 200 {
			return fmt.Errorf("GET /api/cluster: %d", code)
		}
		if !cluster.Ready {
			return fmt.Errorf("node not ready")
		}
		return nil
	})
	if len(cluster.Brokers) != 1 || cluster.Brokers[0].State != "up" || len(cluster.Voters) != 1 || cluster.ClusterID == "" {
		t.Fatalf("cluster: %+v", cluster)
	}

	// Create, seen by a Kafka client; a duplicate is Kafka's refusal.
	create := map[string]any{"name": "browse", "partitions": 2, "replicationFactor": 1, "configs": map[string]string{"retention.ms": "3600000"}}
	if code := call(t, addr, "POST", "topics", create, nil); code != 200 {
		t.Fatalf("create: %d", code)
	}
	adm := n.Admin()
	td, err := adm.ListTopics(ctx, "browse")
	if err != nil || len(td["browse"].Partitions) != 2 {
		t.Fatalf("the created topic as kadm sees it: %v %+v", err, td)
	}
	var tv struct {
		ID            string `json:"id"`
		PartitionList []struct {
			ISR []int32 `json:"isr"`
		} `json:"partitionList"`
		Configs []struct {
			Name, Value, Source string
		} `json:"configs"`
	}
	if code := call(t, addr, "GET", "topics/browse", nil, &tv); code != 200 {
		t.Fatalf("describe: %d", code)
	}
	id := td["browse"].ID
	want := base64.RawURLEncoding.EncodeToString(id[:])
	retention := ""
	for _, c := range tv.Configs {
		if c.Name == "retention.ms" {
			retention = c.Value + " " + c.Source
		}
	}
	if tv.ID != want || len(tv.PartitionList) != 2 || retention != "3600000 DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("describe browse: id %q (want %q as Kafka writes it), %d partitions, retention.ms %q", tv.ID, want, len(tv.PartitionList), retention)
	}
	if code := call(t, addr, "POST", "topics", create, nil); code != http.StatusBadRequest {
		t.Errorf("creating it again: %d, want 400 (TOPIC_ALREADY_EXISTS)", code)
	}
	if code := call(t, addr, "POST", "topics", create, nil, "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a create from another origin: %d, want 403", code)
	}

	// Produce, then read back from an offset and from a timestamp.
	cl := n.Client(kgo.DefaultProduceTopic("browse"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for i := range 10 {
		r := &kgo.Record{Partition: 1, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Timestamp: base.Add(time.Duration(i) * time.Second), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0, 1, 2}}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var rs records
	if code := call(t, addr, "GET", "topics/browse/partitions/1/records?offset=3&limit=4", nil, &rs); code != 200 {
		t.Fatalf("records: %d", code)
	}
	if len(rs.Records) != 4 || rs.Records[0].Offset != 3 || string(rs.Records[0].Key) != "k3" || string(rs.Records[3].Value) != `{"n":6}` ||
		len(rs.Records[0].Headers) != 1 || !bytes.Equal(rs.Records[0].Headers[0].Value, []byte{0, 1, 2}) || rs.EndOffset != 10 {
		t.Fatalf("records from offset 3: %+v", rs)
	}
	ts := base.Add(7 * time.Second).UnixMilli()
	if code := call(t, addr, "GET", fmt.Sprintf("topics/browse/partitions/1/records?timestamp=%d", ts), nil, &rs); code != 200 {
		t.Fatalf("records: %d", code)
	}
	if rs.From != 7 || len(rs.Records) != 3 || rs.Records[0].Timestamp != ts {
		t.Fatalf("records from timestamp %d: from %d, %d records", ts, rs.From, len(rs.Records))
	}
	if code := call(t, addr, "GET", "topics/browse/partitions/0/records", nil, &rs); code != 200 || len(rs.Records) != 0 {
		t.Fatalf("the empty partition: %d %+v", code, rs)
	}

	// A group's lag, a refused reset while it has a member, a reset once
	// it is Empty.
	if _, err := adm.CommitOffsets(ctx, "readers", kadm.OffsetsFromRecords(kgo.Record{Topic: "browse", Partition: 1, Offset: 3})); err != nil {
		t.Fatal(err)
	}
	var g struct {
		State      string `json:"state"`
		Lag        int64  `json:"lag"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Committed int64 `json:"committed"`
			Lag       int64 `json:"lag"`
		} `json:"partitions"`
	}
	if code := call(t, addr, "GET", "groups/readers", nil, &g); code != 200 || g.Lag != 6 {
		t.Fatalf("group readers: %d %+v, want lag 6 (committed 4 of 10)", code, g)
	}
	if code := call(t, addr, "POST", "groups/readers/reset", map[string]any{"to": "earliest"}, nil); code != 200 {
		t.Fatalf("reset: %d", code)
	}
	if code := call(t, addr, "GET", "groups/readers", nil, &g); code != 200 || g.Lag != 10 {
		t.Fatalf("after a reset to earliest: %+v, want lag 10", g)
	}
	consumer := n.Client(kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("browse"))
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		consumer.PollRecords(ctx, 100)
		if code := call(t, addr, "GET", "groups/readers", nil, &g); code != 200 || g.State != "Stable" {
			return fmt.Errorf("group state %q", g.State)
		}
		return nil
	})
	if code := call(t, addr, "POST", "groups/readers/reset", map[string]any{"to": "latest"}, nil); code != http.StatusConflict {
		t.Errorf("reset of a Stable group: %d, want 409", code)
	}
	consumer.Close()

	// Live chart figures: the node's own counters (read before the
	// topic goes, which drops its series).
	var m struct {
		Counters map[string]float64 `json:"counters"`
	}
	if code := call(t, addr, "GET", "metrics", nil, &m); code != 200 || m.Counters["bytesIn"] <= 0 || m.Counters["requests"] <= 0 {
		t.Fatalf("metrics: %d %+v", code, m)
	}

	// Delete.
	if code := call(t, addr, "DELETE", "topics/browse", nil, nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if td.Has("browse") {
			return fmt.Errorf("browse still listed")
		}
		return nil
	})

}

// TestConsoleReadOnlyAndOff: console.read.only refuses changes with 403
// and still shows; console.enable=false leaves the listener to /metrics.
func TestConsoleReadOnlyAndOff(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0", "console.read.only=true")
	addr := n.Broker.MetricsAddr()
	var topics []map[string]any
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if code := call(t, addr, "GET", "topics", nil, &topics); code != 200 {
			return fmt.Errorf("topics: %d", code)
		}
		return nil
	})
	if code := call(t, addr, "POST", "topics", map[string]any{"name": "nope"}, nil); code != http.StatusForbidden {
		t.Errorf("create on a read-only console: %d, want 403", code)
	}
	if code := call(t, addr, "DELETE", "topics/__consumer_offsets", nil, nil); code != http.StatusForbidden {
		t.Errorf("delete on a read-only console: %d, want 403", code)
	}
	var info struct {
		ReadOnly bool `json:"readOnly"`
	}
	if call(t, addr, "GET", "info", nil, &info); !info.ReadOnly {
		t.Errorf("info does not say read-only")
	}

	off := sluicetest.Start(t, "metrics.listener=127.0.0.1:0", "console.enable=false")
	for path, want := range map[string]int{"/": 404, "/api/topics": 404, "/metrics": 200} {
		resp, err := http.Get("http://" + off.Broker.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("console.enable=false: GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
