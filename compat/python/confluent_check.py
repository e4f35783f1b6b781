"""confluent-kafka (librdkafka) for Python against one sluice broker.

Run by compat/python_confluent_test.go with Debian's python3 and its
python3-confluent-kafka package:

    /usr/bin/python3 confluent_check.py --bootstrap HOST:PORT --broker-id 1 \
        --topic compat-python --partitions 4 --records 2000

Steps, each checked on what the client returns, not on exit codes:
AdminClient create_topics (and a second create that must fail with
TOPIC_ALREADY_EXISTS), metadata (leader, replicas, ISR of every partition),
an idempotent producer (acks=all, enable.idempotence=true) writing keyed
records with headers and explicit timestamps, a consumer reading them back
with assign() at explicit offsets, get_watermark_offsets, offsets_for_times,
describe_configs for the topic and the broker, delete_topics.

The consumer uses no group: confluent-kafka refuses a Consumer without
group.id ("group.id must be set"), so a dummy one is set, with
enable.auto.commit off and no commit or subscribe call. librdkafka then
starts its group handler, which asks for the group's coordinator only if the
broker advertises FindCoordinator in ApiVersions; with assign() and no
commits it never joins the group, so the row needs no group coordinator.

Every failed check prints one line starting with "FAIL:" and exits 1. On
success the last line is "RESULT " and a JSON object the Go row checks.
"""

import argparse
import json
import time

import confluent_kafka
from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from checks import TIMEOUT, CheckFailed, check, run, wait_for

# Every distinct key goes to one partition; enough keys that every
# partition gets some.
KEYS = 97
# The topic config set at creation and checked by describe_configs.
RETENTION_MS = "3600000"


def record(i, base_ts):
    key = b"key-%03d" % (i % KEYS)
    value = b"value-%06d" % i
    headers = [("seq", str(i).encode()), ("origin", b"compat-python"), ("empty", b"")]
    return key, value, headers, base_ts + i


def check_metadata(admin, args):
    def ready():
        md = admin.list_topics(topic=args.topic, timeout=10)
        brokers = sorted(md.brokers)
        check(brokers == [args.broker_id],
              "metadata: brokers %s, want [%d]" % (brokers, args.broker_id))
        check(md.controller_id == args.broker_id,
              "metadata: controller %d, want %d" % (md.controller_id, args.broker_id))
        t = md.topics.get(args.topic)
        if t is None:
            return "topic %s missing" % args.topic
        if t.error is not None:
            return "topic error %s" % t.error
        parts = sorted(t.partitions)
        if parts != list(range(args.partitions)):
            return "partitions %s" % parts
        for p in parts:
            pm = t.partitions[p]
            if pm.leader < 0:
                return "partition %d without a leader" % p
            # A single node leads everything: any other leader is wrong,
            # not a leader still being elected.
            check(pm.leader == args.broker_id,
                  "metadata: %s partition %d leader %d, want %d" % (args.topic, p, pm.leader, args.broker_id))
            check(list(pm.replicas) == [args.broker_id],
                  "metadata: %s partition %d replicas %s, want [%d]" % (args.topic, p, list(pm.replicas), args.broker_id))
            check(list(pm.isrs) == [args.broker_id],
                  "metadata: %s partition %d isr %s, want [%d]" % (args.topic, p, list(pm.isrs), args.broker_id))
        return None
    wait_for("metadata for %s" % args.topic, ready)


def create_topic(admin, args):
    nt = NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1,
                  config={"retention.ms": RETENTION_MS})
    fut = admin.create_topics([nt], operation_timeout=TIMEOUT)[args.topic]
    try:
        res = fut.result(TIMEOUT)
    except KafkaException as e:
        raise CheckFailed("create_topics %s: %s" % (args.topic, e.args[0]))
    check(res is None, "create_topics %s: result %r, want None" % (args.topic, res))

    again = admin.create_topics([NewTopic(args.topic, num_partitions=1, replication_factor=1)])[args.topic]
    try:
        again.result(TIMEOUT)
        raise CheckFailed("create_topics %s a second time succeeded, want TOPIC_ALREADY_EXISTS" % args.topic)
    except KafkaException as e:
        code = e.args[0].code()
        check(code == KafkaError.TOPIC_ALREADY_EXISTS,
              "create_topics %s a second time: %s, want TOPIC_ALREADY_EXISTS" % (args.topic, e.args[0]))


