package compat

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's Java tools over SASL_SSL with SCRAM-SHA-512 and the authorizer on
// (issue 19, acceptance 2; the broker is security_test.go's).
//
// kafka-scram-users: the admin (SASL/PLAIN, a super user) creates alice's
// SCRAM-SHA-512 credential with kafka-configs.sh, describes it, alice logs
// in (kafka-topics.sh --list as alice), the admin deletes the credential
// and alice's next login fails with SaslAuthenticationException.
//
// kafka-acls: kafka-acls.sh --add/--list/--remove with a literal topic ACL,
// a prefixed topic ACL and a literal group ACL, each output line as
// Kafka's AclCommand prints it; kafka-console-producer.sh as alice gets
// TopicAuthorizationException without WRITE and produces with it;
// kafka-console-consumer.sh as alice gets GroupAuthorizationException
// without READ on its group and reads every record with it.

// A tool run is about a second on an idle machine; the timeouts leave room
// for a loaded one (14 runs in kafka-acls).
func javaScramUsersRow() row {
	return javaSecureRow("kafka-scram-users", 3*time.Minute, runJavaScramUsers)
}
func javaAclsRow() row { return javaSecureRow("kafka-acls", 5*time.Minute, runJavaAcls) }

func javaSecureRow(name string, timeout time.Duration, check func(ctx context.Context, env *rowEnv, s *secureEnv) error) row {
	st := &secureStart{}
	r := javaRow(name, securityTimeout(timeout), st.run(withKafkaReference(check)))
	r.start = st.start
	return r
}

func runJavaScramUsers(ctx context.Context, env *rowEnv, s *secureEnv) error {
	admin := []string{"--bootstrap-server", s.addr, "--command-config", s.adminProps}
	user := []string{"--entity-type", "users", "--entity-name", secUser}
	completed := "Completed updating config for user " + secUser + "."

	out, err := kafkaTool(ctx, env, nil, "kafka-configs.sh", concat(admin, []string{"--alter", "--add-config",
		fmt.Sprintf("SCRAM-SHA-512=[iterations=%d,password=%s]", secIterations, secUserPassword)}, user)...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, completed); err != nil {
		return fmt.Errorf("kafka-configs.sh --alter --add-config SCRAM-SHA-512: %w", err)
	}

	out, err = kafkaTool(ctx, env, nil, "kafka-configs.sh", concat(admin, []string{"--describe"}, user)...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, fmt.Sprintf("SCRAM credential configs for user-principal '%s' are SCRAM-SHA-512=iterations=%d", secUser, secIterations)); err != nil {
		return fmt.Errorf("kafka-configs.sh --describe after the add: %w", err)
	}

	// alice logs in: kafka-topics.sh --list authenticates, then lists what
	// she may describe: nothing, the admin's topic is not hers (its
	// creation as the super user is the admin's PLAIN login at work).
	if err := createSecureTopic(ctx, s, "sec-admin-only", 1); err != nil {
		return err
	}
	aliceList := []string{"--bootstrap-server", s.addr, "--command-config", s.userProps, "--list"}
	out, err = kafkaTool(ctx, env, nil, "kafka-topics.sh", aliceList...)
	if err != nil {
		return fmt.Errorf("alice's login with her new SCRAM-SHA-512 credential: %w", err)
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("kafka-topics.sh --list as alice, who has no ACL: want no topic, got %q", out)
	}

	out, err = kafkaTool(ctx, env, nil, "kafka-configs.sh", concat(admin, []string{"--alter", "--delete-config", "SCRAM-SHA-512"}, user)...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, completed); err != nil {
		return fmt.Errorf("kafka-configs.sh --alter --delete-config SCRAM-SHA-512: %w", err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-configs.sh", concat(admin, []string{"--describe"}, user)...)
	if err != nil {
		return err
	}
	// Kafka's answer for a named user without credentials is
	// RESOURCE_NOT_FOUND, which the admin client leaves out of users():
	// the tool prints nothing.
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("kafka-configs.sh --describe after the delete: want nothing, got:\n%s", out)
	}

	_, stderr, err := kafkaToolOutput(ctx, env, nil, "kafka-topics.sh", aliceList...)
	if err == nil {
		return fmt.Errorf("alice logged in after her credential was deleted")
	}
	const authFailed = "SaslAuthenticationException: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	if !strings.Contains(stderr, authFailed) {
		return fmt.Errorf("alice's login after the delete: want %q, got %v", authFailed, err)
	}
	return nil
}

