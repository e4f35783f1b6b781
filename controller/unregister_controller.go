package controller

// UnregisterController (KIP-1312's API 94, Kafka 4.4's
// Admin.unregisterController and `kafka-cluster.sh unregister-controller`):
// removing a controller's registration from the metadata image.
//
// A Kafka controller process (a voter or an observer of the quorum)
// registers itself with a ControllerRegistrationRecord, separate from the
// broker registration a combined node also has; the controllers'
// registrations are what a feature upgrade checks besides the brokers'.
// sluice keeps no controller registrations: a node's one registration is
// its broker registration (Image.Brokers, removed by UnregisterBroker,
// unregister.go), and a feature upgrade is checked against this binary's
// supported ranges. So no id has a controller registration to remove, and
// this answers every request with the refusal Kafka 4.4.0 gives where no
// registration is found, after Kafka's checks that come first, in
// QuorumController's and ClusterControlManager's order:
//
//   - the active controller's own id: INVALID_REQUEST, "Controller cannot
//     unregister itself while it is active.";
//   - a finalized metadata.version below 33 (4.4-IV2, the first with
//     UnregisterControllerRecord): UNSUPPORTED_VERSION, "The current
//     MetadataVersion is too old to support controller unregistration.";
//   - any other id: CONTROLLER_ID_NOT_REGISTERED, "Controller ID N is not
//     currently registered."
//
// Kafka 4.4.0 has no check for raft voters (a later Kafka refuses to
// unregister a member of the voter set, KAFKA-20865); sluice, which
// removes nothing, needs none.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// controllerUnregistrationLevel is metadata.version 4.4-IV2, the first
// level at which Kafka can unregister a controller.
const controllerUnregistrationLevel = 33

// UnregisterController answers a request to remove controller id's
// registration: NOT_CONTROLLER off the active controller, otherwise one of
// Kafka's refusals (see the file comment); it never changes the image.
func (c *Controller) UnregisterController(id int32) error {
	if err := c.requireLeader(); err != nil {
		return err
	}
	if id == c.cfg.NodeID {
		return fmt.Errorf("%w: Controller cannot unregister itself while it is active.", kerr.InvalidRequest)
	}
	if c.Image().Features[FeatureMetadataVersion] < controllerUnregistrationLevel {
		return fmt.Errorf("%w: The current MetadataVersion is too old to support controller unregistration.", kerr.UnsupportedVersion)
	}
	return fmt.Errorf("%w: Controller ID %d is not currently registered.", kerr.ControllerIDNotRegistered, id)
}
