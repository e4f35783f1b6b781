// Package chaos is sluice's fault-injection suite (issue 13): real sluice
// processes in Linux network namespaces, faults made with iptables rules
// and signals, workloads driven by franz-go, and a checker that says
// whether any acknowledged record was lost.
//
// Everything lives in the package's tests. TestChaos builds ./cmd/sluice
// (or uses SLUICE_CHAOS_BIN, to test a binary built from another commit)
// and, for each scenario, starts three nodes, each a raft voter in its own
// namespace (10.77.k.n on a veth whose peer is on a bridge in the root
// namespace, where the test process is the client), with RF 3,
// min.insync.replicas=2, unclean.leader.election.enable=false and short
// replica.lag.time.max.ms and broker.session.timeout.ms. It then:
//
//   - runs an idempotent acks=all producer writing unique values, one loop
//     per partition, recording every acknowledged record's partition and
//     offset, and a transactional workload that commits and aborts
//     transactions alternately;
//   - applies the scenario's faults: DROP rules (never REJECT, so a cut
//     peer sees silence, not a reset) that isolate a node, cut one port
//     class (Kafka, raft/CONTROLLER, serf gossip over TCP and UDP) between
//     two nodes, cut one direction, or drop only the answers from a port;
//     SIGSTOP for longer than the session; kill -9 and restart; or a
//     nemesis of random faults from a seeded RNG;
//   - heals everything and measures the time until every partition has its
//     full ISR again and takes writes again;
//   - reads every partition from the start with a fresh client and checks
//     that every acknowledged record is present exactly once at the offset
//     it was acknowledged with, that nothing was read that was never sent,
//     that read_committed shows every committed transaction's records once
//     and no aborted one's; then stops the nodes with SIGTERM and compares
//     the replicas' record batches below the high watermark byte for byte.
//
// The scenarios (scenarios_test.go), cited as TestChaos/<name>; those
// marked * make the short form (about 2.5 minutes on two cores), the long
// form runs all:
//
//	lost-answer-isr-expansion  *issue 13 anomaly 1: A's ISR expansion is committed,
//	                            the answer lost, A cut from the quorum; A must not
//	                            acknowledge what the new leader K lacks
//	gossip-cut-controller      *anomaly 2: the controller's gossip cut from all;
//	                            nobody may be fenced, writes must go on
//	ring-cut                   *anomaly 3: the controller and a leader cannot reach
//	                            each other, the third node reaches both; the leader
//	                            must be replaced within its session
//	isolate-leader             *a leader loses every link
//	isolate-controller          the controller loses every link
//	leader-cut-from-followers   a leader reaches clients but no peer
//	followers-cut-from-leader   followers cannot fetch (Kafka port only)
//	raft-port-cut               the controller's raft port cut from both voters
//	one-way-leader-out          everything a leader sends its followers dropped
//	one-way-controller-in       everything sent to the controller dropped
//	dropped-fetch-answers       followers' fetches arrive, the answers do not
//	dropped-controller-answers *a leader's requests to the controller arrive, the
//	                            answers do not, while a follower stops fetching
//	pause-leader               *SIGSTOP of a leader for longer than the session
//	kill-leader                *kill -9 of a leader, restarted at the heal
//	nemesis                    *random faults of all the kinds above, seeded
//
// Each scenario prints one summary line: records acknowledged, lost,
// duplicated, the longest time a partition acknowledged nothing while the
// producer was trying, and the time to full ISRs after the heal.
//
// Run it as root (network namespaces and iptables need it; the tests skip,
// saying why, otherwise, or when iptables is missing: apt-get install -y
// iptables):
//
//	go test ./chaos                                     # short form, CI
//	SLUICE_CHAOS=long go test ./chaos -timeout 60m -v   # every scenario, longer faults
//
// Environment:
//
//	SLUICE_CHAOS=long          the long form: every scenario, faults of 15 s,
//	                           a 5-minute nemesis
//	SLUICE_CHAOS=skip          skip the suite (scripts/test-all.sh sets it for
//	                           its go test ./... step and runs the suite as its
//	                           own step)
//	SLUICE_CHAOS_SCENARIOS     a comma list of scenario names, or "all": run
//	                           exactly those, known failures included
//	SLUICE_CHAOS_SEED          the nemesis's seed (default 1 in the short form,
//	                           the clock in the long form; printed either way)
//	SLUICE_CHAOS_BIN           a prebuilt sluice binary to test instead of
//	                           building ./cmd/sluice
//	SLUICE_CHAOS_CLIENT_LOG    info or debug: write the workloads' franz-go
//	                           logs to <scenario dir>/{producer,txn}-client.log
//	SLUICE_CHAOS_LOG_LEVEL     the nodes' --log-level (debug shows ISR proposals)
//	SLUICE_CHAOS_LOGDIR        keep each scenario's node logs and data in
//	                           <dir>/<scenario> instead of a temporary directory
//
// The short form skips the scenarios listed in knownFailing
// (scenarios_test.go): a scenario that reproduces a known bug waits there,
// with how it fails, until its fix lands, so that CI stays green while the
// scenario is in the repository. None is listed today; the first three
// scenarios failed on 806aeba, before issue 13's fixes.
//
// Namespaces, veths and the bridge are named after the test process's pid
// (chaos-<pid><letter>-<n>, chv..., chb...), removed in t.Cleanup even on
// failure; a run that was killed leaves them behind, and the next run
// removes those whose pid no longer runs.
package chaos