func runJavaAcls(ctx context.Context, env *rowEnv, s *secureEnv) error {
	if err := createSecureUser(ctx, s, secUser, secUserPassword); err != nil {
		return err
	}
	const (
		orders = "sec-orders"   // alice's WRITE: a literal ACL
		events = "sec-p-events" // alice's READ: a prefixed ACL on sec-p-
		prefix = "sec-p-"
		group  = "sec-group" // alice's group READ: a literal ACL
	)
	for _, t := range []string{orders, events} {
		if err := createSecureTopic(ctx, s, t, 1); err != nil {
			return err
		}
	}
	acls := []string{"--bootstrap-server", s.addr, "--command-config", s.adminProps}
	pattern := func(typ, name, pat string) string {
		return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", typ, name, pat)
	}
	entry := func(op string) string {
		return fmt.Sprintf("(principal=User:%s, host=*, operation=%s, permissionType=ALLOW)", secUser, op)
	}

	// A producer without WRITE.
	producer := []string{"--bootstrap-server", s.addr, "--producer.config", s.userProps, "--topic", orders}
	_, stderr, _ := kafkaToolOutput(ctx, env, strings.NewReader("refused\n"), "kafka-console-producer.sh", producer...)
	const topicDenied = "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [" + orders + "]"
	if !strings.Contains(stderr, topicDenied) {
		return fmt.Errorf("kafka-console-producer.sh as alice without WRITE: want %q; stderr: %s", topicDenied, toolProblem(stderr))
	}

	// WRITE on the literal topic.
	out, err := kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--add", "--allow-principal", "User:" + secUser,
		"--operation", "Write", "--topic", orders})...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, "Adding ACLs for resource `"+pattern("TOPIC", orders, "LITERAL")+"`:", entry("WRITE")); err != nil {
		return fmt.Errorf("kafka-acls.sh --add --topic %s: %w", orders, err)
	}
	records := []string{"one", "two", "three"}
	if _, err := kafkaTool(ctx, env, strings.NewReader(strings.Join(records, "\n")+"\n"), "kafka-console-producer.sh", producer...); err != nil {
		return fmt.Errorf("kafka-console-producer.sh as alice with WRITE: %w", err)
	}
	if err := wantTopicValues(ctx, s, orders, records); err != nil {
		return err
	}

	// READ on the prefix, none on the group yet.
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--add", "--allow-principal", "User:" + secUser,
		"--operation", "Read", "--topic", prefix, "--resource-pattern-type", "prefixed"})...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, "Adding ACLs for resource `"+pattern("TOPIC", prefix, "PREFIXED")+"`:", entry("READ")); err != nil {
		return fmt.Errorf("kafka-acls.sh --add --topic %s --resource-pattern-type prefixed: %w", prefix, err)
	}
	cl, err := s.adminClient(kgo.DefaultProduceTopic(events))
	if err != nil {
		return err
	}
	for _, v := range records {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			cl.Close()
			return fmt.Errorf("admin producing to %s: %w", events, err)
		}
	}
	cl.Close()
	consumer := []string{"--bootstrap-server", s.addr, "--consumer.config", s.userProps, "--topic", events,
		"--group", group, "--from-beginning", "--max-messages", fmt.Sprint(len(records)), "--timeout-ms", "30000"}
	out, stderr, _ = kafkaToolOutput(ctx, env, nil, "kafka-console-consumer.sh", consumer...)
	const groupDenied = "org.apache.kafka.common.errors.GroupAuthorizationException: Not authorized to access group: " + group
	if !strings.Contains(stderr+out, groupDenied) {
		return fmt.Errorf("kafka-console-consumer.sh as alice without READ on group %s: want %q; stderr: %s", group, groupDenied, toolProblem(stderr))
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--add", "--allow-principal", "User:" + secUser,
		"--operation", "Read", "--group", group})...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, "Adding ACLs for resource `"+pattern("GROUP", group, "LITERAL")+"`:", entry("READ")); err != nil {
		return fmt.Errorf("kafka-acls.sh --add --group %s: %w", group, err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-console-consumer.sh", consumer...)
	if err != nil {
		return fmt.Errorf("kafka-console-consumer.sh as alice with READ on %s* and group %s: %w", prefix, group, err)
	}
	if err := wantExactLines(out, records...); err != nil {
		return fmt.Errorf("kafka-console-consumer.sh as alice: %w", err)
	}

	// --list: each resource's ACLs, by filter and in all.
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--list", "--topic", prefix, "--resource-pattern-type", "prefixed"})...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, "Current ACLs for resource `"+pattern("TOPIC", prefix, "PREFIXED")+"`:", entry("READ")); err != nil {
		return fmt.Errorf("kafka-acls.sh --list --topic %s --resource-pattern-type prefixed: %w", prefix, err)
	}
	// --resource-pattern-type match: every ACL that applies to the topic.
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--list", "--topic", events, "--resource-pattern-type", "match"})...)
	if err != nil {
		return err
	}
	if err := wantExactLines(out, "Current ACLs for resource `"+pattern("TOPIC", prefix, "PREFIXED")+"`:", entry("READ")); err != nil {
		return fmt.Errorf("kafka-acls.sh --list --topic %s --resource-pattern-type match: %w", events, err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--list"})...)
	if err != nil {
		return err
	}
	if err := wantBlocks(out, map[string][]string{
		"Current ACLs for resource `" + pattern("TOPIC", orders, "LITERAL") + "`:":  {entry("WRITE")},
		"Current ACLs for resource `" + pattern("TOPIC", prefix, "PREFIXED") + "`:": {entry("READ")},
		"Current ACLs for resource `" + pattern("GROUP", group, "LITERAL") + "`:":   {entry("READ")},
	}); err != nil {
		return fmt.Errorf("kafka-acls.sh --list: %w", err)
	}

	// --remove WRITE: the producer is refused again.
	if _, err := kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--remove", "--force", "--allow-principal", "User:" + secUser,
		"--operation", "Write", "--topic", orders})...); err != nil {
		return err
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-acls.sh", concat(acls, []string{"--list", "--topic", orders})...)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("kafka-acls.sh --list --topic %s after --remove: want nothing, got %q", orders, out)
	}
	_, stderr, _ = kafkaToolOutput(ctx, env, strings.NewReader("refused again\n"), "kafka-console-producer.sh", producer...)
	if !strings.Contains(stderr, topicDenied) {
		return fmt.Errorf("kafka-console-producer.sh as alice after --remove: want %q; stderr: %s", topicDenied, toolProblem(stderr))
	}
	return wantTopicValues(ctx, s, orders, records)
}

