// Package controller owns sluice's cluster metadata: the brokers, topics,
// partitions (replicas, ISR, leader and epochs) and dynamic configs that
// every node must agree on.
//
// # Metadata log
//
// The metadata is the state machine of a hashicorp/raft log, kept on every
// node as KRaft keeps __cluster_metadata. The raft leader is the active
// controller: it alone decides, and every decision is a command in the log,
// so every node applying the log builds the same Image. A single broker is
// a cluster of one voter, with the same code path.
//
// A log entry is one command:
//
//	+-----------+-----------------------------+
//	| type byte | command payload as JSON     |
//	+-----------+-----------------------------+
//
// Command type numbers (commands.go) are frozen and only appended to. The
// FSM (fsm.go) dispatches through a table with one applyX function per type
// (apply.go) and panics on an unknown type or an undecodable payload, since
// skipping an entry would silently make this node's image diverge. Commands
// are fully decided: the active controller draws topic ids and random
// placement before writing, and the FSM uses nothing but the image and the
// payload, so replay is deterministic. An applyX may still reject a command
// (returning a Kafka error and changing nothing) to protect the image from
// a decision made against a stale view.
//
// Snapshots hold the whole image as one JSON document (image.go); on
// restart raft restores the newest snapshot and replays the log after it.
//
// # Images
//
// Applying a command publishes a new immutable *Image, built
// copy-on-write from the previous one, and calls Config.OnApply with it in
// log order. Readers take Controller.Image() without locks.
//
// # Admin operations
//
// CreateTopics, DeleteTopics, CreatePartitions and AlterConfigs validate
// against the current image under the controller's decision lock, then
// write one command and return after it has been applied. They follow
// Kafka's rules and error codes (kerr, wrapped with %w so errors.As finds
// the code and the rest of the text is the error message). On a node that
// is not the active controller they return NOT_CONTROLLER; forwarding to the
// active controller comes with multi-node clusters.
//
// # Choices where Kafka left room
//
//   - Placement is Kafka's classic rack-unaware / rack-aware assignment
//     (placement.go), not KRaft's striped placer; with racks on only some
//     brokers it places rack-unaware instead of failing.
//   - A broker re-registers only when its endpoint or rack changed, so
//     restarts do not grow the log; its epoch is the index of its latest
//     registration.
//   - A topic may have at most 10,000 partitions (KRaft's per-operation
//     record limit), so a request cannot make the controller allocate
//     without bound.
//   - __cluster_metadata cannot be created: its partition directory is
//     where the raft log lives.
package controller
