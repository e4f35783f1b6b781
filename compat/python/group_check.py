"""A confluent-kafka (librdkafka) consumer group that commits, restarts and
resumes, against one sluice broker.

Run twice by compat/python_group_test.go with Debian's python3 and its
python3-confluent-kafka package, each run a new process, as a restarted
consumer is:

    /usr/bin/python3 group_check.py --phase commit --bootstrap HOST:PORT \
        --topic T --group G --per-partition 60 --commit 7,30,55
    /usr/bin/python3 group_check.py --phase resume --bootstrap HOST:PORT \
        --topic T --group G --per-partition 60 --commit 7,30,55

--commit gives one offset per partition (so also the partition count).

commit: creates the topic with AdminClient, produces --per-partition
records to each partition (value "pg-P-O" for partition P, offset O),
subscribes a consumer in the group (enable.auto.commit off) and reads until
it has seen, in every partition P, the record before the commit point; it
commits that record with commit(message=..., asynchronous=False), which
commits its offset + 1. Every record read is checked. After the commits,
committed() must answer exactly the commit points; then the consumer closes
(no commit on close without auto commit).

resume: a new consumer in the same group with auto.offset.reset=error, so
that a partition without a committed offset shows up as an error instead
of a silent reset, reads to the end of every partition: each partition's
first record must be the one at its commit point and the rest follow
without gaps. It then commits its position with commit(asynchronous=False),
checks committed() answers the ends, closes, and waits for
AdminClient.list_groups to report the group Empty.

Every failed check prints one line starting with "FAIL:" and exits 1. On
success the last line is "RESULT " and a JSON object the Go row checks.
"""

import argparse
import json
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from checks import TIMEOUT, CheckFailed, check, run, wait_for


def value(p, o):
    return b"pg-%d-%d" % (p, o)


def create_and_produce(args, partitions):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    fut = admin.create_topics([NewTopic(args.topic, num_partitions=partitions, replication_factor=1)],
                              operation_timeout=TIMEOUT)[args.topic]
    try:
        fut.result(TIMEOUT)
    except KafkaException as e:
        raise CheckFailed("create_topics %s: %s" % (args.topic, e.args[0]))

    def ready():
        t = admin.list_topics(topic=args.topic, timeout=10).topics.get(args.topic)
        if t is None or t.error is not None or len(t.partitions) != partitions:
            return "not in metadata with %d partitions" % partitions
        if any(pm.leader < 0 for pm in t.partitions.values()):
            return "a partition without a leader"
        return None
    wait_for("metadata for %s" % args.topic, ready)

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    delivered = {}

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered[(msg.partition(), msg.offset())] = msg.value()

    for o in range(args.per_partition):
        for p in range(partitions):
            producer.produce(args.topic, value=value(p, o), partition=p, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(TIMEOUT)
    check(not errors, "produce: %d delivery errors, first: %s" % (len(errors), errors[0] if errors else ""))
    check(left == 0, "produce: %d records not delivered" % left)
    for p in range(partitions):
        for o in range(args.per_partition):
            check(delivered.get((p, o)) == value(p, o),
                  "produce: partition %d offset %d holds %r, want %r" % (p, o, delivered.get((p, o)), value(p, o)))


def group_consumer(args, reset):
    return Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": "compat-python-group-" + args.phase,
        "enable.auto.commit": False,
        "auto.offset.reset": reset,
    })


def read_record(c, next_offset, what):
    """Polls one record and checks it is the next of its partition; returns
    it, or None if the poll timed out."""
    msg = c.poll(1.0)
    if msg is None:
        return None
    if msg.error() is not None:
        raise CheckFailed("%s: %s [%d]: %s" % (what, msg.topic(), msg.partition(), msg.error()))
    p, o = msg.partition(), msg.offset()
    check(p in next_offset, "%s: record from partition %d" % (what, p))
    check(o == next_offset[p], "%s: partition %d offset %d, want offset %d" % (what, p, o, next_offset[p]))
    check(msg.value() == value(p, o), "%s: partition %d offset %d value %r, want %r" % (what, p, o, msg.value(), value(p, o)))
    next_offset[p] = o + 1
    return msg


