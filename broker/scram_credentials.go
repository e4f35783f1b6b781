package broker

import (
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/security"
)

// scramCredential is user's stored credential for mechanism
// (SCRAM-SHA-256 or SCRAM-SHA-512) in this broker's newest metadata
// image: what a SASL listener's SCRAM exchange checks a client's proof
// against (security.SASLConfig.Scram). A credential created through any
// broker works here once this broker's image has it.
func (b *Broker) scramCredential(user, mechanism string) (security.ScramCredential, bool) {
	img := b.metadata()
	if img == nil {
		return security.ScramCredential{}, false
	}
	c, ok := img.Scram.Lookup(user, controller.ScramMechanismOf(mechanism))
	if !ok {
		return security.ScramCredential{}, false
	}
	return security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}, true
}
