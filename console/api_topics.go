package console

// The topics API: list, describe (partitions, offsets, sizes, configs),
// create and delete.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

type topicSummary struct {
	Name              string `json:"name"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replicationFactor"`
	UnderReplicated   int    `json:"underReplicated"`
	Offline           int    `json:"offline"`
	// Records is the sum over partitions of end - start offset (control
	// records and compacted gaps included); Size is the bytes on disk of
	// every replica, -1 when DescribeLogDirs failed.
	Records int64  `json:"records"`
	Size    int64  `json:"size"`
	Error   string `json:"error,omitempty"`
}

type partitionView struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leaderEpoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offlineReplicas"`
	Start       int64   `json:"startOffset"`
	End         int64   `json:"endOffset"`
	// Size is the leader's log size in bytes (-1 unknown).
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

type configView struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive"`
}

type topicView struct {
	topicSummary
	ID            string          `json:"id"`
	PartitionList []partitionView `json:"partitionList"`
	Configs       []configView    `json:"configs"`
}

// sizes are the log sizes by topic, partition and broker.
type sizes map[string]map[int32]map[int32]int64

func (c *Console) logSizes(ctx context.Context, adm *kadm.Client, topics ...string) (sizes, error) {
	var set kadm.TopicsSet
	if len(topics) > 0 {
		md, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return nil, err
		}
		set = md.Topics.TopicsSet()
	}
	all, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, err
	}
	out := sizes{}
	all.Each(func(d kadm.DescribedLogDir) {
		for t, ps := range d.Topics {
			for p, dp := range ps {
				if out[t] == nil {
					out[t] = map[int32]map[int32]int64{}
				}
				if out[t][p] == nil {
					out[t][p] = map[int32]int64{}
				}
				out[t][p][dp.Broker] += dp.Size
			}
		}
	})
	return out, nil
}

func (c *Console) topics(ctx context.Context, _ *http.Request) (any, error) {
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	details, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, err
	}
	names := details.Names()
	starts, _ := adm.ListStartOffsets(ctx, names...)
	ends, _ := adm.ListEndOffsets(ctx, names...)
	sz, szErr := c.logSizes(ctx, adm)
	out := []topicSummary{}
	for _, td := range details.Sorted() {
		s := summarize(td, starts, ends)
		s.Size = -1
		if szErr == nil {
			s.Size = 0
			for _, bs := range sz[td.Topic] {
				for _, n := range bs {
					s.Size += n
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func summarize(td kadm.TopicDetail, starts, ends kadm.ListedOffsets) topicSummary {
	s := topicSummary{Name: td.Topic, Internal: td.IsInternal, Partitions: len(td.Partitions)}
	if td.Err != nil {
		s.Error = td.Err.Error()
	}
	for _, p := range td.Partitions {
		s.ReplicationFactor = max(s.ReplicationFactor, len(p.Replicas))
		if p.Leader < 0 {
			s.Offline++
		}
		if len(p.ISR) < len(p.Replicas) {
			s.UnderReplicated++
		}
		st, ok1 := starts.Lookup(td.Topic, p.Partition)
		en, ok2 := ends.Lookup(td.Topic, p.Partition)
		if ok1 && ok2 && st.Err == nil && en.Err == nil {
			s.Records += en.Offset - st.Offset
		}
	}
	return s
}

func (c *Console) topic(ctx context.Context, r *http.Request) (any, error) {
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("topic")
	md, err := adm.Metadata(ctx, name)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("topic %q does not exist", name)}
	}
	starts, _ := adm.ListStartOffsets(ctx, name)
	ends, _ := adm.ListEndOffsets(ctx, name)
	// Kafka writes a topic id (Uuid.toString) as URL-safe base64
	// without padding, as kafka-topics.sh --describe shows it.
	v := topicView{topicSummary: summarize(td, starts, ends), ID: base64.RawURLEncoding.EncodeToString(td.ID[:])}
	sz, szErr := c.logSizes(ctx, adm, name)
	v.Size = -1
	if szErr == nil {
		v.Size = 0
	}
	for _, p := range td.Partitions.Sorted() {
		pv := partitionView{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.ISR), Offline: orEmpty(p.OfflineReplicas), Start: -1, End: -1, Size: -1}
		if p.Err != nil {
			pv.Error = p.Err.Error()
		}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			pv.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			pv.End = o.Offset
		}
		if szErr == nil {
			if n, ok := sz[name][p.Partition][p.Leader]; ok {
				pv.Size = n
			}
			for _, n := range sz[name][p.Partition] {
				v.Size += n
			}
		}
		v.PartitionList = append(v.PartitionList, pv)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err == nil && len(rcs) == 1 && rcs[0].Err == nil {
		for _, cf := range rcs[0].Configs {
			cv := configView{Name: cf.Key, Source: strings.TrimPrefix(cf.Source.String(), "CONFIG_SOURCE_"), Sensitive: cf.Sensitive}
			if cf.Value != nil {
				cv.Value = *cf.Value
			}
			v.Configs = append(v.Configs, cv)
		}
		slices.SortFunc(v.Configs, func(a, b configView) int { return strings.Compare(a.Name, b.Name) })
	}
	return v, nil
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// createRequest is POST /api/topics' body; zero partitions or replication
// factor take the broker's defaults (num.partitions,
// default.replication.factor), as -1 does in CreateTopics.
type createRequest struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replicationFactor"`
	Configs           map[string]string `json:"configs"`
}

func (c *Console) createTopic(ctx context.Context, r *http.Request) (any, error) {
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, badRequest("a topic needs a name")
	}
	if req.Partitions <= 0 {
		req.Partitions = -1
	}
	if req.ReplicationFactor <= 0 {
		req.ReplicationFactor = -1
	}
	configs := map[string]*string{}
	for k, v := range req.Configs {
		configs[k] = &v
	}
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	resp, err := adm.CreateTopic(ctx, req.Partitions, req.ReplicationFactor, configs, req.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, kafkaRefusal(err, resp.ErrMessage)
	}
	return map[string]any{"name": resp.Topic, "partitions": resp.NumPartitions, "replicationFactor": resp.ReplicationFactor}, nil
}

func (c *Console) deleteTopic(ctx context.Context, r *http.Request) (any, error) {
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("topic")
	resp, err := adm.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, kafkaRefusal(err, resp.ErrMessage)
	}
	return map[string]string{"deleted": name}, nil
}

// kafkaRefusal makes a Kafka error code the cluster answered a 400 with
// its message; other errors (the cluster did not answer) stay 502.
func kafkaRefusal(err error, msg string) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		return badRequest("%v: %s", err, msg)
	}
	return badRequest("%v", err)
}