def committed(c, args, partitions):
    got = c.committed([TopicPartition(args.topic, p) for p in range(partitions)], timeout=TIMEOUT)
    for tp in got:
        check(tp.error is None, "committed partition %d: %s" % (tp.partition, tp.error))
    return {tp.partition: tp.offset for tp in got}


def phase_commit(args, commit):
    partitions = len(commit)
    create_and_produce(args, partitions)
    c = group_consumer(args, "earliest")
    try:
        c.subscribe([args.topic])
        next_offset = {p: 0 for p in range(partitions)}
        done = set()
        deadline = time.monotonic() + TIMEOUT
        while len(done) < partitions:
            check(time.monotonic() < deadline,
                  "commit phase: commit points reached in partitions %s after %.0fs, want all %d" % (sorted(done), TIMEOUT, partitions))
            msg = read_record(c, next_offset, "commit phase")
            if msg is None or msg.offset() != commit[msg.partition()] - 1:
                continue
            res = c.commit(message=msg, asynchronous=False)
            for tp in res or []:
                check(tp.error is None, "commit of partition %d offset %d: %s" % (tp.partition, tp.offset, tp.error))
            done.add(msg.partition())
        got = committed(c, args, partitions)
        want = {p: commit[p] for p in range(partitions)}
        check(got == want, "committed() after the commits: %s, want %s" % (got, want))
        return {"committed": {str(p): o for p, o in sorted(got.items())}}
    finally:
        c.close()


def phase_resume(args, commit):
    partitions = len(commit)
    c = group_consumer(args, "error")
    started = {}
    count = 0
    try:
        c.subscribe([args.topic])
        next_offset = {p: commit[p] for p in range(partitions)}
        deadline = time.monotonic() + TIMEOUT
        while any(o < args.per_partition for o in next_offset.values()):
            check(time.monotonic() < deadline,
                  "resume phase: at offsets %s after %.0fs, want %d in every partition" % (next_offset, TIMEOUT, args.per_partition))
            msg = read_record(c, next_offset, "resume phase (first records must be at the committed offsets %s)" % commit)
            if msg is None:
                continue
            started.setdefault(msg.partition(), msg.offset())
            count += 1
        res = c.commit(asynchronous=False)
        for tp in res or []:
            check(tp.error is None, "commit of partition %d: %s" % (tp.partition, tp.error))
        got = committed(c, args, partitions)
        want = {p: args.per_partition for p in range(partitions)}
        check(got == want, "committed() after reading to the end: %s, want %s" % (got, want))
    finally:
        c.close()

    admin = AdminClient({"bootstrap.servers": args.bootstrap})

    def empty():
        groups = admin.list_groups(group=args.group, timeout=10)
        check(len(groups) == 1 and groups[0].id == args.group,
              "list_groups(%s): %s" % (args.group, [g.id for g in groups]))
        g = groups[0]
        if g.error is not None and g.error.code() != KafkaError.NO_ERROR:
            raise CheckFailed("list_groups(%s): %s" % (args.group, g.error))
        if g.state != "Empty" or g.members:
            return "%s with %d members" % (g.state, len(g.members))
        return None
    wait_for("group %s after close" % args.group, empty)
    return {
        "started": {str(p): o for p, o in sorted(started.items())},
        "records": count,
        "committed": {str(p): o for p, o in sorted(got.items())},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase", choices=["commit", "resume"], required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--per-partition", type=int, required=True)
    ap.add_argument("--commit", required=True, help="comma-separated commit offset of each partition")
    args = ap.parse_args()
    commit = [int(o) for o in args.commit.split(",")]
    for p, o in enumerate(commit):
        check(0 < o < args.per_partition, "--commit: partition %d offset %d not inside (0, %d)" % (p, o, args.per_partition))

    start = time.monotonic()
    if args.phase == "commit":
        result = phase_commit(args, commit)
    else:
        result = phase_resume(args, commit)
    result["phase"] = args.phase
    result["version"] = confluent_kafka.version()[0]
    result["seconds"] = round(time.monotonic() - start, 2)
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)


if __name__ == "__main__":
    run(main)
