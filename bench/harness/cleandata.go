package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cleanData is the records workload 14 sends: record i (at offset i of the
// partition) has key keys[i] and is a tombstone when tomb[i].
type cleanData struct {
	keys []int32
	tomb []bool
	// latest[k] is the offset of key k's last record, -1 if none.
	latest []int64
}

func newCleanData(records int64, keys int) *cleanData {
	rng := rand.New(rand.NewPCG(cleanSeed, cleanSeed))
	d := &cleanData{keys: make([]int32, records), tomb: make([]bool, records), latest: make([]int64, keys)}
	for k := range d.latest {
		d.latest[k] = -1
	}
	for i := range records {
		k := rng.Int32N(int32(keys))
		d.keys[i] = k
		d.tomb[i] = rng.IntN(cleanTombstoneEvery) == 0
		d.latest[k] = i
	}
	return d
}

// key returns record i's key.
func (d *cleanData) key(i int64) []byte { return fmt.Appendf(nil, "key-%08d", d.keys[i]) }

// value returns record i's value: nil for a tombstone.
func (d *cleanData) value(pool *valuePool, i int64) []byte {
	if d.tomb[i] {
		return nil
	}
	return pool.at(i)
}

// at returns the pool's value for record i, the same on every call and on
// both systems; a value repeats every valuePoolBytes of records, as with
// valuePool.value.
func (p *valuePool) at(i int64) []byte {
	j := int(i % p.n)
	return p.buf[j*p.size : (j+1)*p.size : (j+1)*p.size]
}

// cleanedView is what a consumer reads from data after every record below
// cleanedTo was cleaned (and no tombstone removed yet): below it, the last
// record of each key that has one there — a key written again in the
// active segment keeps its last record below too, since the cleaner maps
// only the section it cleans — and every record from it on.
type cleanedView struct {
	cleanedTo int64
	kept      []int64 // by key: its last offset below cleanedTo, or -1
	records   int64   // how many records the consumer reads
}

func (d *cleanData) cleanedView(cleanedTo int64) *cleanedView {
	v := &cleanedView{cleanedTo: cleanedTo, kept: make([]int64, len(d.latest))}
	for k := range v.kept {
		v.kept[k] = -1
	}
	for i := range min(cleanedTo, int64(len(d.keys))) {
		v.kept[d.keys[i]] = i
	}
	for _, o := range v.kept {
		if o >= 0 {
			v.records++
		}
	}
	v.records += max(int64(len(d.keys))-cleanedTo, 0)
	return v
}

// checkCleaned reads the partition from the start to its end and checks
// it against data: every record's key and value as sent at its offset;
// below cleanedTo only the last record of each key there; from it on
// every record. It returns how many records it read.
func (r *runner) checkCleaned(ctx context.Context, topic string, data *cleanData, cleanedTo int64) (int64, error) {
	end := int64(len(data.keys))
	cl, err := r.client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(10<<20),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	view := data.cleanedView(cleanedTo)
	var read int64
	last := int64(-1)
	var bad error
	for last < end-1 && bad == nil {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return 0, fmt.Errorf("reading %s back: %d records read, last offset %d of %d: %w", topic, read, last, end-1, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, fmt.Errorf("reading %s back: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if bad != nil {
				return
			}
			bad = data.checkRecord(r.values, view, rec.Offset, last, rec.Key, rec.Value)
			last = rec.Offset
			read++
		})
	}
	if bad != nil {
		return 0, fmt.Errorf("%s after cleaning: %w", topic, bad)
	}
	if read != view.records {
		return 0, fmt.Errorf("%s after cleaning below offset %d: %d records, want %d", topic, cleanedTo, read, view.records)
	}
	return read, nil
}

// checkRecord checks the record read at offset o, after one at prev,
// against what view says a consumer reads.
func (d *cleanData) checkRecord(pool *valuePool, view *cleanedView, o, prev int64, key, value []byte) error {
	cleanedTo := view.cleanedTo
	switch {
	case o <= prev:
		return fmt.Errorf("offset %d after %d", o, prev)
	case o >= int64(len(d.keys)):
		return fmt.Errorf("offset %d past the %d records sent", o, len(d.keys))
	case !bytes.Equal(key, d.key(o)):
		return fmt.Errorf("offset %d has key %q, sent %q", o, key, d.key(o))
	case d.tomb[o] && value != nil:
		return fmt.Errorf("offset %d (key %q) has a %d-byte value, sent a tombstone", o, key, len(value))
	case !d.tomb[o] && !bytes.Equal(value, pool.at(o)):
		return fmt.Errorf("offset %d (key %q) has another value than sent", o, key)
	case o < cleanedTo && view.kept[d.keys[o]] != o:
		return fmt.Errorf("offset %d (key %q) is below the cleaned offset %d but the key's last record there is at %d", o, key, cleanedTo, view.kept[d.keys[o]])
	case o > max(prev+1, cleanedTo):
		return fmt.Errorf("offsets %d to %d, at or above the cleaned offset %d, are missing", max(prev+1, cleanedTo), o-1, cleanedTo)
	}
	return nil
}
