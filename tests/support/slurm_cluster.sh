#!/usr/bin/env bash
# slurm_cluster.sh - test fixture: a private, single-node Slurm cluster in a directory.
#
# Usage:
#   eval "$(tests/support/slurm_cluster.sh start DIR)"   # prints: export SLURM_CONF=DIR/slurm.conf
#   ...sbatch / squeue / scancel against that cluster...
#   tests/support/slurm_cluster.sh stop DIR
#
# `start DIR` creates DIR if needed and runs, as root, everything from inside it:
#   munged     key DIR/munge.key, socket DIR/munge.socket, pid/log/seed files in DIR
#   slurmctld  config DIR/slurm.conf, state in DIR/state, log DIR/log/slurmctld.log
#   slurmd     NodeName=localhost, spool in DIR/spool, log DIR/log/slurmd.log
# The controller and slurmd listen on two private ports picked at start, so two
# clusters in two directories can run side by side. Nothing under /etc/slurm, /etc/munge
# or /run/munge is read or written (PlugStackConfig points into DIR too). Diagnostics go
# to stderr; the only line on stdout is the `export SLURM_CONF=...` line to eval.
# It waits (bounded) until `sinfo` shows the node idle. On failure it prints the tails
# of the logs to stderr, tears down what it started and exits 1.
#
# `stop DIR` ends what `start DIR` started: slurmd, slurmctld (and its slurmscriptd),
# every slurmstepd and job process of this cluster (found by SLURM_CONF=DIR/slurm.conf
# plus SLURM_JOB_ID in /proc/PID/environ, and as descendants of the daemons), and munged.
# It waits for them to exit (TERM, then KILL after a grace period). It is idempotent and
# also cleans up after a failed start. Logs and state stay in DIR for post-mortems; the
# caller removes DIR.
#
# Exit codes: 0 ok, 1 failure, 2 usage error, 77 skip (Slurm/munge not installed, not root).
#
# Environment knobs (all optional):
#   SLURM_FIXTURE_CPUS          CPUs of the node             (default: nproc)
#   SLURM_FIXTURE_MEM_MB        RealMemory of the node in MB (default: 90% of MemTotal)
#   SLURM_FIXTURE_TIMEOUT       seconds to wait for each daemon/the idle node (default: 30)
#   SLURM_FIXTURE_EXTRA_CONF    extra slurm.conf lines appended verbatim, e.g. "MinJobAge=30"
#                               (a key given twice: the later line wins)
#
# Installing the software (Debian 12):
#   DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
# The packages' postinst scripts do not start daemons here (policy-rc.d denies it, and
# there is no systemd); if system daemons do run, they do not conflict with this fixture
# (other ports, other socket, other state).

set -euo pipefail

readonly PROG=${0##*/}
readonly NODE=localhost
TIMEOUT=${SLURM_FIXTURE_TIMEOUT:-30}

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    echo "usage: $PROG start DIR | stop DIR" >&2
    exit 2
}

# ---------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------

# alive PID: true if PID exists and is not a zombie. (Daemons are re-parented to PID 1;
# on some machines it reaps late, so a killed daemon may linger as a zombie for a while.)
alive() {
    local pid=$1 stat
    [[ -r /proc/$pid/stat ]] || return 1
    { stat=$(<"/proc/$pid/stat"); } 2>/dev/null || return 1
    stat=${stat##*) }           # field 3 onwards; comm (field 2) may contain spaces
    [[ ${stat%% *} != Z ]]
}

# ppid_of PID: the parent pid of PID (field 4 of /proc/PID/stat).
ppid_of() {
    local stat
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    stat=${stat##*) }
    read -r _ stat _ <<<"$stat"
    echo "$stat"
}

# cmdline_has PID STRING: true if PID's command line contains STRING (guards against
# acting on a recycled pid from a stale pid file).
cmdline_has() {
    local pid=$1 needle=$2 cmd
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmd == *"$needle"* ]]
}

