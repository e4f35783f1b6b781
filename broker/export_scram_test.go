package broker

import "github.com/sluicedev/sluice/security"

// ScramCredential is the credential this node's SASL/SCRAM listeners
// check user's proofs against, for the tests of package broker_test.
func (b *Broker) ScramCredential(user, mechanism string) (security.ScramCredential, bool) {
	return b.scramCredential(user, mechanism)
}