// createSecureUser gives user a SCRAM-SHA-512 credential, as the admin.
func createSecureUser(ctx context.Context, s *secureEnv, user, password string) error {
	cl, err := s.adminClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: user, Mechanism: kadm.ScramSha512, Iterations: secIterations, Password: password,
	}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("creating %s's SCRAM-SHA-512 credential: %w", user, err)
	}
	return waitLogin(ctx, s, user, password)
}

// waitLogin waits until user can log in with password: a credential the
// controller has committed reaches the broker's metadata image (which the
// SASL listener reads) a moment later, as in Kafka.
func waitLogin(ctx context.Context, s *secureEnv, user, password string) error {
	start := time.Now()
	var err error
	for time.Since(start) < 20*time.Second && ctx.Err() == nil {
		var cl *kgo.Client
		if cl, err = s.scramClient(user, password); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = cl.Ping(pctx)
		cancel()
		cl.Close()
		if err == nil {
			if d := time.Since(start); d > time.Second {
				s.logf("%s's first login took %s after the credential was created", user, d.Round(time.Millisecond))
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s cannot log in with SCRAM-SHA-512 %s after the credential was created: %v", user, time.Since(start).Round(time.Millisecond), err)
}

// createSecureTopic creates topic as the admin.
func createSecureTopic(ctx context.Context, s *secureEnv, topic string, partitions int32) error {
	cl, err := s.adminClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s as the admin: %w", topic, err)
	}
	return nil
}

// wantTopicValues reads topic's single partition as the admin and wants
// exactly values, in order.
func wantTopicValues(ctx context.Context, s *secureEnv, topic string, values []string) error {
	cl, err := s.adminClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < len(values) && rctx.Err() == nil {
		fs := cl.PollFetches(rctx)
		for _, e := range fs.Errors() {
			if rctx.Err() == nil {
				return fmt.Errorf("reading %s as the admin: %w", topic, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, "\n") != strings.Join(values, "\n") {
		return fmt.Errorf("topic %s holds %q, want %q", topic, got, values)
	}
	// Nothing more than values: the end offset is their count.
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != int64(len(values)) {
		return fmt.Errorf("topic %s's end offset: %+v, want %d", topic, o, len(values))
	}
	return nil
}

// wantExactLines wants out's non-blank lines, spaces and tabs trimmed, to
// be lines exactly.
func wantExactLines(out string, lines ...string) error {
	got := nonBlankLines(out)
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		return fmt.Errorf("want lines\n%s\ngot\n%s", strings.Join(lines, "\n"), out)
	}
	return nil
}

// wantBlocks wants out to be exactly the given blocks in any order: a
// header line, then its entry lines in any order (AclCommand prints a
// HashMap of resources, each with a HashSet of entries).
func wantBlocks(out string, blocks map[string][]string) error {
	got := map[string][]string{}
	var cur string
	for _, l := range nonBlankLines(out) {
		if _, ok := blocks[l]; ok || strings.HasPrefix(l, "Current ACLs for resource") {
			cur = l
			got[cur] = []string{}
			continue
		}
		got[cur] = append(got[cur], l)
	}
	if len(got) != len(blocks) {
		return fmt.Errorf("want %d resources, got %d:\n%s", len(blocks), len(got), out)
	}
	for h, want := range blocks {
		g, ok := got[h]
		if !ok {
			return fmt.Errorf("want %q in:\n%s", h, out)
		}
		if !sameSet(g, want) {
			return fmt.Errorf("%s: want %q, got %q", h, want, g)
		}
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		if n[s]--; n[s] < 0 {
			return false
		}
	}
	return true
}

func nonBlankLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	return got
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
