// CPU time of a served Worker, from /proc: all the processes of its server's process group
// (wrangler's Node process or the bench's runner, esbuild, the workerd that runs the
// Worker and, under wrangler, its proxy's workerd), and the part of the workerd that runs
// the Worker.
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * CPU milliseconds of a process group: all of it, and the part the workerd that runs the
 * Worker spent, without the Node process around it and, under `wrangler dev`, the workerd
 * of its proxy, which relay requests and console lines.
 */
export interface GroupCpu {
  total: number;
  workerd: number;
}

/**
 * Whether a process is the workerd that runs the Worker: the one listening on `port` when
 * the Worker is answered there directly, else (under `wrangler dev`, where the port is
 * its proxy's) the one wrangler opens its inspector on.
 */
function runsTheWorker(pid: string, workerPid: number | undefined): boolean {
  if (workerPid !== undefined) return Number(pid) === workerPid;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--inspector-addr");
  } catch {
    return false;
  }
}

/** The live processes of a process group, with their /proc stat fields after the command name. */
function groupProcesses(group: number): { pid: string; command: string; fields: string[] }[] {
  const out: { pid: string; command: string; fields: string[] }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // The fields after the command name (which may hold spaces): state, ppid, pgrp, …, utime (11), stime (12).
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    if (Number(fields[2]) !== group) continue;
    out.push({ pid: entry, command: stat.slice(stat.indexOf("(") + 1, close), fields });
  }
  return out;
}

/**
 * The process of `group` that listens on the loopback TCP `port`, found through the
 * socket's inode in /proc/net/tcp and the processes' descriptors; undefined when none does.
 */
export function pidListeningOn(port: number, group: number): number | undefined {
  if (!existsSync("/proc/net/tcp")) return undefined;
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/);
    // local_address is cols[1] (ADDR:PORT in hex), st is cols[3] (0A = LISTEN), inode is cols[9].
    if (cols[1]?.endsWith(`:${hexPort}`) && cols[3] === "0A" && cols[9]) inodes.add(`socket:[${cols[9]}]`);
  }
  if (!inodes.size) return undefined;
  for (const { pid } of groupProcesses(group)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`))) return Number(pid);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * CPU milliseconds (user and system) spent so far by the live processes of a process
 * group, from /proc; undefined where there is no /proc. A process that exits meanwhile
 * takes its time with it, so compare two readings only across a steady server.
 */
export function cpuMsOfGroup(group: number, workerPid?: number): GroupCpu | undefined {
  if (!existsSync("/proc/self/stat")) return undefined;
  let ticks = 0;
  let workerd = 0;
  for (const { pid, command, fields } of groupProcesses(group)) {
    const used = Number(fields[11]) + Number(fields[12]);
    ticks += used;
    if (command.startsWith("workerd") && runsTheWorker(pid, workerPid)) workerd += used;
  }
  return { total: (ticks * 1000) / TICKS_PER_SECOND, workerd: (workerd * 1000) / TICKS_PER_SECOND };
}
