package share

import (
	"math"
	"testing"
)

func TestSessionEpochs(t *testing.T) {
	c := NewSessionCache(2)
	key := SessionKey{Group: "g", Member: "m"}
	tp := func(p int32) TopicPartition { return TopicPartition{TopicID: [16]byte{1}, Partition: p} }
	if _, err := c.Update(key, 1, nil, nil); err != ErrSessionNotFound {
		t.Fatalf("update without a session: %v", err)
	}
	v, replaced, err := c.Open(key, []TopicPartition{tp(0), tp(1), tp(0)}, 7, nil)
	if err != nil || replaced != nil || v.Epoch != 1 || len(v.Partitions) != 2 {
		t.Fatalf("open: %+v %v %v", v, replaced, err)
	}
	if _, err := c.Update(key, 2, nil, nil); err != ErrInvalidSessionEpoch {
		t.Fatalf("wrong epoch: %v", err)
	}
	v, err = c.Update(key, 1, []TopicPartition{tp(2)}, []TopicPartition{tp(0)})
	if err != nil || v.Epoch != 2 || len(v.Partitions) != 2 || v.Partitions[0] != tp(1) || v.Partitions[1] != tp(2) {
		t.Fatalf("update: %+v %v", v, err)
	}
	// Reopening replaces the session and hands back the old one.
	v, replaced, err = c.Open(key, nil, 8, nil)
	if err != nil || replaced == nil || replaced.ConnID != 7 || v.Epoch != 1 {
		t.Fatalf("reopen: %+v %+v %v", v, replaced, err)
	}
	// The old connection's close does not drop the new session.
	if _, ok := c.Drop(key, 7); ok {
		t.Fatal("the old connection dropped the new session")
	}
	if _, ok := c.Drop(key, 8); !ok || c.Len() != 0 {
		t.Fatal("the session's own connection did not drop it")
	}
	// The limit.
	c.Open(SessionKey{"g", "a"}, nil, 1, nil)
	c.Open(SessionKey{"g", "b"}, nil, 1, nil)
	if _, _, err := c.Open(SessionKey{"g", "c"}, nil, 1, nil); err != ErrSessionLimit {
		t.Fatalf("third session in a cache of two: %v", err)
	}
	if _, err := c.Close(SessionKey{"g", "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Close(SessionKey{"g", "a"}); err != ErrSessionNotFound {
		t.Fatalf("closing twice: %v", err)
	}
	if nextEpoch(math.MaxInt32) != 1 {
		t.Fatal("the epoch does not wrap to 1")
	}
}