# pid_from_file FILE NEEDLE: print the pid in FILE if that process is alive and its
# command line contains NEEDLE.
pid_from_file() {
    local file=$1 needle=$2 pid
    [[ -s $file ]] || return 0
    pid=$(tr -dc '0-9' <"$file")
    [[ -n $pid ]] && alive "$pid" && cmdline_has "$pid" "$needle" && echo "$pid"
    return 0
}

# cluster_pids CONF: pids of slurmctld, slurmscriptd, slurmd, slurmstepd and job processes
# of the cluster whose config is CONF, found by SLURM_CONF=CONF in their environment
# (the daemons are started with it, slurmstepd inherits it from slurmd and jobs get it
# from sbatch/slurmd). A process other than a daemon or slurmstepd must also have
# SLURM_JOB_ID, so a shell or test that merely exported SLURM_CONF is never hit.
# This script and its ancestors are excluded.
cluster_pids() {
    local conf=$1 pid comm envf
    local -A skip=()
    pid=$$
    while [[ -n $pid && $pid != 0 && $pid != 1 ]]; do
        skip[$pid]=1
        pid=$(ppid_of "$pid") || break
    done
    # One grep over all environments (grep -z: environ is NUL-separated; processes
    # that vanish or cannot be read are silently skipped).
    local -a envs=()
    mapfile -t envs < <(grep -lzx -- "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null || true)
    for envf in "${envs[@]}"; do
        pid=${envf#/proc/}; pid=${pid%/environ}
        [[ -z ${skip[$pid]:-} && $pid != "$BASHPID" ]] || continue
        alive "$pid" || continue
        { comm=$(<"/proc/$pid/comm"); } 2>/dev/null || continue
        case $comm in
            slurmctld|slurmd|slurmstepd|slurmscriptd) echo "$pid" ;;
            *) grep -qz '^SLURM_JOB_ID=' "$envf" 2>/dev/null && echo "$pid" ;;
        esac
    done
    return 0
}

