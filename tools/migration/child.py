"""A child process of a migration run: its own session (so that a kill
takes its threads and children), its output in a log file."""
import os
import signal
import subprocess


class Child:
    def __init__(self, argv, log_path, what):
        self.what = what
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                  stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self):
        return self.p.poll() is None

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status; SIGKILL and an error after `timeout`."""
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.what} did not exit within {timeout}s of SIGTERM")
        self._log.close()
        return rc

    def kill(self):
        if self.alive():
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.p.wait(10)
        if not self._log.closed:
            self._log.close()
