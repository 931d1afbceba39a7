#!/usr/bin/python3
"""vhost-user message-sequence fuzzer: connects to a live vdpa-testpmd
(emu=cx7) as a frontend many times, each connection a random sequence of
messages, sizes and fds; checks only that the host stays alive, answers
within a deadline, releases what it was sent, and serves a correct frontend
after. See doc/testing.md.

  fuzz_vhost_seq.py --app VDPA_TESTPMD [--seed N ...] [--sequences N | --seconds S]
  fuzz_vhost_seq.py --app VDPA_TESTPMD --replay RECORD [--only INDEX]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vhost_seq.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
