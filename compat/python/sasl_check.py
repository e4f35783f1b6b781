"""confluent-kafka (librdkafka) over SASL_SSL with SCRAM-SHA-512 against a
sluice broker with the authorizer on.

Run by compat/python_security_test.go (the py-sasl-ssl row) with the
confluent-kafka wheel's python (librdkafka 2.16.0 bundled):

    python sasl_check.py --bootstrap HOST:PORT --ca CA.pem --user U \
        --password P --topic T --group G --records N

The user may WRITE and READ the topic and READ the group (ACLs the row
creates). A Producer writes N keyed records (every delivery report must
succeed), a Consumer in the group subscribes and must read every one back
with its key, then commits; then a Producer with a wrong password must see
librdkafka's authentication error (error_cb, _AUTHENTICATION) and no
metadata. The last line is "RESULT {json}".
"""

import argparse
import json
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from checks import CheckFailed, check, run


def first(v):
    """A version string: confluent-kafka 2.16 returns version() as a string,
    older releases (and libversion()) as a (string, int) tuple."""
    return v if isinstance(v, str) else v[0]


def conf(args, password):
    return {
        "bootstrap.servers": args.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": args.user,
        "sasl.password": password,
        "ssl.ca.location": args.ca,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--records", type=int, required=True)
    args = p.parse_args()
    seconds = {}

    # Produce.
    start = time.monotonic()
    errors = []
    delivered = {}

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered[msg.value().decode()] = msg.key().decode()

    producer = Producer(dict(conf(args, args.password), **{"acks": "all", "enable.idempotence": True}))
    want = {}
    for i in range(args.records):
        key, value = "k%02d" % (i % 17), "sasl-value-%05d" % i
        want[value] = key
        producer.produce(args.topic, key=key, value=value, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(30)
    check(left == 0, "%d records still undelivered after 30s" % left)
    check(not errors, "delivery errors: %s" % errors[:3])
    check(delivered == want, "delivered %d of %d records" % (len(delivered), len(want)))
    seconds["produce"] = round(time.monotonic() - start, 2)

    # Consume in the group.
    start = time.monotonic()
    consumer = Consumer(dict(conf(args, args.password), **{
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }))
    consumer.subscribe([args.topic])
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < len(want) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error() is not None:
            raise CheckFailed("consumer error: %s" % msg.error())
        value = msg.value().decode()
        check(value in want and value not in got, "unexpected or repeated record %r" % value)
        check(msg.key().decode() == want[value], "record %r has key %r, want %r" % (value, msg.key(), want[value]))
        got[value] = True
    check(len(got) == len(want), "consumer read %d of %d records in 30s" % (len(got), len(want)))
    committed = consumer.commit(asynchronous=False)
    check(all(tp.error is None for tp in committed), "commit errors: %s" % committed)
    consumer.close()
    seconds["consume"] = round(time.monotonic() - start, 2)

    # A wrong password.
    start = time.monotonic()
    auth_errors = []

    def on_error(err):
        if err.code() == KafkaError._AUTHENTICATION:
            auth_errors.append(err.str())

    wrong = Producer(dict(conf(args, "not-" + args.password), **{"error_cb": on_error}))
    metadata = None
    try:
        metadata = wrong.list_topics(args.topic, timeout=3)
    except KafkaException:
        pass
    wrong.poll(0)
    deadline = time.monotonic() + 20
    while not auth_errors and time.monotonic() < deadline:
        wrong.poll(0.2)
    check(metadata is None, "a wrong password read metadata: %s" % metadata)
    check(auth_errors, "a wrong password brought no _AUTHENTICATION error in 20s")
    message = auth_errors[0]
    check("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" in message,
          "a wrong password's error: %r" % message)
    seconds["wrong_password"] = round(time.monotonic() - start, 2)

    print("RESULT " + json.dumps({
        "version": first(confluent_kafka.version()),
        "librdkafka": first(confluent_kafka.libversion()),
        "produced": len(delivered),
        "consumed": len(got),
        "auth_error": message,
        "seconds": seconds,
    }), flush=True)


if __name__ == "__main__":
    run(main)
