"""The vhost-user message-sequence fuzzer (tools/fuzz_vhost_seq.py): random
message orders, sizes and fds against a live vdpa-testpmd.

  gen     the sequences, from (seed, index)
  send    one sequence on one connection, its fds made at send time
  target  the host under test and its checks
  run     runs, failure reports, records and replays"""
