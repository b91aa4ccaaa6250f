#!/usr/bin/python3
"""Two "hosts" made from network namespaces on this machine, joined by a veth pair with private
addresses: a 2-rank job launched by mpirun from the first, its second rank started in the other
namespace through mpirun's launch agent (`plm_rsh_agent`, here `ip netns exec` instead of ssh),
the ranks talking over TCP only (docs/distributed.md#real-hosts). The result must be
bit-identical to the same job's 2 ranks on one host over shared memory.

Then the same through the daemon: `trainingd serve` in the first namespace with a hostfile of the
two hosts and the launch agent in its config (`mpi.hostfile`, `mpi.mpirun_options`); a 2-worker
job submitted over HTTP completes with its second rank started in the other namespace, and ends
bit-identical too.

Needs root (ip netns, ip link); without it the test exits 77, which CTest reports as skipped.
Traffic goes only to the namespaces the test creates, which it deletes afterwards.

    multihost_test.py TRAININGD CHECKPOINT_COMPARE
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import Daemon  # noqa: E402

TRAININGD, COMPARE = sys.argv[1], sys.argv[2]
TAG = "td%d" % (os.getpid() % 100000)
NS = [TAG + "a", TAG + "b"]
NET = "10.201.%d" % (os.getpid() % 250)
ADDR = [NET + ".1", NET + ".2"]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def make_hosts():
    sh("ip", "netns", "add", NS[0])
    sh("ip", "netns", "add", NS[1])
    sh("ip", "link", "add", TAG + "v0", "type", "veth", "peer", "name", TAG + "v1")
    for i in (0, 1):
        dev = TAG + "v%d" % i
        sh("ip", "link", "set", dev, "netns", NS[i])
        sh("ip", "-n", NS[i], "addr", "add", ADDR[i] + "/24", "dev", dev)
        sh("ip", "-n", NS[i], "link", "set", dev, "up")
        sh("ip", "-n", NS[i], "link", "set", "lo", "up")


def enter_netns(path):
    """Moves this thread (its new sockets and the processes it starts) into the network namespace
    at `path` (/run/netns/NAME, or /proc/self/ns/net to come back)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "setns " + path)
    finally:
        os.close(fd)


def daemon_on_two_hosts(work, agent, agent_log, one_dir):
    """trainingd serve in the first namespace, its mpi.hostfile naming both hosts."""
    hostfile = os.path.join(work, "hostfile")
    with open(hostfile, "w") as f:
        f.write("%s slots=1\n%s slots=1\n" % (ADDR[0], ADDR[1]))
    open(agent_log, "w").close()
    cfg = {"max_job_memory_bytes": -1,
           "mpi": {"hostfile": hostfile,
                   "mpirun_options": ["--mca", "plm_rsh_agent", agent,
                                      "--mca", "btl_tcp_if_include", NET + ".0/24",
                                      "--mca", "oob_tcp_if_include", NET + ".0/24"]}}
    root_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    enter_netns("/run/netns/" + NS[0])
    try:
        d = Daemon(TRAININGD, os.path.join(work, "daemon"), config=cfg)
        try:
            status, job = d.call("POST", "/api/v1/jobs", dict(SPEC, distributed={"workers": 2}))
            expect(status == 201, (status, job))
            job = d.wait_state(job["id"], ("completed", "failed", "stopped"), timeout=300)
            expect(job["state"] == "completed", job)
            ckpt = os.path.join(work, "daemon", "jobs", job["id"], "model.ckpt-10")
        finally:
            code, log = d.stop()
        expect(code == 0, "the daemon's exit: %d\n%s" % (code, log[-2000:]))
    finally:
        enter_netns("/proc/self/fd/%d" % root_ns)
        os.close(root_ns)
    with open(agent_log) as f:
        launched = f.read().split()
    expect(launched == [ADDR[1], NS[1]],
           "the daemon's second rank was not started through the agent: %r" % launched)
    c = subprocess.run([COMPARE, ckpt, os.path.join(one_dir, "model.ckpt-10")],
                       stdout=subprocess.PIPE, text=True)
    result = json.loads(c.stdout)
    expect(result["identical"], "the daemon's 2 hosts against 1 host: %s" % result)
    print("the daemon with mpi.hostfile: a 2-worker job over HTTP completed, rank 1 started "
          "through the launch agent in %s; bit-identical" % NS[1], flush=True)


