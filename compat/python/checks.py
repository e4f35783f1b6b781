"""What the compat check scripts share: a failed check, polling for a
condition, and the FAIL line and exit status the Go rows read.

Imported by confluent_check.py and group_check.py, which Python finds next
to them because the rows run each script by its path.
"""

import sys
import time

from confluent_kafka import KafkaException

TIMEOUT = 30.0


class CheckFailed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def wait_for(what, fn, timeout=TIMEOUT):
    """Calls fn until it returns None (done) or timeout; fn returns the
    reason it is not done yet, or raises CheckFailed for a definite wrong
    answer."""
    deadline = time.monotonic() + timeout
    while True:
        reason = fn()
        if reason is None:
            return
        if time.monotonic() > deadline:
            raise CheckFailed("%s: still %s after %.0fs" % (what, reason, timeout))
        time.sleep(0.1)


def run(main):
    """Runs main; a failed check or an unexpected client error prints one
    line starting with "FAIL:" and exits 1."""
    try:
        main()
    except CheckFailed as e:
        print("FAIL: %s" % e, flush=True)
        sys.exit(1)
    except KafkaException as e:
        print("FAIL: unexpected client error: %s" % e, flush=True)
        sys.exit(1)