def produce(args, base_ts):
    """Returns {seq: (partition, offset)} from the delivery reports."""
    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": int(TIMEOUT * 1000),
    })
    delivered = {}
    errors = []

    # Delivery reports carry no headers; the record number travels in a
    # default argument.
    def on_delivery(err, msg, seq):
        if err is not None:
            errors.append("record %d: %s" % (seq, err))
        else:
            delivered[seq] = (msg.partition(), msg.offset())

    for i in range(args.records):
        key, value, headers, ts = record(i, base_ts)
        while True:
            try:
                p.produce(args.topic, value=value, key=key, headers=headers,
                          timestamp=ts,
                          on_delivery=lambda err, msg, seq=i: on_delivery(err, msg, seq))
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(TIMEOUT)
    check(not errors, "produce: %d delivery errors, first: %s" % (len(errors), errors[0] if errors else ""))
    check(left == 0, "produce: %d records not delivered within %.0fs" % (left, TIMEOUT))
    check(len(delivered) == args.records,
          "produce: %d delivery reports, want %d" % (len(delivered), args.records))
    return delivered


def consumer(args):
    return Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "compat-python-unused",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })


def consume_all(args, delivered, base_ts):
    """Reads every partition from offset 0 with assign() and checks every
    record against what was produced and where it was delivered."""
    c = consumer(args)
    try:
        c.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
        want_count = {}
        for part, _ in delivered.values():
            want_count[part] = want_count.get(part, 0) + 1
        check(len(want_count) == args.partitions,
              "produce: records landed in %d partitions, want all %d" % (len(want_count), args.partitions))
        next_offset = {p: 0 for p in range(args.partitions)}
        last_seq = {p: -1 for p in range(args.partitions)}
        key_part = {}
        seen = set()
        at_eof = set()
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < args.records or len(at_eof) < args.partitions:
            check(time.monotonic() < deadline,
                  "consume: %d of %d records after %.0fs" % (len(seen), args.records, TIMEOUT))
            msg = c.poll(1.0)
            if msg is None:
                continue
            part, off = msg.partition(), msg.offset()
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if next_offset[part] == want_count[part]:
                        at_eof.add(part)
                    continue
                raise CheckFailed("consume: %s [%d]: %s" % (msg.topic(), part, msg.error()))
            at_eof.discard(part)
            check(msg.topic() == args.topic, "consume: record from topic %s" % msg.topic())
            headers = msg.headers() or []
            seq_h = dict(headers).get("seq")
            check(seq_h is not None, "consume: partition %d offset %d: no seq header: %r" % (part, off, headers))
            seq = int(seq_h)
            key, value, want_headers, ts = record(seq, base_ts)
            where = "consume: partition %d offset %d (record %d)" % (part, off, seq)
            check(off == next_offset[part], "%s: want offset %d" % (where, next_offset[part]))
            check(seq not in seen, "%s: read twice" % where)
            check(seq > last_seq[part], "%s: after record %d, out of production order" % (where, last_seq[part]))
            check(delivered[seq] == (part, off),
                  "%s: delivery report said partition %d offset %d" % ((where,) + delivered[seq]))
            check(msg.key() == key, "%s: key %r, want %r" % (where, msg.key(), key))
            check(msg.value() == value, "%s: value %r, want %r" % (where, msg.value(), value))
            got_headers = [(k, v if v is not None else b"") for k, v in headers]
            check(got_headers == want_headers, "%s: headers %r, want %r" % (where, got_headers, want_headers))
            ts_type, got_ts = msg.timestamp()
            check(ts_type == confluent_kafka.TIMESTAMP_CREATE_TIME and got_ts == ts,
                  "%s: timestamp (%d, %d), want CreateTime %d" % (where, ts_type, got_ts, ts))
            check(key_part.setdefault(key, part) == part,
                  "%s: key %r also in partition %d" % (where, key, key_part[key]))
            next_offset[part] += 1
            last_seq[part] = seq
            seen.add(seq)
        return want_count
    finally:
        c.close()


def consume_from(args, delivered, part, offset):
    """assign() at an explicit offset in the middle of a partition: the
    first record read is the one delivered at that offset."""
    want = [s for s, (p, o) in delivered.items() if p == part and o == offset]
    check(len(want) == 1, "no record was delivered at partition %d offset %d" % (part, offset))
    c = consumer(args)
    try:
        c.assign([TopicPartition(args.topic, part, offset)])
        deadline = time.monotonic() + TIMEOUT
        while True:
            check(time.monotonic() < deadline, "assign at partition %d offset %d: nothing read" % (part, offset))
            msg = c.poll(1.0)
            if msg is None or (msg.error() is not None and msg.error().code() == KafkaError._PARTITION_EOF):
                continue
            check(msg.error() is None, "assign at partition %d offset %d: %s" % (part, offset, msg.error()))
            got = (msg.partition(), msg.offset(), int(dict(msg.headers())["seq"]))
            check(got == (part, offset, want[0]),
                  "assign at partition %d offset %d: read partition %d offset %d record %d, want record %d" % (
                      (part, offset) + got + (want[0],)))
            return
    finally:
        c.close()