# descendants PID...: all live descendants of the given pids (not the pids themselves).
descendants() {
    local -a queue=("$@")
    local pid child
    while ((${#queue[@]})); do
        pid=${queue[0]}; queue=("${queue[@]:1}")
        for child in $(pgrep -P "$pid" 2>/dev/null || true); do
            alive "$child" || continue
            echo "$child"
            queue+=("$child")
        done
    done
}

# wait_gone SECONDS PID...: wait until none of the pids is alive; false on timeout.
wait_gone() {
    local secs=$1 pid left; shift
    local deadline=$((SECONDS + secs))
    while :; do
        left=0
        for pid in "$@"; do alive "$pid" && left=1 && break; done
        ((left)) || return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

# terminate GRACE PID...: SIGTERM, wait up to GRACE s, then SIGKILL and wait again.
terminate() {
    local grace=$1; shift
    (($#)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    wait_gone "$grace" "$@" && return 0
    log "still running after ${grace}s, sending SIGKILL: $*"
    kill -KILL "$@" 2>/dev/null || true
    wait_gone 10 "$@" || { log "could not kill: $*"; return 1; }
}

# ---------------------------------------------------------------------------
# start
# ---------------------------------------------------------------------------

# port_free PORT: true if nothing listens on TCP PORT (any address).
port_free() {
    local port=$1
    if command -v ss >/dev/null 2>&1; then
        [[ -z $(ss -Htln "sport = :$port" 2>/dev/null) ]]
    else
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 1; fi
    fi
}

# pick_ports: print two free consecutive ports P P+1 for slurmctld and slurmd. They are
# drawn at random from 10000-32000, below Linux's default ephemeral range (32768-60999)
# so outgoing connections never sit on them, which makes a clash between two fixtures
# started at the same moment unlikely; start() retries with new ports if a bind fails.
pick_ports() {
    local i port
    for ((i = 0; i < 200; i++)); do
        port=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))
        port_free "$port" && port_free "$((port + 1))" && { echo "$port $((port + 1))"; return 0; }
    done
    die "no free TCP port pair found"
}

# dump_logs: the tails of every log of the cluster, to stderr.
dump_logs() {
    local f
    for f in "$DIR"/munged.log "$DIR"/log/*.log "$DIR"/log/*.out; do
        [[ -s $f ]] || continue
        echo "----- tail of $f -----" >&2
        tail -n 25 "$f" >&2
    done
    echo "----- end of logs -----" >&2
}

# fail MESSAGE: report, dump logs, tear down, exit 1.
fail() {
    log "error: $*"
    dump_logs
    log "tearing down the partial cluster in $DIR"
    do_stop >&2 || true
    exit 1
}

write_slurm_conf() {
    local ctld_port=$1 slurmd_port=$2 cpus mem_mb
    cpus=${SLURM_FIXTURE_CPUS:-$(nproc)}
    if [[ -n ${SLURM_FIXTURE_MEM_MB:-} ]]; then
        mem_mb=$SLURM_FIXTURE_MEM_MB
    else
        # RealMemory must not exceed what slurmd measures (MemTotal), or the node is
        # drained as "Low RealMemory": keep a 10% margin.
        mem_mb=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    fi
    # Empty plugin stack: do not read the system's /etc/slurm/plugstack.conf.
    : >"$DIR/plugstack.conf"
    # mpi.conf is read from slurm.conf's directory. `srun --mpi=pmix` puts each step's
    # client directory in PMIxCliTmpDirBase, by default /tmp/spmix_appdir_UID_JOB.STEP:
    # two clusters (whose job ids both start at 1) would collide there.
    mkdir -p "$DIR/pmix"
    echo "PMIxCliTmpDirBase=$DIR/pmix" >"$DIR/mpi.conf"
    cat >"$DIR/slurm.conf.tmp" <<EOF
# Generated by $PROG for a private single-node test cluster. Do not edit: rewritten at start.
ClusterName=fixture
SlurmctldHost=$NODE
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port

# Authentication through our own munged (not /run/munge).
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.socket
CredType=cred/munge

# Everything runs as root, everything lives under DIR.
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
PlugStackConfig=$DIR/plugstack.conf
MailProg=/bin/true

# No cgroups, no systemd, no accounting database.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none

# CPUs and memory are consumable resources, so --cpus-per-task and --mem are honoured.
# Without DefMemPerCPU a job that gives no --mem is allocated the whole node's memory
# and such jobs then run one at a time; give each CPU its share instead.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$((mem_mb / cpus))

# A node that comes back after being DOWN returns to service by itself; a downed node is
# noticed within about SlurmdTimeout seconds; batch jobs may be requeued.
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=5
JobRequeue=1

NodeName=$NODE CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    if [[ -n ${SLURM_FIXTURE_EXTRA_CONF:-} ]]; then
        printf '\n# From SLURM_FIXTURE_EXTRA_CONF\n%s\n' "$SLURM_FIXTURE_EXTRA_CONF" >>"$DIR/slurm.conf.tmp"
    fi
    mv -f "$DIR/slurm.conf.tmp" "$DIR/slurm.conf"
}

start_munged() {
    # munged insists on: a key readable by its owner only, and a socket directory that
    # everyone can traverse (it refuses a 0700 directory such as `mktemp -d` makes).
    (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge.key")
    chown root:root "$DIR/munge.key"
    chmod 0400 "$DIR/munge.key"
    # munged daemonizes and its parent exits only once the daemon is ready (or failed).
    munged --key-file="$DIR/munge.key" \
        --socket="$DIR/munge.socket" \
        --pid-file="$DIR/munged.pid" \
        --log-file="$DIR/munged.log" \
        --seed-file="$DIR/munged.seed" \
        </dev/null >>"$DIR/log/munged.out" 2>&1 || fail "munged did not start"
    munge --socket="$DIR/munge.socket" -n 2>>"$DIR/log/munged.out" |
        unmunge --socket="$DIR/munge.socket" >/dev/null 2>>"$DIR/log/munged.out" ||
        fail "munged does not answer on $DIR/munge.socket"
}

# wait_for SECONDS WHAT PIDFILE COMMAND...: poll COMMAND every 0.2 s until it succeeds.
# Gives up at once if the daemon of PIDFILE has died (a fatal config error), else after
# SECONDS.
wait_for() {
    local secs=$1 what=$2 pidfile=$3; shift 3
    local start=$SECONDS deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        # The pid file appears when the daemon has forked; allow it 2 s to show up.
        if ((SECONDS - start >= 2)) && [[ -z $(pid_from_file "$pidfile" "$DIR/slurm.conf") ]]; then
            log "$what: the daemon of $pidfile is not running"
            return 1
        fi
        sleep 0.2
    done
    log "$what after $((SECONDS - start))s"
}

ctld_up() {
    [[ -n $(pid_from_file "$DIR/slurmctld.pid" "$DIR/slurm.conf") ]] &&
        scontrol ping 2>/dev/null | grep -q 'is UP'
}
node_idle() {
    [[ -n $(pid_from_file "$DIR/slurmd.pid" "$DIR/slurm.conf") ]] &&
        [[ $(sinfo -h -N -n "$NODE" -o %T 2>/dev/null) == idle ]]
}
bind_failed() { grep -qsE 'Address already in use|Unable to bind' "$@"; }

do_start() {
    local tool attempt ports
    for tool in munged munge unmunge slurmctld slurmd sinfo scontrol squeue; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            log "skip: '$tool' not found; install with: apt-get install --no-install-recommends slurm-wlm munge"
            exit 77
        fi
    done
    if ((EUID != 0)); then
        log "skip: this fixture runs slurmd/slurmctld/munged as root and must be started as root"
        exit 77
    fi
    # Paths end up in slurm.conf (no quoting there) and in AF_UNIX socket names
    # (at most 107 bytes, and slurmd puts "DIR/spool/localhost_JOBID.STEP" sockets there).
    [[ $DIR =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "DIR must be a path without spaces or special characters: $DIR"
    ((${#DIR} <= 64)) || die "DIR path is too long for Unix socket names (max 64 chars): $DIR"

    # Refuse to start over a live cluster; clear what a previous run left behind.
    if [[ -n $(pid_from_file "$DIR/munged.pid" "$DIR/munge.socket")$(cluster_pids "$DIR/slurm.conf") ]]; then
        die "a cluster is already running in $DIR (run: $PROG stop $DIR)"
    fi
    rm -rf "$DIR/state" "$DIR/spool" "$DIR/log"
    rm -f "$DIR"/{munged,slurmctld,slurmd}.pid "$DIR"/munge.socket "$DIR"/munge.socket.lock \
        "$DIR"/munge.key "$DIR"/munged.log "$DIR"/munged.seed
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    chmod 0755 "$DIR"

    start_munged

    export SLURM_CONF="$DIR/slurm.conf"
    for attempt in 1 2 3; do
        ports=$(pick_ports)
        # shellcheck disable=SC2086
        write_slurm_conf $ports
        # Daemon mode (no -D): the daemons detach, write their pid files and log to
        # DIR/log; stdio goes to DIR/log/*.out so `$(... start DIR)` does not hang.
        slurmctld -f "$SLURM_CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 ||
            fail "slurmctld exited with status $?"
        if wait_for "$TIMEOUT" "slurmctld up on port ${ports% *}" "$DIR/slurmctld.pid" ctld_up; then
            break
        fi
        if bind_failed "$DIR/log/slurmctld.log" && ((attempt < 3)); then
            log "port ${ports% *} taken, retrying with other ports"
            local -a stale=()
            mapfile -t stale < <(cluster_pids "$SLURM_CONF")
            terminate 5 "${stale[@]}" || true
            rm -f "$DIR/log/slurmctld.log"
            continue
        fi
        fail "slurmctld is not up (no answer to 'scontrol ping' within ${TIMEOUT}s, or it died)"
    done

    # -N: the node name is "localhost", not this machine's hostname.
    slurmd -f "$SLURM_CONF" -N "$NODE" </dev/null >>"$DIR/log/slurmd.out" 2>&1 ||
        fail "slurmd exited with status $?"
    wait_for "$TIMEOUT" "node $NODE idle" "$DIR/slurmd.pid" node_idle ||
        fail "node $NODE not idle within ${TIMEOUT}s (sinfo: $(sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ' '))"

    echo "export SLURM_CONF=$DIR/slurm.conf"
}

# ---------------------------------------------------------------------------
# stop
# ---------------------------------------------------------------------------

do_stop() {
    local conf="$DIR/slurm.conf" pid
    local -a daemons=() others=() munged=()
    local -A seen=()

    # The daemons: from their pid files, and by environment in case a pid file is
    # missing (e.g. a start that failed half-way).
    for pid in $(pid_from_file "$DIR/slurmd.pid" "$conf") \
        $(pid_from_file "$DIR/slurmctld.pid" "$conf") $(cluster_pids "$conf"); do
        [[ -z ${seen[$pid]:-} ]] || continue
        seen[$pid]=1
        case $(cat "/proc/$pid/comm" 2>/dev/null) in
            slurmctld|slurmd) daemons+=("$pid") ;;
            *) others+=("$pid") ;;
        esac
    done
    # slurmstepd, job processes and slurmscriptd below the daemons, and whatever the
    # job processes spawned (even with a cleaned environment).
    for pid in $(descendants "${daemons[@]}" "${others[@]}"); do
        [[ -z ${seen[$pid]:-} ]] || continue
        seen[$pid]=1
        others+=("$pid")
    done

    # Daemons first, with SIGTERM: slurmctld saves its state, slurmd leaves running jobs
    # alone, and both exit within a fraction of a second. Killing slurmscriptd or step
    # daemons while they shut down made them hang instead (seen with 22.05.8), so jobs
    # and step daemons are killed only afterwards, with SIGKILL: they are test jobs and
    # there is nothing to save. (slurmscriptd exits with slurmctld.)
    terminate 15 "${daemons[@]}" || true
    if ((${#others[@]})); then
        kill -KILL "${others[@]}" 2>/dev/null || true
        wait_gone 10 "${others[@]}" || log "job processes still alive: ${others[*]}"
    fi

    # Anything that appeared meanwhile (a step being launched as we killed slurmd).
    mapfile -t others < <(cluster_pids "$conf")
    if ((${#others[@]})); then
        log "killing late processes: ${others[*]}"
        kill -KILL "${others[@]}" 2>/dev/null || true
        wait_gone 10 "${others[@]}" || true
    fi

    # munged last: slurmctld and slurmd need it until they are gone.
    mapfile -t munged < <(pid_from_file "$DIR/munged.pid" "$DIR/munge.socket")
    if ((${#munged[@]})); then
        terminate 10 "${munged[@]}" || true
    fi

    # Verify, then forget the pid files.
    local -a left=()
    mapfile -t left < <(cluster_pids "$conf"; pid_from_file "$DIR/munged.pid" "$DIR/munge.socket")
    if ((${#left[@]})); then
        log "error: processes of $DIR still running: ${left[*]}"
        return 1
    fi
    rm -f "$DIR"/{munged,slurmctld,slurmd}.pid "$DIR/munge.socket" "$DIR/munge.socket.lock"
    return 0
}

# ---------------------------------------------------------------------------

(($# == 2)) || usage
CMD=$1
DIR=$2
[[ -n $DIR ]] || usage
case $CMD in
    start)
        mkdir -p -- "$DIR"
        DIR=$(cd -- "$DIR" && pwd -P)
        do_start
        ;;
    stop)
        if [[ ! -d $DIR ]]; then
            exit 0 # nothing was ever started there
        fi
        DIR=$(cd -- "$DIR" && pwd -P)
        do_stop
        ;;
    *) usage ;;
esac
