"""Child processes of the harness, their output and their folders.

Every child runs in its own session (a kill takes its threads and whatever
it started) and writes stdout and stderr into one file, which never blocks
it and which the harness reads whenever it likes: request/answer protocols
consume lines in order (read_until), checks search what was written since a
mark (wait_line, wait_for)."""
import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile

from .wait import DEADLINE_S, until

_seq = itertools.count(1)


def unique(prefix):
    """A name no other child of any harness process uses at the same time
    (EAL --file-prefix, file names): prefix, this pid, a counter."""
    return f"{prefix}-{os.getpid()}-{next(_seq)}"


def fd_targets(pid):
    """Where each open fd of process `pid` points, by fd number (an fd
    closed meanwhile is skipped)."""
    d = f"/proc/{pid}/fd"
    out = {}
    for n in os.listdir(d):
        try:
            out[int(n)] = os.readlink(f"{d}/{n}")
        except FileNotFoundError:
            pass
    return out


def resources(pid):
    """What process `pid` holds: open fds, threads, resident memory (KiB),
    and its threads by name ({comm: count})."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    names = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:  # ended meanwhile
            continue
        names[name] = names.get(name, 0) + 1
    return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"]),
            "rss_kb": int(status["VmRSS"].split()[0]), "thread_names": names}


# The first line of a Linux kernel's report of its own fault.
_KERNEL_OOPS = re.compile(r"\] (BUG: |Oops|general protection fault|WARNING: CPU|Kernel panic|"
                          r"kernel BUG at|watchdog: BUG)")


class Workdir:
    """A private folder (0700) for sockets and logs. close() removes it; as a
    context manager it is removed when the block succeeded and kept, with
    the tail of every log printed, when it failed (for a CI machine whose
    folder nobody reads after)."""

    def __init__(self, prefix="mlx5a-"):
        self.path = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.path, 0o700)

    def file(self, name):
        return os.path.join(self.path, name)

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)

    def print_log_tails(self, lines=30):
        for name in sorted(os.listdir(self.path)):
            if name.endswith(".log"):
                with open(self.file(name), errors="replace") as f:
                    text = f.read().splitlines()
                oops = next((i for i, l in enumerate(text) if _KERNEL_OOPS.search(l)), None)
                if oops is not None and oops < len(text) - lines:
                    # A guest kernel's first oops: its trace scrolls out of the tail.
                    block = text[oops:oops + 60]
                    print(f"--- {name} (the guest kernel's first oops, {len(block)} lines)\n" + "\n".join(block))
                tail = text[-lines:]
                print(f"--- {name} (last {len(tail)} lines)\n" + "\n".join(tail))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            print(f"logs kept in {self.path}")
            self.print_log_tails()
        return False


class LogFile:
    """The complete lines of a file another process writes, read
    incrementally: a line still being written waits for the next look."""

    def __init__(self, path):
        self.path = path
        self._f = None
        self._partial = ""
        self._lines = []

    def lines(self):
        """Every complete line so far (the same list, grown; do not modify)."""
        if self._f is None:
            try:
                self._f = open(self.path, errors="replace")
            except FileNotFoundError:
                return self._lines
        chunk = self._f.read()
        if chunk:
            parts = (self._partial + chunk).split("\n")
            self._partial = parts.pop()
            self._lines.extend(parts)
        return self._lines

    def close(self):
        if self._f:
            self._f.close()
            self._f = None


class Proc:
    """A child process with its output in `log_path` (a temporary file when
    none is given, removed by kill()). With `stdin` it reads commands sent
    by send()."""

    def __init__(self, argv, name, log_path=None, env=None, stdin=False):
        self.name = name
        self.argv = argv
        self._own_log = log_path is None
        if self._own_log:
            fd, log_path = tempfile.mkstemp(prefix="mlx5a-" + re.sub(r"\W", "_", name) + "-", suffix=".log")
            os.close(fd)
        self.log_path = log_path
        self._out = open(log_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=self._out, stderr=subprocess.STDOUT, env=env, text=True,
                                  start_new_session=True)
        self.log = LogFile(log_path)
        self._cursor = 0  # read_until's position

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def output(self):
        """Every complete line the process wrote so far."""
        return self.log.lines()

    def mark(self):
        """Position in the output; later checks may read only what follows."""
        return len(self.output())

    def tail(self, lines=60):
        return "\n".join(self.output()[-lines:])

    def _state(self):
        rc = self.p.poll()
        return "running" if rc is None else f"exited {rc}"

    def _first(self, pred, since, what, timeout):
        """(index, line) of the first line from `since` for which pred holds,
        each line looked at once."""
        pos = since

        def scan():
            nonlocal pos
            lines = self.output()
            for i in range(pos, len(lines)):
                if pred(lines[i]):
                    return i, lines[i]
            pos = len(lines)
            return None
        return until(scan, lambda r: r is not None, timeout, f"{what} from {self.name}",
                     alive=self.alive, describe=lambda _: f"({self._state()}) output:\n{self.tail()}")

    def wait_line(self, pred, timeout, what="expected line", since=0):
        """The first line after position `since` for which pred holds."""
        return self._first(pred, since, what, timeout)[1]

    def read_until(self, pred, timeout, what="expected line"):
        """The next unread line for which pred holds (pred sees every line in
        order, once); the lines before it are read too."""
        i, line = self._first(pred, self._cursor, what, timeout)
        self._cursor = i + 1
        return line

    def wait_for(self, pattern, timeout=DEADLINE_S, count=1, since=0):
        """Waits until `count` lines after `since` match the regex `pattern`."""
        rx = re.compile(pattern)
        until(lambda: sum(1 for l in self.output()[since:] if rx.search(l)), lambda n: n >= count,
              timeout, f"{count} line(s) matching {pattern!r} from {self.name}", alive=self.alive,
              describe=lambda n: f"{n} ({self._state()}); output:\n{self.tail(80)}")

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def wait(self, timeout=DEADLINE_S):
        """The exit status; killed, and an AssertionError, after `timeout`."""
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: did not exit within {timeout}s; output:\n{self.tail()}")

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status; SIGKILL and an error after `timeout`."""
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not exit within {timeout}s of SIGTERM")

    def kill(self):
        """SIGKILL to its session (it and everything it started), reaped;
        a temporary output file is removed."""
        if self.alive():
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.p.wait(10)
        if self.p.stdin:
            try:
                self.p.stdin.close()
            except OSError:  # the pipe broke with the process
                pass
        if not self._out.closed:
            self._out.close()
        self.log.close()
        if self._own_log and os.path.exists(self.log_path):
            os.unlink(self.log_path)

