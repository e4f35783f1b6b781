"""confluent-kafka (librdkafka) for Python producing with every codec.

Run by compat/librdkafka_codecs_test.go, with Debian's python3 and its
python3-confluent-kafka or with a venv holding the newest wheel from PyPI
(which bundles its own librdkafka):

    python3 codecs_check.py --bootstrap HOST:PORT --topic-prefix compat-codec-py- \
        --codecs none,gzip,snappy,lz4,zstd --records 2000

For each codec, one producer with compression.type set to it writes the
records (one line of text each, as the Go row builds them) to partition 0 of
TOPIC_PREFIX + codec, which the row has created, and waits for every
delivery report. The row then reads the topic's segments on disk to see
whether the batches really are compressed: librdkafka compresses or not
without telling the application, so nothing here can check it.

Every failed check prints one line starting with "FAIL:" and exits 1. On
success the last line is "RESULT " and a JSON object the Go row checks.
"""

import argparse
import json

import confluent_kafka
from confluent_kafka import Producer

from checks import TIMEOUT, check, run


def record(i):
    # Must match codecRecord in librdkafka_codecs_test.go.
    return b"record %06d of the codec check: the quick brown fox jumps over the lazy dog" % i


def produce(args, codec):
    topic = args.topic_prefix + codec
    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        "compression.type": codec,
        "acks": "all",
        # Batches of many records, as a real producer makes them, so that
        # a codec has something to compress.
        "linger.ms": 50,
    })
    delivered, failed = [0], []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            delivered[0] += 1

    for i in range(args.records):
        producer.produce(topic, value=record(i), partition=0, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(TIMEOUT)
    check(left == 0, "%s: %d records still undelivered after %.0fs" % (codec, left, TIMEOUT))
    check(not failed, "%s: delivery failed: %s" % (codec, failed[0] if failed else ""))
    check(delivered[0] == args.records,
          "%s: %d delivery reports, want %d" % (codec, delivered[0], args.records))
    return delivered[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic-prefix", required=True)
    ap.add_argument("--codecs", required=True)
    ap.add_argument("--records", type=int, required=True)
    args = ap.parse_args()

    delivered = {}
    for codec in args.codecs.split(","):
        delivered[codec] = produce(args, codec)
    # version() is a (string, int) tuple in the 1.x binding and a plain
    # string in recent wheels; libversion() is a tuple in both.
    version = confluent_kafka.version()
    if isinstance(version, tuple):
        version = version[0]
    print("RESULT " + json.dumps({
        "version": version,
        "librdkafka": confluent_kafka.libversion()[0],
        "delivered": delivered,
    }), flush=True)


if __name__ == "__main__":
    run(main)
