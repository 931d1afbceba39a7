"""The vhost-user message-sequence fuzzer's runs: sequences from seeds
(for a count, or for a time) or from a record, against one live host,
each followed by the host's checks; at the end a correct frontend is
served. A failure prints the seed, the sequence index and the sequences
sent, and writes them to a record that --replay sends again."""
import argparse
import json
import os
import sys
import time

from harness.proc import Workdir

from . import gen
from .send import send_sequence
from .target import ANSWER_S, VDEV, QP, Target

SHOWN = 3  # sequences printed in full on a failure (the record has them all)


def planned(args):
    """(seed, index, messages) in the order they are sent."""
    if args.replay:
        with open(args.replay) as f:
            rec = json.load(f)
        for s in rec["sequences"]:
            if args.only is None or s["index"] == args.only:
                yield s["seed"], s["index"], s["messages"]
        return
    if args.only is not None:
        for seed in args.seed:
            yield seed, args.only, gen.sequence(seed, args.only, QP)
        return
    end = time.monotonic() + args.seconds if args.seconds else None
    for seed in args.seed:
        index = 0
        while (end is None and index < args.sequences) or (end is not None and time.monotonic() < end):
            yield seed, index, gen.sequence(seed, index, QP)
            index += 1


def write_record(path, sent):
    with open(path, "w") as f:
        json.dump({"vdev": VDEV, "sequences": sent}, f, indent=1)


def report(args, sent, err, record):
    """What a developer needs to send the same again."""
    last = sent[-1] if sent else None
    where = f"seed {last['seed']} sequence {last['index']}" if last else "start"
    print(f"fuzz vhost_seq: FAILED at {where} (after {len(sent)} sequences): {err}")
    for s in sent[-SHOWN:]:
        print(f"--- seed {s['seed']} sequence {s['index']} ({len(s['messages'])} messages):")
        for m in s["messages"]:
            print("  " + gen.describe(m))
    print(f"record of the {len(sent)} sequences sent to this host: {record}")
    tool = os.path.relpath(sys.argv[0])
    print(f"replay it:      {tool} --app {args.app} --replay {record}")
    if last and args.only is None and not args.replay:
        print(f"the same run:   {tool} --app {args.app} --seed {last['seed']} --sequences {last['index'] + 1}")
    if last:
        print(f"that one alone: {tool} --app {args.app} --seed {last['seed']} --only {last['index']}")


def fuzz(args, wd, target):
    """Sends every planned sequence, checking the host after each; returns
    the sequences sent (also on failure, in the exception's `sent`)."""
    sent = []
    try:
        for seed, index, messages in planned(args):
            sent.append({"seed": seed, "index": index, "messages": messages})
            since = target.host.mark()
            send_sequence(target.sock, messages, wd.path, ANSWER_S)
            target.check(since, gen.vring_fds(messages))
        if not args.no_frontend:
            target.serve_frontend()
            target.check()
        target.stop()
    except (AssertionError, OSError) as e:
        e.sent = sent
        raise
    return sent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--app", required=True, help="vdpa-testpmd")
    ap.add_argument("--seed", type=int, action="append", help="one run of sequences per seed (default: from the clock)")
    ap.add_argument("--sequences", type=int, default=100, help="per seed (default 100)")
    ap.add_argument("--seconds", type=float, help="run for this long instead (one seed)")
    ap.add_argument("--only", type=int, help="only the sequence of this index")
    ap.add_argument("--replay", help="send the sequences of a record")
    ap.add_argument("--record", help="where a failure's record goes (default: the kept work folder)")
    ap.add_argument("--no-frontend", action="store_true", help="skip the final correct frontend")
    args = ap.parse_args(argv)
    args.seed = args.seed or [int(time.time() * 1000) & 0xffffffff]
    if "MLX5ASYNC_EMU_LIB" not in os.environ:
        ap.error("MLX5ASYNC_EMU_LIB must name the emulator plugin (./run and meson test set it)")
    start = time.monotonic()
    wd = Workdir("mlx5a-fuzzseq-")
    target = None
    try:
        target = Target(args.app, wd)
        sent = fuzz(args, wd, target)
    except (AssertionError, OSError) as e:
        if target:
            target.kill()
        record = args.record or wd.file("record.json")
        write_record(record, getattr(e, "sent", []))
        report(args, getattr(e, "sent", []), e, record)
        print(f"host log: {wd.file('host.log')}")
        wd.print_log_tails(40)
        return 1
    finally:
        if target:
            target.kill()
    wd.close()
    msgs = sum(len(s["messages"]) for s in sent)
    seeds = ",".join(str(s) for s in args.seed) if not args.replay else f"record {args.replay}"
    print(f"fuzz vhost_seq: ok, {len(sent)} sequences ({msgs} messages, {len(sent) + target.probes + (0 if args.no_frontend else 1)} "
          f"vhost-user connections) in {time.monotonic() - start:.0f}s, seed {seeds}; a correct frontend "
          f"{'not tried' if args.no_frontend else 'served after'}")
    if target.vhost_kept:
        print(f"fuzz vhost_seq: DPDK 22.11's vhost kept {len(target.vhost_kept)} fds of ring requests whose "
              f"index it refused before any driver hook ('failed to alloc queue'; doc/open-questions.md)")
    return 0
