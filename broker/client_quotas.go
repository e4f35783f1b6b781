package broker

import "github.com/sluicedev/sluice/quotas"

// clientQuotas is the client quotas in force on this broker (issue 18,
// KIP-55): the quota entities of this broker's metadata image, resolved
// with quotas.ClientConfig.Resolve / ResolveIP. nil means none are set.
// The image builds its ClientConfig once per change of quotas
// (controller/client_quotas.go), so this is an atomic load, cheap enough
// for every request.
func (b *Broker) clientQuotas() *quotas.ClientConfig {
	img := b.metadata()
	if img == nil {
		return nil
	}
	return img.ClientQuotas
}
