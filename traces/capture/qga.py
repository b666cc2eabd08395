#!/usr/bin/python3
"""Drives the capture guest from the host through qemu-guest-agent (QGA).

Reading guest files with guest-file-read on /proc or /run causes no disk I/O in
the guest, so the waits below do not add I/O to a trace; guest-exec does (the
programs it starts), so capture scripts run their preparation first and keep
the traced command to the workload itself.

Usage: qga.py SOCKET COMMAND [ARGS]
  ping [TIMEOUT_S]           wait until the agent answers (boot)
  wait-file PATH [TIMEOUT_S] wait until PATH exists in the guest
  exec CMD                   run `sh -c CMD` in the guest as root, print its
                             output, exit with its status
  put LOCAL REMOTE           copy a host file into the guest (e.g. into /run)
  settle LOOPDEV [QUIET_S] [TIMEOUT_S] [CPU_MAX]
                             wait until the guest's dirty and writeback pages
                             are written (at the kernel's own pace: nothing is
                             forced), its CPUs are idle (busy share at most
                             CPU_MAX, default 0.15), and the traced host
                             device has had no I/O for QUIET_S seconds
"""
import base64
import json
import os
import socket
import sys
import time


class Agent:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.buf = b""
        try:
            self.sock.connect(path)
            self.sync()
        except BaseException:
            # qemu's agent socket serves one connection at a time: one left
            # open after a timeout would keep every later connection waiting.
            self.sock.close()
            raise

    def _line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("guest agent closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def sync(self):
        token = int(time.time() * 1000) % 2147483647
        # The delimited sync makes the agent emit 0xff, so a half-read earlier
        # answer is discarded.
        self.sock.sendall(json.dumps({"execute": "guest-sync-delimited",
                                      "arguments": {"id": token}}).encode())
        while True:
            line = self._line().lstrip(b"\xff")
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("return") == token:
                return

    def call(self, cmd, **args):
        req = {"execute": cmd}
        if args:
            req["arguments"] = args
        self.sock.sendall(json.dumps(req).encode())
        while True:
            line = self._line().lstrip(b"\xff").strip()
            if not line:
                continue
            msg = json.loads(line)
            if "error" in msg:
                raise RuntimeError("%s: %s" % (cmd, msg["error"].get("desc")))
            if "return" in msg:
                return msg["return"]

    def read_file(self, path):
        h = self.call("guest-file-open", path=path, mode="r")
        data = b""
        try:
            while True:
                r = self.call("guest-file-read", handle=h, count=65536)
                data += base64.b64decode(r.get("buf-b64", ""))
                if r.get("eof") or not r.get("count"):
                    break
        finally:
            self.call("guest-file-close", handle=h)
        return data

    def exists(self, path):
        try:
            h = self.call("guest-file-open", path=path, mode="r")
        except RuntimeError:
            return False
        self.call("guest-file-close", handle=h)
        return True

    def write_file(self, path, data):
        h = self.call("guest-file-open", path=path, mode="w")
        try:
            for i in range(0, len(data), 48 * 1024):
                self.call("guest-file-write", handle=h,
                          **{"buf-b64": base64.b64encode(data[i:i + 48 * 1024]).decode()})
        finally:
            self.call("guest-file-close", handle=h)

    def exec(self, cmd, timeout=None):
        pid = self.call("guest-exec", path="/bin/sh", arg=["-c", cmd],
                        **{"capture-output": True})["pid"]
        start = time.time()
        while True:
            st = self.call("guest-exec-status", pid=pid)
            if st.get("exited"):
                out = base64.b64decode(st.get("out-data", ""))
                err = base64.b64decode(st.get("err-data", ""))
                return st.get("exitcode", -1), out, err
            if timeout and time.time() - start > timeout:
                raise TimeoutError("guest command still running after %d s: %s" % (timeout, cmd))
            time.sleep(0.2)


def connect_retry(path, timeout):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            agent = Agent(path, timeout=5.0)
            # under a slow (TCG) guest the agent can take long to answer
            agent.sock.settimeout(120.0)
            return agent
        except (OSError, ConnectionError, socket.timeout, ValueError) as e:
            last = e
            time.sleep(1)
    raise TimeoutError("guest agent not answering on %s after %d s (%s)" % (path, timeout, last))


def meminfo(agent):
    out = {}
    for line in agent.read_file("/proc/meminfo").decode().splitlines():
        k, v = line.split(":", 1)
        out[k] = int(v.split()[0])
    return out


def cpu_busy(agent):
    f = agent.read_file("/proc/stat").decode().splitlines()[0].split()[1:]
    vals = [int(x) for x in f]
    idle = vals[3] + vals[4]
    return sum(vals), idle


def host_ios(loopdev):
    name = os.path.basename(os.path.realpath(loopdev))
    with open("/sys/block/%s/stat" % name) as fh:
        f = fh.read().split()
    # reads and writes completed, in flight, discards and flushes completed
    return tuple(f[i] for i in (0, 4, 8, 11, 15) if i < len(f))


def settle(agent, loopdev, quiet_s, timeout, cpu_max=0.15):
    """Returns when dirty+writeback pages are under 1 MiB, the guest's CPUs
    were under cpu_max busy over the last second (a game's menu renders all
    the time: its scripts pass 1), and the host device has been quiet for
    quiet_s seconds."""
    deadline = time.time() + timeout
    last_ios = host_ios(loopdev)
    quiet_since = time.time()
    prev = cpu_busy(agent)
    while time.time() < deadline:
        time.sleep(1.0)
        cur = cpu_busy(agent)
        total, idle = cur[0] - prev[0], cur[1] - prev[1]
        prev = cur
        busy = 1.0 - idle / total if total > 0 else 0.0
        ios = host_ios(loopdev)
        if ios != last_ios:
            last_ios = ios
            quiet_since = time.time()
        m = meminfo(agent)
        dirty_kb = m.get("Dirty", 0) + m.get("Writeback", 0)
        if dirty_kb < 1024 and busy <= cpu_max and time.time() - quiet_since >= quiet_s:
            print("settled: dirty+writeback %d KiB, guest CPU %.0f %% busy, device quiet %.1f s"
                  % (dirty_kb, busy * 100, time.time() - quiet_since), file=sys.stderr)
            return
    raise TimeoutError("guest did not settle within %d s" % timeout)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sock, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "ping":
        connect_retry(sock, float(args[0]) if args else 300).call("guest-ping")
    elif cmd == "wait-file":
        timeout = float(args[1]) if len(args) > 1 else 300
        agent = connect_retry(sock, timeout)
        deadline = time.time() + timeout
        while not agent.exists(args[0]):
            if time.time() > deadline:
                sys.exit("qga.py: %s did not appear in %d s" % (args[0], timeout))
            time.sleep(0.5)
    elif cmd == "exec":
        code, out, err = connect_retry(sock, 60).exec(args[0])
        sys.stdout.buffer.write(out)
        sys.stderr.buffer.write(err)
        sys.exit(code)
    elif cmd == "put":
        with open(args[0], "rb") as fh:
            connect_retry(sock, 60).write_file(args[1], fh.read())
    elif cmd == "settle":
        quiet = float(args[1]) if len(args) > 1 else 3.0
        timeout = float(args[2]) if len(args) > 2 else 600
        cpu_max = float(args[3]) if len(args) > 3 else 0.15
        settle(connect_retry(sock, 60), args[0], quiet, timeout, cpu_max)
    else:
        sys.exit("qga.py: unknown command %s" % cmd)


if __name__ == "__main__":
    main()