SPEC = {"name": "cnn-hosts", "model": "cnn", "batch_size": 50, "max_steps": 10, "seed": 7,
        "dataset": {"name": "fashion-mnist", "validation_size": 1000,
                    "max_train_examples": 11000, "max_test_examples": 1000},
        "hooks": {"checkpoint": {"every_steps": 10}, "logging": {"every_n_iter": 5}}}


def remove_hosts():
    for ns in NS:
        try:
            sh("ip", "netns", "delete", ns, check=False)  # takes its end of the veth pair with it
        except OSError:
            pass


def main():
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(77)
    try:
        make_hosts()
    except subprocess.CalledProcessError as e:
        remove_hosts()
        print("SKIP: this machine does not allow network namespaces and veth pairs: %s" %
              e.stderr.strip())
        sys.exit(77)
    except OSError as e:  # no `ip` (iproute2)
        print("SKIP: cannot run ip: %s" % e)
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="trainingd-multihost-")
    try:
        agent_log = os.path.join(work, "agent.log")
        agent = os.path.join(work, "netns-agent.sh")
        with open(agent, "w") as f:
            f.write("#!/bin/sh\n"
                    "# mpirun's launch agent: $1 is the host, the rest the command for its shell.\n"
                    "host=$1; shift\n"
                    "case \"$host\" in\n"
                    "  %s) ns=%s ;;\n"
                    "  %s) ns=%s ;;\n"
                    "  *) echo \"unknown host $host\" >&2; exit 1 ;;\n"
                    "esac\n"
                    "echo \"$host $ns\" >> %s\n"
                    "exec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n" %
                    (ADDR[0], NS[0], ADDR[1], NS[1], agent_log))
        os.chmod(agent, 0o755)
        spec = os.path.join(work, "cnn.json")
        with open(spec, "w") as f:
            json.dump(SPEC, f)
        # Across the two hosts, TCP only, launched as Horovod users launch.
        hosts_dir = os.path.join(work, "hosts")
        p = subprocess.run(
            ["ip", "netns", "exec", NS[0], "mpirun", "--allow-run-as-root", "--oversubscribe",
             "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1",
             "--mca", "plm_rsh_agent", agent, "--mca", "btl", "self,tcp",
             "--mca", "btl_tcp_if_include", NET + ".0/24", "--mca", "oob_tcp_if_include",
             NET + ".0/24", "--host", "%s:1,%s:1" % (ADDR[0], ADDR[1]), "-np", "2",
             TRAININGD, "run", spec, "--threads", "1", "--checkpoint-dir", hosts_dir],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        expect(p.returncode == 0, "2 hosts: exit %d\n%s" % (p.returncode, p.stdout[-3000:]))
        expect("2 ranks" in p.stdout, p.stdout[-2000:])
        with open(agent_log) as f:
            launched = f.read().split()
        expect(launched == [ADDR[1], NS[1]],
               "the second host's rank was not started through the agent: %r" % launched)
        print("2 hosts (%s in %s, %s in %s): completed; rank 1 started through the launch agent" %
              (ADDR[0], NS[0], ADDR[1], NS[1]), flush=True)
        # The same job on one host, shared memory.
        one_dir = os.path.join(work, "one-host")
        p = subprocess.run([TRAININGD, "run", spec, "--workers", "2", "--threads", "1",
                            "--checkpoint-dir", one_dir], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        expect(p.returncode == 0, "1 host: exit %d\n%s" % (p.returncode, p.stdout[-3000:]))
        c = subprocess.run([COMPARE, os.path.join(hosts_dir, "model.ckpt-10"),
                            os.path.join(one_dir, "model.ckpt-10")], stdout=subprocess.PIPE,
                           text=True)
        result = json.loads(c.stdout)
        expect(result["identical"], "2 hosts over TCP against 1 host: %s" % result)
        print("bit-identical to 2 ranks on one host over shared memory", flush=True)
        daemon_on_two_hosts(work, agent, agent_log, one_dir)
        print("ok", flush=True)
    finally:
        remove_hosts()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
