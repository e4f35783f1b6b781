package broker

import (
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
)

// ConnQuotaStats are the connection creation quota counters of this
// node's listener, for the tests of package broker_test.
func (b *Broker) ConnQuotaStats() protocol.ConnQuotaStats { return b.server.ConnQuotaStats() }

// ClientQuotasInForce are the client quotas this node enforces.
func (b *Broker) ClientQuotasInForce() *quotas.ClientConfig { return b.clientQuotas() }
