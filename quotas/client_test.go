package quotas

import "testing"

func TestResolvePrecedence(t *testing.T) {
	set := map[Entity]map[string]float64{
		{ClientID: DefaultPart()}:                            {ProducerByteRate: 8},
		{ClientID: Named("c")}:                               {ProducerByteRate: 7},
		{User: DefaultPart()}:                                {ProducerByteRate: 6},
		{User: DefaultPart(), ClientID: DefaultPart()}:       {ProducerByteRate: 5},
		{User: DefaultPart(), ClientID: Named("c")}:          {ProducerByteRate: 4},
		{User: Named("u")}:                                   {ProducerByteRate: 3},
		{User: Named("u"), ClientID: DefaultPart()}:          {ProducerByteRate: 2},
		{User: Named("u"), ClientID: Named("c")}:             {ProducerByteRate: 1},
		{IP: DefaultPart()}:                                  {ConnectionCreationRate: 50},
		{IP: Named("10.0.0.1")}:                              {ConnectionCreationRate: 5},
		{User: Named("other"), ClientID: Named("unrelated")}: {ConsumerByteRate: 9},
	}
	// Removing the most specific entity each time walks the order.
	order := []Entity{
		{User: Named("u"), ClientID: Named("c")},
		{User: Named("u"), ClientID: DefaultPart()},
		{User: Named("u")},
		{User: DefaultPart(), ClientID: Named("c")},
		{User: DefaultPart(), ClientID: DefaultPart()},
		{User: DefaultPart()},
		{ClientID: Named("c")},
		{ClientID: DefaultPart()},
	}
	for i, want := range order {
		r, ok := NewClientConfig(set).Resolve("u", "c", ProducerByteRate)
		if !ok || r.Entity != want || r.Limit != float64(i+1) {
			t.Fatalf("step %d: resolved %+v (%v), want %s = %d", i, r, ok, want, i+1)
		}
		delete(set, want)
	}
	if r, ok := NewClientConfig(set).Resolve("u", "c", ProducerByteRate); ok {
		t.Fatalf("no producer quota left, resolved %+v", r)
	}
	if _, ok := NewClientConfig(set).Resolve("u", "c", ConsumerByteRate); ok {
		t.Fatal("another user's consumer quota applied")
	}
	c := NewClientConfig(set)
	if v, ok := c.ResolveIP("10.0.0.1"); !ok || v != 5 {
		t.Fatalf("ip quota %v %v, want 5", v, ok)
	}
	if v, ok := c.ResolveIP("10.0.0.2"); !ok || v != 50 {
		t.Fatalf("default ip quota %v %v, want 50", v, ok)
	}
}

// Clients share a rate exactly when they share the parts of the entity
// their quota comes from.
func TestResolveSharing(t *testing.T) {
	c := NewClientConfig(map[Entity]map[string]float64{
		{User: DefaultPart()}:  {ConsumerByteRate: 100},
		{ClientID: Named("x")}: {ProducerByteRate: 10},
	})
	r, _ := c.Resolve("alice", "app-1", ConsumerByteRate)
	if r.User != "alice" || r.ClientID != "" {
		t.Fatalf("<default> user quota shared by %q/%q, want each user alone", r.User, r.ClientID)
	}
	r, _ = c.Resolve("alice", "x", ProducerByteRate)
	if r.User != "" || r.ClientID != "x" {
		t.Fatalf("client-id quota shared by %q/%q, want all users of client x", r.User, r.ClientID)
	}
	if got := (Entity{User: Named("alice"), ClientID: DefaultPart()}).String(); got != "user=alice, client-id=<default>" {
		t.Fatalf("String: %q", got)
	}
	var none *ClientConfig
	if _, ok := none.Resolve("a", "b", ProducerByteRate); ok {
		t.Fatal("nil config resolved a quota")
	}
}