def list_offsets(args, delivered, want_count, base_ts):
    c = consumer(args)
    try:
        for p in range(args.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(args.topic, p), timeout=TIMEOUT)
            check((lo, hi) == (0, want_count[p]),
                  "get_watermark_offsets partition %d: (%d, %d), want (0, %d)" % (p, lo, hi, want_count[p]))

        # For each partition, a record in the middle: its timestamp must
        # answer its offset, one ms later the next record's offset (the
        # timestamps rise with the record number), and after the last
        # record -1 (the end).
        by_part = {}
        for seq, (p, off) in delivered.items():
            by_part.setdefault(p, []).append((off, seq))
        queries, wants = [], []
        for p, recs in sorted(by_part.items()):
            recs.sort()
            off, seq = recs[len(recs) // 2]
            ts = record(seq, base_ts)[3]
            queries.append(TopicPartition(args.topic, p, ts))
            wants.append(("timestamp of offset %d" % off, off))
        for p, recs in sorted(by_part.items()):
            off, seq = recs[-1]
            queries.append(TopicPartition(args.topic, p, record(seq, base_ts)[3] + 1))
            wants.append(("after the last record", -1))
        # offsets_for_times takes each partition once per call.
        for i in range(0, len(queries), args.partitions):
            got = c.offsets_for_times(queries[i:i + args.partitions], timeout=TIMEOUT)
            for q, g, (what, want) in zip(queries[i:i + args.partitions], got, wants[i:i + args.partitions]):
                check(g.error is None, "offsets_for_times partition %d %s: %s" % (q.partition, what, g.error))
                check(g.partition == q.partition and g.offset == want,
                      "offsets_for_times partition %d %s: partition %d offset %d, want %d" % (
                          q.partition, what, g.partition, g.offset, want))
    finally:
        c.close()


def describe_configs(admin, args):
    res = ConfigResource(ConfigResource.Type.TOPIC, args.topic)
    try:
        entries = admin.describe_configs([res])[res].result(TIMEOUT)
    except KafkaException as e:
        raise CheckFailed("describe_configs topic %s: %s" % (args.topic, e.args[0]))
    ret = entries.get("retention.ms")
    check(ret is not None and ret.value == RETENTION_MS and not ret.is_default
          and ret.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
          "describe_configs topic %s: retention.ms (value, source) %s, want (%s, DYNAMIC_TOPIC_CONFIG)" % (
              args.topic, ret and (ret.value, ret.source), RETENTION_MS))
    cp = entries.get("cleanup.policy")
    check(cp is not None and cp.value == "delete",
          "describe_configs topic %s: cleanup.policy %s, want delete" % (args.topic, cp and cp.value))

    res = ConfigResource(ConfigResource.Type.BROKER, str(args.broker_id))
    try:
        entries = admin.describe_configs([res])[res].result(TIMEOUT)
    except KafkaException as e:
        raise CheckFailed("describe_configs broker %d: %s" % (args.broker_id, e.args[0]))
    nid = entries.get("node.id") or entries.get("broker.id")
    check(nid is not None and nid.value == str(args.broker_id),
          "describe_configs broker %d: node.id %s, want %d" % (args.broker_id, nid and nid.value, args.broker_id))
    return len(entries)


def delete_topic(admin, args):
    try:
        res = admin.delete_topics([args.topic], operation_timeout=TIMEOUT)[args.topic].result(TIMEOUT)
    except KafkaException as e:
        raise CheckFailed("delete_topics %s: %s" % (args.topic, e.args[0]))
    check(res is None, "delete_topics %s: result %r, want None" % (args.topic, res))

    # Listing all topics, not the one topic: asking for it by name would
    # create it again (auto.create.topics.enable).
    def gone():
        if args.topic in admin.list_topics(timeout=10).topics:
            return "listed"
        return None
    wait_for("deleted topic %s" % args.topic, gone)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--broker-id", type=int, required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--records", type=int, required=True)
    args = ap.parse_args()

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    base_ts = int(time.time() * 1000) - 3600 * 1000
    steps = {}

    def step(name, fn, *a):
        t = time.monotonic()
        out = fn(*a)
        steps[name] = round(time.monotonic() - t, 2)
        return out

    step("create", create_topic, admin, args)
    step("metadata", check_metadata, admin, args)
    delivered = step("produce", produce, args, base_ts)
    want_count = step("consume", consume_all, args, delivered, base_ts)
    mid_part = max(want_count, key=want_count.get)
    step("assign-offset", consume_from, args, delivered, mid_part, want_count[mid_part] // 2)
    step("list-offsets", list_offsets, args, delivered, want_count, base_ts)
    n_broker_configs = step("configs", describe_configs, admin, args)
    step("delete", delete_topic, admin, args)

    print("RESULT " + json.dumps({
        "version": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "records": len(delivered),
        "per_partition": {str(p): n for p, n in sorted(want_count.items())},
        "broker_configs": n_broker_configs,
        "seconds": steps,
    }, sort_keys=True))


if __name__ == "__main__":
    run(main)
